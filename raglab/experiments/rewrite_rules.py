"""The rule-based query splitter: a multi-part question into standalone sub-queries, by grammar alone.

``rule_rewrite`` is deterministic and offline. It splits on question marks, semicolons, ", and" /
"and how" before a new question, keeps a leading clause shared by every part, and expands
"difference between A and B", "A differs from B", "A vs B", "both A and B" and comma lists into
one query per item. The rewriters that use it are in ``raglab.experiments.rewriters``.
"""
from __future__ import annotations

import re


# ---------------------------------------------------------------- word classes

WH = ("what", "which", "who", "whom", "whose", "why", "how", "where", "when")
AUX = ("is", "are", "was", "were", "am", "do", "does", "did", "can", "could", "should", "would", "will",
       "shall", "may", "might", "must", "has", "have", "had", "isn't", "aren't", "doesn't", "don't", "didn't",
       "can't", "cannot", "couldn't", "shouldn't", "wouldn't", "won't", "hasn't", "haven't", "wasn't", "weren't")
SUBORD = ("if", "when", "while", "after", "before", "once", "since", "unless", "whenever", "although", "though",
          "because")
PREPS = ("for", "from", "in", "on", "at", "to", "with", "by", "below", "above", "under", "over", "after", "before",
         "until", "since", "of", "about", "within", "between", "into", "during", "per", "as")
SUBJECTS = ("i", "you", "we", "they", "it", "he", "she", "my", "your", "our", "their", "its", "the", "this",
            "that", "these", "those", "there", "a", "an")
PRONOUNS = ("it", "its", "it's", "that", "this", "these", "those", "they", "them", "their")
PRO_FORMS = ("one", "ones", "instead", "equivalent", "same", "such", "alternative", "counterpart")
ANAPHORS = PRONOUNS + PRO_FORMS
ARTICLES = ("a", "an", "the")
STOPWORDS = frozenset(WH + AUX + SUBORD + PREPS + SUBJECTS + ANAPHORS) | {
    "and", "or", "but", "not", "no", "me", "us", "him", "her", "some", "any", "also", "so", "than", "then", "too",
    "very", "just", "still", "actually", "really", "get", "got", "use", "using", "used", "happens", "happen",
    "make", "many", "much", "long", "own", "other", "another", "else", "i'm", "i've", "i'd", "be", "been",
    "whether", "there's"}
# words that end a noun phrase (a list item, the two sides of "vs")
_ENDS_PHRASE = STOPWORDS - {"one", "ones", "same", "equivalent", "alternative", "counterpart", "long", "own", "other"}

_ALT = "|".join
_QSTART = (rf"(?:(?:what|which|who|whom|whose|why|how)\b"
           rf"|(?:when|where)\s+(?:{_ALT(AUX)})\b"
           rf"|(?:{_ALT(AUX)})\b"
           rf"|(?:{_ALT(PREPS)})\s+(?:what|which|how|whom|whose)\b)")
_QUESTION = re.compile(rf"^{_QSTART}", re.I)
# a new clause after ", and": a question, or a condition that leads to one
_SPLIT_COMMA = re.compile(rf",\s*(?:and|but|or|plus|also)\s+(?=(?:{_QSTART}|(?:{_ALT(SUBORD)})\b))", re.I)
# a new question after a bare "and" / "or": a question word, or an auxiliary followed by its subject
_SPLIT_BARE = re.compile(rf"\s+(?:and|or)\s+(?=(?:what|which|who|whom|whose|why|how)\b"
                         rf"|(?:when|where)\s+(?:{_ALT(AUX)})\b"
                         rf"|(?:{_ALT(AUX)})\s+(?:{_ALT(SUBJECTS)})\b)", re.I)
_SPLIT_HARD = re.compile(r"\s*;\s*|\s+[-\u2013\u2014]\s+")
# A question's sentences, not a page's (raglab.base.text.sentence_ends): "?" and "!" end one whatever follows.
_SENTENCES = re.compile(r"(?<=[?!])\s+|(?<=\.)\s+(?=[A-Z])")
_LEAD = re.compile(rf"[,:]\s+(?={_QSTART})", re.I)
_CONJ = re.compile(r"^(?:and|but|or|also|so|plus|then)\s+", re.I)
_QUOTED = re.compile(r"`[^`]+`|(?<!\w)'[^']+'(?!\w)|\"[^\"]+\"")
_PUNCT = ",;:?!.()\""


def _word(token: str) -> str:
    return token.strip(_PUNCT).lower()


def is_question(clause: str) -> bool:
    """Does the clause open like a question (a question word, an auxiliary, or "for how ...")?

    >>> is_question("how long should I wait"), is_question("When I save data"), is_question("below what size")
    (True, False, True)
    """
    return bool(_QUESTION.match(clause.strip()))


def _has_question(clause: str) -> bool:
    """A question, possibly after a leading condition ("if I cancel now, how long ...")."""
    return is_question(clause) or bool(_LEAD.search(clause))


def _protect(text: str) -> tuple[str, list[str]]:
    """Quoted code and strings replaced by placeholders (no spaces inside), so nothing in them is split."""
    saved: list[str] = []

    def keep(m):
        saved.append(m.group())
        return f"\x00{len(saved) - 1}\x00"
    return _QUOTED.sub(keep, text), saved


def _restore(text: str, saved: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: saved[int(m.group(1))], text)


def _tidy(text: str) -> str:
    """A clause without surrounding separators or its final question mark."""
    return " ".join(text.split()).strip(",;:-\u2013\u2014 ").rstrip("?.!").strip()


def _topic(clause: str) -> str:
    """The words of a clause that carry its topic (no question words, auxiliaries, pronouns or articles)."""
    out: list[str] = []
    for tok in clause.split():
        word = tok.strip(_PUNCT)
        if word and word.lower() not in STOPWORDS and word not in out:
            out.append(word)
    return " ".join(out)


def _needs_topic(clause: str) -> bool:
    """A later part that cannot stand alone: a fragment ("for how long"), a pro-form that needs its
    antecedent ("instead", "the pathlib equivalent", "inside one"), or a pronoun that is not the dummy
    "it" of "what does it cost to ...", "how long does it take to ..."."""
    words = [_word(t) for t in clause.split()]
    if len(words) < 4 or any(w in PRO_FORMS for w in words):
        return True
    dummy = re.sub(r"\bit\s+(?:\S+\s+){0,2}?to\s", " ", clause.lower())
    return any(_word(t) in PRONOUNS for t in dummy.split())


# ---------------------------------------------------------------- expanding one clause

def _phrase_end(tokens: list[str], start: int, limit: int = 3) -> int:
    """End of the noun phrase that starts at ``start``: an optional article, then up to ``limit``
    words, stopping before a function word and after punctuation."""
    end = start + (start < len(tokens) and tokens[start].lower() in ARTICLES)
    words = 0
    while end < len(tokens) and words < limit:
        word = _word(tokens[end])
        if not word or word in _ENDS_PHRASE:
            break
        end, words = end + 1, words + 1
        if tokens[end - 1][-1] in ",;:?!)":
            break
    return end if words else start


def _phrase_start(tokens: list[str], end: int, length: int) -> int:
    """Start of the phrase ending at ``end`` as long as its parallel phrase (``length`` tokens), not
    reaching back over punctuation or a question word; ``end`` when there is no such phrase."""
    start = end
    while start > 0 and end - start < length:
        prev = tokens[start - 1]
        if prev[-1] in ",;:?!(" or _word(prev) in WH + AUX + PREPS:
            break
        start -= 1
    return start


def _join(*pieces) -> str:
    return " ".join(" ".join(p) if isinstance(p, list) else p for p in pieces if p).strip()


def _clean_item(tokens: list[str]) -> str:
    return " ".join(tokens).rstrip(",;:?")


def _expand_pair(clause: str) -> list[str] | None:
    """"the difference between A and B", "how does A differ from B", "A vs B", "both A and B"."""
    tokens = clause.split()
    low = [_word(t) for t in tokens]
    for i in range(len(tokens) - 3):   # (the) difference(s) between A and B
        if low[i] in ("difference", "differences") and low[i + 1] == "between" and "and" in low[i + 3:]:
            j = low.index("and", i + 3)
            a = tokens[i + 2:j]
            end = _phrase_end(tokens, j + 1, max(len(a), 1) + 1)
            if len(a) <= 4 and end > j + 1:
                s = i - (i > 0 and low[i - 1] in ("main", "key", "real", "exact"))
                s -= s > 0 and low[s - 1] in ARTICLES
                return [_join(tokens[:s], _clean_item(x), tokens[end:]) for x in (a, tokens[j + 1:end])]
    for i in range(1, len(tokens) - 2):  # A differs from B / A is different from B
        if low[i] in ("differ", "differs", "different") and low[i + 1] == "from":
            left = i - (low[i - 1] in ("is", "are") and low[i] == "different")
            start = left
            while start > 0 and _word(tokens[start - 1]) not in WH + AUX + ("whether",) and left - start < 4:
                start -= 1
            a = tokens[start:left]
            end = _phrase_end(tokens, i + 2)
            if a and end > i + 2 and _word(a[0]) not in ANAPHORS + SUBJECTS[:8]:
                return [_join("what is", _clean_item(x), tokens[end:]) for x in (a, tokens[i + 2:end])]
    for i in range(1, len(tokens) - 1):  # A vs B
        if low[i] in ("vs", "versus"):
            end = _phrase_end(tokens, i + 1)
            start = _phrase_start(tokens, i, end - i - 1)
            if end > i + 1 and start < i:
                return [_join(tokens[:start], _clean_item(x), tokens[end:]) for x in (tokens[start:i], tokens[i + 1:end])]
    for i in range(len(tokens) - 3):     # both A and B
        if low[i] == "both" and "and" in low[i + 2:i + 6]:
            j = low.index("and", i + 2)
            a = tokens[i + 1:j]
            end = min(j + 1 + len(a), len(tokens))
            b = tokens[j + 1:end]
            if b and not any(_word(t) in _ENDS_PHRASE - set(ARTICLES) for t in a + b):
                return [_join(tokens[:i], _clean_item(x), tokens[end:]) for x in (a, b)]
    return None


def _expand_list(clause: str) -> list[str] | None:
    """"What do A, B and C return" -> one clause per item: three or more items of at most three words,
    at least one of them between commas; the first and the last item are as long as their neighbours."""
    tokens = clause.split()
    for j, tok in enumerate(tokens):
        if tok.lower() not in ("and", "or") or j < 3 or j == len(tokens) - 1:
            continue
        middle, end = [], j
        while True:            # items between commas, right to left
            k = end - 1
            while k > 0 and not tokens[k - 1].endswith(","):
                k -= 1
            if k == 0 or end - k > 3 or any(_word(t) in WH + AUX + SUBORD for t in tokens[k:end]):
                break
            middle.insert(0, (k, end))
            end = k
        if not middle:
            continue
        first_len = middle[0][1] - middle[0][0]
        start = _phrase_start(tokens[:end - 1] + [tokens[end - 1].rstrip(",")], end, first_len)
        last_len = middle[-1][1] - middle[-1][0]
        last = tokens[j + 1:j + 1 + last_len]
        if end - start != first_len or len(last) != last_len or any(_word(t) in _ENDS_PHRASE for t in last):
            continue
        if tokens[j + last_len][-1] in ",;:" and j + last_len < len(tokens) - 1:
            continue
        items = [tokens[start:end]] + [tokens[a:b] for a, b in middle] + [last]
        return [_join(tokens[:start], _clean_item(x), tokens[j + 1 + last_len:]) for x in items]
    return None


def _expand(clause: str) -> list[str]:
    pieces = _expand_pair(clause) or [clause]
    return [x for p in pieces for x in (_expand_list(p) or [p])]


# ---------------------------------------------------------------- the splitter

def _clauses(sentence: str) -> list[str]:
    parts = []
    for hard in _SPLIT_HARD.split(sentence):
        for soft in _SPLIT_COMMA.split(hard):
            parts.extend(_SPLIT_BARE.split(soft))
    return [p for p in (_CONJ.sub("", _tidy(x)) for x in parts) if p]


def _finish(text: str, mark: str) -> str:
    text = " ".join(text.split())
    text = text[:1].upper() + text[1:]
    return text + mark if mark and not text.endswith(mark) else text


def rule_rewrite(question: str, max_queries: int = 5) -> list[str]:
    """Split a multi-part question into standalone sub-queries, by grammar alone (deterministic, offline).

    A single-part question comes back unchanged, as a one-item list. A leading clause that is not
    itself a question ("After an HTTP 429 from the API, ...", "I have X; ...") is kept in every part;
    a later part that points back ("it", "instead", "that") or is a fragment gets the topic words of
    the first part in brackets.

    >>> rule_rewrite("What does json.dumps do, and how does it handle non-ASCII text?")
    ['What does json.dumps do?', 'How does it handle non-ASCII text (json.dumps)?']
    >>> rule_rewrite("When I read a CSV file, which module should I use and should I open it in binary mode?")
    ['When I read a CSV file, which module should I use?', 'When I read a CSV file, should I open it in binary mode?']
    >>> rule_rewrite("What is the difference between a list and a tuple in Python?")
    ['What is a list in Python?', 'What is a tuple in Python?']
    >>> rule_rewrite("Should I use json vs pickle for caching?")
    ['Should I use json for caching?', 'Should I use pickle for caching?']
    >>> rule_rewrite("What do os.getcwd, os.chdir and os.listdir return?")
    ['What do os.getcwd return?', 'What do os.chdir return?', 'What do os.listdir return?']
    >>> rule_rewrite("Which operators give floor division and the remainder?")
    ['Which operators give floor division and the remainder?']
    """
    text = " ".join(question.split())
    if not text:
        return [question]
    protected, saved = _protect(text)
    mark = "?" if text.endswith("?") else ""
    shared: list[tuple[str, str]] = []   # (clause every part keeps, the separator after it)
    parts: list[str] = []
    for sentence in _SENTENCES.split(protected):
        clauses = _clauses(sentence)
        if not any(map(_has_question, clauses)):
            if not parts:   # a statement before the first question: context for every part
                shared.extend((c, "; ") for c in clauses)
            continue
        lead = []
        while not _has_question(clauses[0]):
            lead.append(clauses.pop(0))
        if not parts and len(clauses) > 1 and not is_question(clauses[0]):
            m = _LEAD.search(clauses[0])    # "After an HTTP 429 from the API, how long ..."
            lead.append(clauses[0][:m.start()])
            clauses[0] = clauses[0][m.end():]
            shared.extend((c, "; ") for c in lead[:-1])
            shared.append((lead[-1], ", "))
        elif not parts:
            shared.extend((c, "; ") for c in lead)
        elif lead:
            clauses[0] = "; ".join(lead + [clauses[0]])
        parts.extend(clauses)
    out: list[str] = []
    context = "".join(f"{_tidy(c)}{sep}" for c, sep in shared)
    for n, clause in enumerate(parts):
        if context and _word(clause.split()[0]) in WH + AUX + PREPS:
            clause = clause[:1].lower() + clause[1:]
        if n and not shared and _needs_topic(clause) and _topic(parts[0]):
            clause = f"{clause} ({_topic(parts[0])})"
        for piece in map(_tidy, _expand(context + clause)):
            query = _finish(_restore(piece, saved), mark)
            if piece and query.lower() not in (o.lower() for o in out):
                out.append(query)
    return out[:max_queries] if len(out) > 1 else [question]
