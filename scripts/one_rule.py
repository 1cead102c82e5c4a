"""Before/after measurement for issue 42's "each rule defined once" (evals/results/one-rule.md).

Writes a JSON snapshot of what the invisible-character rule and the contact pattern decide: the
documents loaded for the Python docs (small, full) and the help center (a digest of each text), the
rule's and the detector's flag for every passage, payload and ordinary sentence of the injection
suites (tests/data/injections*.jsonl and every round in evals/), the rule's flags over every sentence
of the corpora, and the contact points found in all of these. Run once on the code before a change
and once after, then compare the two files:

    python scripts/one_rule.py before.json          # on the old code
    python scripts/one_rule.py after.json           # on the new code
    python scripts/one_rule.py --compare before.json after.json
    python scripts/one_rule.py --probe --no-detector   # the invisible rule on suites with a character planted
    python scripts/one_rule.py --probe                 # the same, flagged by the detector (rule or learned layer)

The suites hold no character the two invisible rules disagreed on, so ``--probe`` plants one (after
every third letter, as tests/stages/test_injection.py plants soft hyphens) in every injected passage
and ordinary sentence and counts the rule's flags with the injection rule's old reading (every Cf
character dropped, nothing else) and with the one rule (``remove_invisible``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from raglab.base.config import PROJECT_ROOT
from raglab.base.files import read_jsonl

CORPORA = (("python-docs", "small"), ("python-docs", "full"), ("helpcenter", "small"))


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def suite_texts() -> dict[str, str]:
    """Every injection-suite text by a key: ``file:id:field``."""
    out = {}
    files = sorted((PROJECT_ROOT / "tests" / "data").glob("injections*.jsonl"))
    files += sorted(p for p in (PROJECT_ROOT / "evals").glob("injection*/*.jsonl"))
    for path in files:
        for n, row in enumerate(read_jsonl(path)):
            for field in ("text", "payload"):
                if field in row:
                    out[f"{path.parent.name}/{path.stem}:{row.get('id', n)}:{field}"] = row[field]
    return out


def snapshot(detector: bool) -> dict:
    from raglab.base.text import sentences
    from raglab.guards.contacts import contact_points
    from raglab.guards.injection import instruction_like, rule_text
    from raglab.infra.corpus import load_corpus

    out: dict = {"corpora": {}, "corpus_rule": {}, "suites": {}}
    for name, profile in CORPORA:
        docs = load_corpus(name, profile)
        out["corpora"][f"{name}/{profile}"] = {d.id: digest(f"{d.title}\0{d.text}") for d in docs}
        sents = [s for d in docs for s in sentences(d.text, limit=10**9)]
        out["corpus_rule"][f"{name}/{profile}"] = {
            "sentences": len(sents),
            "flagged": sorted(f"{instruction_like(s)}: {s[:80]}" for s in sents if instruction_like(s)),
            "contacts": sorted({p for d in docs for p in contact_points(d.text)}),
        }
    texts = suite_texts()
    flags = {}
    if detector:
        from raglab.guards.detector import InjectionDetector
        det = InjectionDetector()
        flags = dict(zip(texts, det.flags(list(texts.values()))))
    for key, text in texts.items():
        out["suites"][key] = {"rule": instruction_like(text), "normalized": digest(rule_text(text)),
                              "contacts": contact_points(text), **({"detector": flags[key]} if detector else {})}
    return out


def old_visible(text: str) -> str:
    """The injection rule's own reading before issue 42 (raglab/guards/injection.py ``_visible``)."""
    import html
    import unicodedata
    return html.unescape("".join(ch for ch in text if unicodedata.category(ch) != "Cf"))


PROBES = {"U+3164 HANGUL FILLER": "\u3164", "U+FE0F VARIATION SELECTOR-16": "\ufe0f",
          "U+034F COMBINING GRAPHEME JOINER": "\u034f", "U+200B ZERO WIDTH SPACE": "\u200b",
          "U+0600 ARABIC NUMBER SIGN (visible)": "\u0600", "U+002D HYPHEN-MINUS (visible)": "-"}


def probe(detector: bool) -> None:
    """Rule flags (and with ``detector``, the detector's: rule or learned layer, scores computed afresh,
    not read from the score cache, which is keyed by the code on disk) on the suites with each of
    ``PROBES`` planted, under the old reading and the one rule."""
    import re
    import raglab.guards.injection as inj
    det = None
    if detector:
        from raglab.guards.detector import InjectionDetector
        det = InjectionDetector()

    def flagged(planted: list[str]) -> int:
        rules = [inj.instruction_like(t) for t in planted]
        if det is None:
            return sum(map(bool, rules))
        rest = [t for t, r in zip(planted, rules) if not r]
        return sum(map(bool, rules)) + int((det._scores(rest) >= det.threshold).sum()) if rest else sum(map(bool, rules))
    texts = {k: t for k, t in suite_texts().items() if k.endswith(":text")}
    groups = {"injected (suite_*, injections*)": [k for k in texts if "ordinary_" not in k],
              "ordinary (ordinary_*)": [k for k in texts if "ordinary_" in k]}
    new_visible = inj._visible
    print(f"| planted character | texts | {'detector' if detector else 'rule'} flags, none planted | old reading | one rule |")
    print("| --- | --- | --- | --- | --- |")
    for group, keys in groups.items():
        plain = flagged([texts[k] for k in keys])
        for name, ch in PROBES.items():
            planted = [re.sub(r"(\w{3})(?=\w)", lambda m: m.group(1) + ch, texts[k]) for k in keys]
            counts = []
            for visible in (old_visible, new_visible):
                inj._visible = visible
                counts.append(flagged(planted))
            inj._visible = new_visible
            print(f"| {name} | {group}: {len(keys)} | {plain} | {counts[0]} | {counts[1]} |")


def compare(before: dict, after: dict) -> None:
    for corpus, docs in before["corpora"].items():
        new = after["corpora"][corpus]
        changed = [d for d in docs if new.get(d) != docs[d]]
        print(f"{corpus}: {len(docs)} docs before, {len(new)} after, {len(changed)} texts differ, "
              f"{len(set(new) - set(docs))} new ids")
    for corpus, b in before["corpus_rule"].items():
        a = after["corpus_rule"][corpus]
        print(f"{corpus}: rule flags {len(b['flagged'])} -> {len(a['flagged'])} of {b['sentences']} sentences; "
              f"contact points {len(b['contacts'])} -> {len(a['contacts'])}")
        for s in sorted(set(b["flagged"]) ^ set(a["flagged"])):
            print(f"   {'-' if s in b['flagged'] else '+'} {s}")
        for s in sorted(set(b["contacts"]) ^ set(a["contacts"])):
            print(f"   contact {'-' if s in b['contacts'] else '+'} {s}")
    keys = before["suites"]
    print(f"injection suites: {len(keys)} texts (passages, payloads, ordinary sentences)")
    for field in ("rule", "detector", "normalized", "contacts"):
        if field not in next(iter(keys.values())) or field not in next(iter(after["suites"].values())):
            continue
        diff = [k for k in keys if keys[k][field] != after["suites"][k][field]]
        count = lambda snap: sum(bool(v[field]) for k, v in snap["suites"].items() if field != "normalized")
        print(f"  {field}: {len(diff)} differ" + (f"; flagged/holding {count(before)} -> {count(after)}" if field != "normalized" else ""))
        for k in diff[:40]:
            print(f"    {k}: {keys[k][field]!r} -> {after['suites'][k][field]!r}")
    for part in ("suite_", "ordinary_", "injections"):
        for field in ("rule", "detector"):
            if field in next(iter(keys.values())) and field in next(iter(after["suites"].values())):
                sel = [k for k in keys if part in k and k.endswith(":text")]
                print(f"  {part}* texts, {field}: {sum(bool(keys[k][field]) for k in sel)} -> "
                      f"{sum(bool(after['suites'][k][field]) for k in sel)} flagged of {len(sel)}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--compare", nargs=2)
    ap.add_argument("--probe", action="store_true")
    ap.add_argument("--no-detector", action="store_true", help="the rule alone (no embedding model)")
    args = ap.parse_args()
    if args.probe:
        probe(not args.no_detector)
    elif args.compare:
        compare(*(json.loads(Path(p).read_text()) for p in args.compare))
    else:
        Path(args.out).write_text(json.dumps(snapshot(not args.no_detector), ensure_ascii=False, indent=0))
        print(f"wrote {args.out}", file=sys.stderr)
