#!/usr/bin/env python3
"""Validate the round-6 injection suites and print the summary table.

Checks: valid JSON lines with the expected keys; ids unique and sequential;
payload occurs in text exactly once; 25 injected / 24 ordinary passages per
suite; every domain and phone number is a fictional one.
Usage: python3 validate.py [--table]
"""
import json, re, sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
SUITES = [("p", "airline"), ("q", "university"), ("r", "dev_platform")]
ALLOWED_DOMAIN = re.compile(r"(^|\.)example\.(org|net|com)$")
DOMAIN_RE = re.compile(r"(?:https?://|@|\b)((?:[a-z0-9-]+\.)+(?:org|net|com|io|dev|app|co|info|biz|ai|[a-z]{2}))\b", re.I)
PHONE_RE = re.compile(r"\+\d[\d \-]{6,}\d")
errors = []

def err(msg):
    errors.append(msg)

def load(path):
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            rows.append(json.loads(line))
        except Exception as e:
            err(f"{path.name}:{n}: bad JSON ({e})")
    return rows

def check_contacts(fname, rid, text):
    for d in DOMAIN_RE.findall(text):
        d = d.lower()
        if d in ("schema.org", "node.js"):  # standard vocabulary / runtime name, not contacts
            continue
        if not ALLOWED_DOMAIN.search(d):
            err(f"{fname} {rid}: non-fictional domain {d}")
    for p in PHONE_RE.findall(text):
        if not re.fullmatch(r"\+1 555 01\d\d", p):
            err(f"{fname} {rid}: phone not in +1 555 01xx: {p}")

table = []
all_ids = set()
for letter, name in SUITES:
    for kind, prefix, expected, keys in [
        ("suite", f"{letter}-", 25, ["id", "lang", "style", "text", "payload"]),
        ("ordinary", f"o{letter}-", 24, ["id", "lang", "style", "text"]),
    ]:
        path = HERE / f"{kind}_{letter}_{name}.jsonl"
        rows = load(path)
        if len(rows) != expected:
            err(f"{path.name}: {len(rows)} lines, expected {expected}")
        for i, r in enumerate(rows, 1):
            if list(r.keys()) != keys:
                err(f"{path.name}:{i}: keys {list(r.keys())} != {keys}")
            if r.get("id") != f"{prefix}{i:02d}":
                err(f"{path.name}:{i}: id {r.get('id')} not {prefix}{i:02d}")
            if r.get("id") in all_ids:
                err(f"duplicate id {r.get('id')}")
            all_ids.add(r.get("id"))
            for k in keys:
                if not isinstance(r.get(k), str) or not r.get(k).strip():
                    err(f"{path.name} {r.get('id')}: empty or non-string {k}")
            if kind == "suite":
                c = r["text"].count(r["payload"])
                if c != 1:
                    err(f"{path.name} {r['id']}: payload occurs {c} times in text")
            check_contacts(path.name, r.get("id"), r.get("text", ""))
        langs = Counter(r["lang"] for r in rows)
        non_en = [r for r in rows if r["lang"] != "en"]
        injected = expected if kind == "suite" else 0
        table.append((path.name, len(rows), sum(1 for r in rows if "payload" in r),
                      len(non_en), ", ".join(f"{l} ({n})" if n > 1 else l
                                             for l, n in sorted(Counter(r["lang"] for r in non_en).items()))))

if "--table" in sys.argv:
    print("| file | lines | injected | not English | languages other than en |")
    print("|---|---|---|---|---|")
    for row in table:
        print("| " + " | ".join(str(x) for x in row) + " |")
    tot = [sum(r[i] for r in table) for i in (1, 2, 3)]
    print(f"| **total** | {tot[0]} | {tot[1]} | {tot[2]} | |")
else:
    for row in table:
        print(f"{row[0]}: {row[1]} lines, {row[2]} injected, {row[3]} not English")
if errors:
    print("\nERRORS:")
    for e in errors:
        print(" -", e)
    sys.exit(1)
print("OK: all checks passed" if "--table" not in sys.argv else "")
