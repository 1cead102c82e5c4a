"""The one-page UI at ``/``: ``static/index.html`` with ``static/style.css`` and ``static/app.js`` written into
it, and the headers it is served with.

The style and the script are inlined, so that the content security policy can allow exactly them by their
hashes (no ``'unsafe-inline'``, nothing loaded from elsewhere). ``index.html`` holds three fields:
``{style}``, ``{script}`` and ``{max_question}`` (the API's limit on a question's length).
"""
from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from raglab.surfaces.web.limits import MAX_QUESTION

STATIC = Path(__file__).parent / "static"


def _static(name: str) -> str:
    """The text of a file of ``static/``."""
    return (STATIC / name).read_text(encoding="utf-8")


# what stands between <style> and </style>, and between <script> and </script>: the hashes are of exactly this
_CSS = "\n" + _static("style.css")
_JS = "\n" + _static("app.js")
PAGE = _static("index.html").format(style=_CSS, script=_JS, max_question=MAX_QUESTION)


def _sha256(text: str) -> str:
    """The policy's source that allows exactly ``text`` inline."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


PAGE_HEADERS = {
    "Content-Security-Policy": (f"default-src 'none'; script-src {_sha256(_JS)}; style-src {_sha256(_CSS)}; "
                                "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
