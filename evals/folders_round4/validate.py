#!/usr/bin/env python3
"""Validate the round-4 unseen-folder sets and print the summary tables.

Checks per folder: 6-8 Markdown pages under pages/, each opening with YAML
front matter holding title:, 250-700 words of body; questions.jsonl has 18
lines, unique ids, 12 answerable + 6 unanswerable; every fact occurs in its
answer; every evidence quote occurs verbatim in the body (outside the front
matter) of the named page and spans no line break; unanswerable questions
have empty answer, facts and evidence; phones are +1 555 01xx and e-mails
@example.org.
Usage: python3 validate.py [--table]
"""
import json, re, sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
FOLDERS = [("parks_booking", "city parks & recreation department: facility and program booking help"),
           ("home_claims", "home-insurance company: claims help"),
           ("solar_coop", "community solar co-op: member guide")]
TYPES = ["fact", "paraphrase", "multi", "identifier", "unanswerable"]
KEYS = ["id", "type", "question", "answer", "facts", "evidence"]
errors = []
err = errors.append

def split_page(path):
    t = path.read_text(encoding="utf-8")
    m = re.match(r"---\n(.*?)\n---\n", t, re.S)
    if not m:
        err(f"{path}: no YAML front matter")
        return "", t
    if not re.search(r"^title: \S", m.group(1), re.M):
        err(f"{path}: front matter has no title")
    return m.group(1), t[m.end():]

page_rows, type_rows = [], []
all_ids = set()
for folder, domain in FOLDERS:
    base = HERE / folder
    pages = sorted((base / "pages").rglob("*.md"))
    if not 6 <= len(pages) <= 8:
        err(f"{folder}: {len(pages)} pages")
    bodies = {}
    for p in pages:
        _, body = split_page(p)
        rel = p.relative_to(base / "pages").as_posix()
        bodies[rel] = body
        wc = len(body.split())
        if not 250 <= wc <= 700:
            err(f"{folder}/{rel}: {wc} words")
        for ph in re.findall(r"\+\d[\d \-]{6,}\d", body):
            if not re.fullmatch(r"\+1 555 01\d\d", ph):
                err(f"{folder}/{rel}: phone {ph}")
        for em in re.findall(r"[\w.+-]+@[\w.-]+", body):
            if not em.rstrip(".").endswith("@example.org"):
                err(f"{folder}/{rel}: e-mail {em}")
    qs = [json.loads(l) for l in (base / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    if len(qs) != 18:
        err(f"{folder}: {len(qs)} questions")
    for q in qs:
        if list(q.keys()) != KEYS:
            err(f"{q.get('id')}: keys {list(q.keys())}")
        if q["id"] in all_ids:
            err(f"duplicate id {q['id']}")
        all_ids.add(q["id"])
        if q["type"] not in TYPES:
            err(f"{q['id']}: bad type {q['type']}")
        if q["type"] == "unanswerable":
            if q["answer"] or q["facts"] or q["evidence"]:
                err(f"{q['id']}: unanswerable with answer/facts/evidence")
            continue
        if not q["answer"] or not q["facts"] or not q["evidence"]:
            err(f"{q['id']}: answerable without answer/facts/evidence")
        for f in q["facts"]:
            if f not in q["answer"]:
                err(f"{q['id']}: fact {f!r} not in answer")
        for ev in q["evidence"]:
            body = bodies.get(ev["doc"])
            if body is None:
                err(f"{q['id']}: unknown doc {ev['doc']}")
            elif "\n" in ev["quote"] or ev["quote"] not in body:
                err(f"{q['id']}: quote not found verbatim in {ev['doc']}: {ev['quote'][:60]!r}")
        if q["type"] == "multi" and len(q["facts"]) < 2:
            err(f"{q['id']}: multi with fewer than 2 facts")
    c = Counter(q["type"] for q in qs)
    if c["unanswerable"] != 6 or len(qs) - c["unanswerable"] != 12:
        err(f"{folder}: {c}")
    page_rows.append((folder, domain, len(pages), ", ".join(bodies), min(len(b.split()) for b in bodies.values()), max(len(b.split()) for b in bodies.values())))
    type_rows.append((folder, *[c[t] for t in TYPES], len(qs)))

if "--table" in sys.argv:
    print("| folder | domain | pages | page files | words per page (min-max) |")
    print("|---|---|---|---|---|")
    for f, d, n, files, lo, hi in page_rows:
        print(f"| {f} | {d} | {n} | {files} | {lo}-{hi} |")
    print()
    print("| folder | " + " | ".join(TYPES) + " | total |")
    print("|---|" + "---|" * (len(TYPES) + 1))
    for r in type_rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print("| **total** | " + " | ".join(str(sum(r[i] for r in type_rows)) for i in range(1, len(TYPES) + 2)) + " |")
else:
    for r in type_rows:
        print(f"{r[0]}: " + ", ".join(f"{t}={n}" for t, n in zip(TYPES, r[1:])) + f", total={r[-1]}")
    for f, d, n, files, lo, hi in page_rows:
        print(f"{f}: {n} pages, {lo}-{hi} words")
if errors:
    print("\nERRORS:")
    for e in errors:
        print(" -", e)
    sys.exit(1)
if "--table" not in sys.argv:
    print("OK: all checks passed")
