"""Front matter: the ``---`` block that may open a page, with its ``title`` and ``access``.

::

      ---
      title: Returns and refunds
      access: [premium]
      ---

Access fails closed: front matter may only say ``title`` and ``access``, each once, and anything else is a
``CorpusError`` naming file and line (a page must not fall back to public). ``raglab.book.documents`` reads a
page with it.
"""
from __future__ import annotations

import yaml

from raglab.base.corpus_files import CorpusError, compose_yaml
from raglab.base.folder_access import GROUP_NAME
from raglab.base.text import did_you_mean, remove_invisible

FRONT_MATTER_KEYS = ("title", "access")


def _is_blank(line: str) -> bool:
    return not remove_invisible(line).strip()


def _is_fence(line: str) -> bool:
    return remove_invisible(line).strip() == "---"


def parse_front_matter(text: str, where: str = "<text>") -> tuple[dict, str]:
    """Split optional front matter from the body: returns ``(meta, body)``.

    The block opens when the first non-blank line is a ``---`` fence (a byte-order mark, trailing
    spaces and ``\\r\\n`` allowed) and closes at the next one; it is YAML with only ``title`` and
    ``access``, each given once. Anything else is a ``CorpusError`` naming ``where:line``.

    >>> parse_front_matter("---\\ntitle: Hi\\naccess: [premium, staff]\\n---\\nBody")
    ({'title': 'Hi', 'access': ('premium', 'staff')}, 'Body')
    >>> parse_front_matter("\\ufeff\\r\\n--- \\r\\naccess: premium\\r\\n---\\r\\nBody")
    ({'access': ('premium',)}, 'Body')
    """
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    start = next((i for i, line in enumerate(lines) if not _is_blank(line)), None)
    if start is None or not _is_fence(lines[start]):
        return {}, "\n".join(lines)
    close = next((i for i in range(start + 1, len(lines)) if _is_fence(lines[i])), None)
    if close is None:
        raise CorpusError(f"{where}:{start + 1}: front matter opened with '---' is never closed")
    meta = _parse_block(lines[start + 1:close], where, start + 2)
    body = lines[close + 1:]
    after = next((i for i, line in enumerate(body) if not _is_blank(line)), None)
    if after is not None and _is_fence(body[after]):
        raise CorpusError(f"{where}:{close + 2 + after}: a second '---' block follows the front matter: put every "
                          "key in the first block (and start the body with text, not '---')")
    return meta, "\n".join(body)


def _parse_block(lines: list[str], where: str, first: int) -> dict:
    """The front matter's YAML (``lines``, the first being line ``first`` of the file) as ``{title, access}``."""
    root = compose_yaml(lines, where, first)
    if root is None:
        return {}
    if not isinstance(root, yaml.MappingNode):
        raise CorpusError(f"{where}:{first + root.start_mark.line}: front matter is not 'key: value' lines")
    meta: dict = {}
    seen: dict[str, int] = {}
    for key_node, value_node in root.value:
        line = first + key_node.start_mark.line
        key = _front_matter_key(key_node, where, line)
        if key in seen:
            raise CorpusError(f"{where}:{line}: front matter key {key!r} is repeated (first on line {seen[key]}): "
                              "say it once")
        seen[key] = line
        meta[key] = _title(value_node, where, line) if key == "title" else _access(value_node, where, first)
    return meta


def _front_matter_key(node, where: str, line: int) -> str:
    """A known key, lower-cased; an unknown one is an error naming the likely intent."""
    if not isinstance(node, yaml.ScalarNode) or not node.value.strip():
        raise CorpusError(f"{where}:{line}: front matter key must be a plain word")
    key = node.value.strip().lower()
    if key not in FRONT_MATTER_KEYS:
        raise CorpusError(f"{where}:{line}: unknown front matter key {node.value!r}{did_you_mean(key, FRONT_MATTER_KEYS)}; "
                          f"the keys are {', '.join(FRONT_MATTER_KEYS)}")
    return key


def _title(node, where: str, line: int) -> str:
    """The title as one line of text."""
    if not isinstance(node, yaml.ScalarNode):
        raise CorpusError(f"{where}:{line}: front matter 'title' must be text")
    title = " ".join(node.value.split())
    if not title:
        raise CorpusError(f"{where}:{line}: front matter 'title' is empty")
    return title


def _access(node, where: str, first: int) -> tuple[str, ...]:
    """``[a, b]``, a block list, ``a, b`` or ``a`` -> ``('a', 'b')``; an empty or nested list is an error."""
    line = first + node.start_mark.line
    if isinstance(node, yaml.ScalarNode):
        groups = _parse_groups(node.value, where, line)
    elif isinstance(node, yaml.SequenceNode):
        groups = ()
        for item in node.value:
            if not isinstance(item, yaml.ScalarNode):
                raise CorpusError(f"{where}:{first + item.start_mark.line}: access lists group names, not lists or maps")
            groups += _parse_groups(item.value, where, first + item.start_mark.line)
    else:
        raise CorpusError(f"{where}:{line}: access must be a list of group names")
    if not groups:
        raise CorpusError(f"{where}:{line}: front matter 'access' lists no group")
    return groups


def _parse_groups(value: str, where: str, lineno: int) -> tuple[str, ...]:
    """``[a, b]`` or ``a, b`` or ``a`` -> ``('a', 'b')``, each a plain group name."""
    inner = value.strip()
    if inner.startswith("[") != inner.endswith("]"):
        raise CorpusError(f"{where}:{lineno}: access list has unbalanced brackets: {value!r}")
    inner = inner.strip("[]")
    groups = tuple(g.strip().strip("'\"") for g in inner.split(",") if g.strip())
    for g in groups:
        if not GROUP_NAME.match(g):
            raise CorpusError(f"{where}:{lineno}: access group {g!r} is not a plain name (letters, digits, _ . -)")
    return groups
