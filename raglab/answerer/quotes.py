"""The quotable sentences of a source, each under the API line it belongs to (signature or heading).

The extractive answerer quotes sentences of the sources. When a question asks for an API ("which function ...")
or names one, each quote is prefixed with the API it belongs to: the signature line above it in its own source
(the Python docs' plain text writes ``math.isqrt(n)`` and indents the description under it), else the nearest
heading that names an API. The prefix is only ever text of the cited source.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from raglab.base.text import MAX_SENTENCES, clean, paragraphs, sentence_spans
from raglab.book.chunking import Chunk
from raglab.book.sections import find_headings
from raglab.book.prompt import Source

_SIG_WORDS = r"(?:class|exception|static|staticmethod|classmethod|abstractmethod|async|await|awaitable|coroutine|property|final)"
_PY_SIGNATURE = re.compile(rf"(?P<kw>(?:{_SIG_WORDS}\s+)+)?(?P<at>@)?(?P<name>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)"
                           r"(?P<args>\(.*\)(?:\s*->\s*\S.*)?|\[.*\])?")
_C_SIGNATURE = re.compile(r"(?:const\s+)?[A-Za-z_]\w*(?:\s+[A-Za-z_]\w*)*\s*\*{0,2}\s*[A-Za-z_]\w*\(.*\)")
# a heading names an API when it holds a quoted name, a call or a dotted name: '"tomllib" --- Parse TOML files'
_NAMES_API = re.compile(r'"[A-Za-z_][\w.]*"|\b[A-Za-z_][\w.]*\(\)|\b[A-Za-z_]\w*\.[A-Za-z_]\w*')
_API_KINDS = (r"functions?|methods?|class(?:es)?|modules?|exceptions?|errors?|decorators?|attributes?|constants?|types?"
              r"|packages?|actions?|options?|arguments?|parameters?|keywords?|statements?|operators?|protocols?|built-?ins?"
              r"|fields?|flags?|warnings?|hooks?|events?|variables?|apis?|libraries|library|objects?|tools?|commands?")
_ASKS_API = re.compile(rf"\b(?:which|what)\b(?:\s+[\w.()'-]+){{0,3}}?\s+(?:{_API_KINDS})\b|\bname of the\b"
                       r"|\bwhat (?:do|should|can) i (?:call|use|import)\b", re.I)
# an API named in the question: a dotted name, a call, snake_case or an inner capital (TopologicalSorter)
_NAMED_API = re.compile(r"\b[A-Za-z_]\w*\.[A-Za-z_]\w*|\b[A-Za-z_]\w*\(|\b[a-z]+_\w+|\b[A-Z][a-z]+[A-Z]\w*")
# a question in parts: "What is X, and which function does Y?" (each part gets its own best sentence)
_PARTS = re.compile(r"(?<=[?.!])\s+(?=[A-Z])|,\s+and\s+(?=(?:which|what|how|why|when|where|who|whose|does|do|is|are|can"
                    r"|should|if|make)\b)", re.I)


def asks_for_api(question: str) -> bool:
    """Does the question ask for an API by kind ("which function ..."), or name one?

    >>> asks_for_api("Which math function returns the integer square root?"), asks_for_api("What does str.strip() do?")
    (True, True)
    >>> asks_for_api("Is it safe to unpickle data from a stranger?")
    False
    """
    return bool(_ASKS_API.search(question) or _NAMED_API.search(question))


def question_parts(question: str) -> list[str]:
    """The parts of a question that asks several things (empty for a question in one part).

    >>> question_parts("What does re.match() do, and which function requires the whole string to match?")
    ['What does re.match() do', 'which function requires the whole string to match?']
    >>> question_parts("Which exception is raised, and when?")
    []
    """
    parts = [p.strip() for p in _PARTS.split(question) if p and p.strip()]
    return parts if len(parts) > 1 and all(len(p.split()) >= 3 for p in parts) else []


def signature_line(block: str) -> str | None:
    """The block as one signature line when every line of it is one (``math.isqrt(n)``,
    ``class list([iterable])``, ``int PyList_Append(PyObject *list, PyObject *item)``), else None.

    >>> signature_line("math.isqrt(n)"), signature_line("exception dataclasses.FrozenInstanceError")
    ('math.isqrt(n)', 'exception dataclasses.FrozenInstanceError')
    >>> signature_line("For example:") is None and signature_line("Note") is None
    True
    """
    lines = [" ".join(line.split()) for line in block.strip().splitlines()]
    if not lines or len(lines) > 4:
        return None
    for line in lines:
        m = _PY_SIGNATURE.fullmatch(line)
        if m and (m["kw"] or m["at"] or m["args"] or "." in m["name"] or re.fullmatch(r"[A-Z][A-Z0-9_]+", m["name"])):
            continue
        if not _C_SIGNATURE.fullmatch(line):
            return None
    return "; ".join(lines)


def rejoin_hyphens(text: str) -> str:
    """Words the plain-text docs wrapped at their hyphen, joined again (no space after the hyphen).

    >>> rejoin_hyphens("always big-\\n   endian, see bpo-\\n31368")
    'always big-endian, see bpo-\\n31368'
    """
    return re.sub(r"(?<=[A-Za-z]-)\n[ \t]*(?=[a-z])", "", text)


@dataclass(frozen=True)
class Quotable:
    """A sentence a source can quote: its source, the sentence as checked (``plain``) and as quoted
    (``text``: hyphen-wrapped words joined), the API line it sits under (signature or heading), if any,
    and whether it is code (an interactive session, or a block indented under a line ending in a colon)."""

    n: int
    plain: str
    text: str
    api: str | None
    code: bool = False
    follows: bool = False      # directly after the previous sentence, in the same paragraph


def quotables(source: Source, limit: int | None = MAX_SENTENCES) -> list[Quotable]:
    """The sentences of a source (at most ``limit``), each with the signature line or API-naming heading
    it sits under. Signatures are found by indentation: a block of signature lines followed by a block
    indented deeper owns every deeper block until one at its own indentation or less; a heading line
    (underlined) starts a section that owns what follows. Headings themselves are not quotable.

    >>> text = "Functions\\n=========\\n\\nmath.isqrt(n)\\n\\n   Return the integer square root.\\n\\nSee also other pages."
    >>> c = Chunk("m#1", "math.txt", ('"math" --- Mathematical functions',), 0, len(text), text, text, ("public",), "words")
    >>> [(q.text, q.api) for q in quotables(Source(1, c))]
    [('Return the integer square root.', 'math.isqrt(n)'), ('See also other pages.', '"math" --- Mathematical functions')]
    """
    text = source.chunk.text
    headed = {offset: title for offset, _, title in find_headings(text)}
    blocks = paragraphs(text, 0, len(text))
    indents = [a - (text.rfind("\n", 0, a) + 1) for a, _ in blocks]
    titles = list(reversed(source.chunk.heading))   # innermost first
    stack: list[tuple[int, str]] = []               # (indent, signature) of the signatures in force
    out, prose = [], None                           # prose: (indent, ends with a colon) of the last prose block
    for i, (a, b) in enumerate(blocks):
        heading = headed.get(a - indents[i])
        if heading is not None:
            titles, stack, prose = [heading] + titles, [], None
            continue
        while stack and stack[-1][0] >= indents[i]:
            stack.pop()
        sig = signature_line(text[a:b])
        if sig and i + 1 < len(blocks) and indents[i + 1] > indents[i]:
            stack.append((indents[i], sig))
            prose = None
            continue
        code = text.startswith(">>>", a) or bool(prose and prose[1] and indents[i] > prose[0])
        if not code:
            prose = (indents[i], text[a:b].rstrip().endswith(":"))
        api = stack[-1][1] if stack else next((t for t in titles if _NAMES_API.search(t)), None)
        first = True
        for s, e in sentence_spans(text[a:b]):
            plain = clean(text[a + s:a + e])
            if plain:
                out.append(Quotable(source.n, plain, clean(rejoin_hyphens(text[a + s:a + e])), api, code, not first))
                first = False
    return out[:limit] if limit is not None else out
