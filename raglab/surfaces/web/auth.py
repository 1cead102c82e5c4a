"""Who the caller is: the tokens file, and a request's bearer token mapped to its access groups (a
missing or unknown token is an ``ApiError``, the error the app answers as ``{"detail": ...}``).

The caller comes only from ``Authorization: Bearer <token>``: the tokens file maps each
token to its access groups (``{"tokens": {"<token>": ["premium"]}}``; its path is ``tokens_file``,
else ``$RAGLAB_TOKENS``, else ``config/tokens.json`` in the project; ``config/tokens.example.json``
holds two demo tokens). The request body can never set access: ``/ask`` takes ``{"question": ...}``
and nothing else. A chunk the caller may not see is a 404, exactly like one that does not exist.
"""
from __future__ import annotations

import hmac
import json
from pathlib import Path
from typing import Annotated

from fastapi import Header, Request

from raglab.base import config

TOKENS_ENV = "RAGLAB_TOKENS"


def default_tokens_path() -> Path:
    """``$RAGLAB_TOKENS``, else ``config/tokens.json`` in the project."""
    return Path(config.get(TOKENS_ENV) or config.PROJECT_ROOT / "config" / "tokens.json")


class ApiError(Exception):
    """An error answered as ``{"detail": message}`` with this status."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def parse_tokens(data: object, source: str = "tokens") -> dict[str, tuple[str, ...]]:
    """``{"tokens": {token: [group, ...]}}`` (or the inner mapping) as ``{token: groups}``.

    >>> parse_tokens({"tokens": {"reader-token-1": [], "plus-token-22": ["premium"]}})
    {'reader-token-1': (), 'plus-token-22': ('premium',)}
    """
    mapping = data.get("tokens") if isinstance(data, dict) and "tokens" in data else data
    if not isinstance(mapping, dict):
        raise TypeError(f"{source}: expected an object {{\"tokens\": {{\"<token>\": [\"group\", ...]}}}}")
    out = {}
    for token, groups in mapping.items():
        if not isinstance(token, str) or len(token) < 8 or token != token.strip():
            raise ValueError(f"{source}: a token must be a string of at least 8 characters without surrounding spaces")
        if not isinstance(groups, list) or not all(isinstance(g, str) and g.strip() for g in groups):
            raise ValueError(f"{source}: the groups of a token must be a list of group names")
        out[token] = tuple(dict.fromkeys(g.strip() for g in groups))
    return out


def load_tokens(path: str | Path | None = None) -> dict[str, tuple[str, ...]]:
    """Read a tokens file (see ``parse_tokens``); a missing or malformed file is a clear error."""
    path = Path(path) if path is not None else default_tokens_path()
    if not path.exists():
        example = config.PROJECT_ROOT / "config" / "tokens.example.json"
        raise FileNotFoundError(f"no tokens file at {path}: write one (e.g. copy {example} and replace its demo tokens), "
                                f"or point ${TOKENS_ENV} at it")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    return parse_tokens(data, str(path))


class Caller:
    """Maps a bearer token to access groups (compared in constant time)."""

    def __init__(self, tokens: dict[str, tuple[str, ...]]):
        self._tokens = [(t.encode(), groups) for t, groups in tokens.items()]

    def groups(self, authorization: str | None) -> tuple[str, ...]:
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise ApiError(401, "missing bearer token: send 'Authorization: Bearer <token>'",
                           {"WWW-Authenticate": "Bearer"})
        found = None
        for known, groups in self._tokens:   # no early exit: every token is compared
            if hmac.compare_digest(known, token.encode()):
                found = groups
        if found is None:
            raise ApiError(401, "unknown token", {"WWW-Authenticate": 'Bearer error="invalid_token"'})
        return found


def caller_groups(request: Request, authorization: Annotated[str | None, Header()] = None) -> tuple[str, ...]:
    """The FastAPI dependency: the access groups of the bearer token (401 when missing or unknown)."""
    return request.app.state.caller.groups(authorization)
