"""Where a page's headings start, found without raglab: the reference the tests of the section splitter and of
chunk coverage compare with."""
import re


def independent_headings(text):
    """Offsets of underlined or '#' headings, found without raglab."""
    out, pos, lines = [], 0, text.split("\n")
    for i, line in enumerate(lines):
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (line.strip() and not line[0].isspace() and re.fullmatch(r"([*=\-~^])\1+", nxt)
                and len(nxt) == len(line.rstrip())) or re.match(r"#{1,6} ", line):
            out.append(pos)
        pos += len(line) + 1
    return out
