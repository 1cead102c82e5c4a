"""A bounded cache of answers, keyed by everything that can change one.

The key (``AnswerCache.key``) is the question normalized (Unicode NFKC, case folded, runs of spaces as one,
a trailing question mark or full stop dropped), the user's access groups (sorted, public always in), the
index version, and the assistant's settings: the retriever mode, its levers and reranker, top k, refusal
threshold and text, the generator's name and every plain setting it has (numbers, strings, flags; a sentence scorer's weights),
and the steps handed in as functions (the keyword search, the fusion, the rescoring, the citation check, the evidence: ``step_id``).
Two users with different groups never share an entry, so a premium user's answer is never served to a
public user asking the same words. The cache is emptied when it sees another index version (a reindex),
holds at most ``size`` answers (least recently used out first) and is safe to use from several threads.
``CachedAssistant`` wraps an assistant with one: the HTTP app serves answers through it.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import inspect
import json
import re
import threading
import time
import unicodedata
import weakref
from collections import OrderedDict

from raglab.book.chunking import code_hash

PUBLIC = "public"
_SPACES = re.compile(r"\s+")


def normalized(question: str) -> str:
    """The question as the cache compares it.

    >>> normalized("  How do I  SORT a list? ") == normalized("how do i sort a list")
    True
    """
    text = _SPACES.sub(" ", unicodedata.normalize("NFKC", question).casefold()).strip()
    return text.rstrip("?.!？。 ").strip()


def _plain(value) -> bool:
    if isinstance(value, (list, tuple)):
        return all(map(_plain, value))
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return value is None or isinstance(value, (bool, int, float, str))


def settings_of(generator) -> dict:
    """The generator's name and its plain settings (what a change of which changes its answers)."""
    out = {"name": getattr(generator, "name", type(generator).__name__), "type": type(generator).__name__}
    for attr, value in sorted(vars(generator).items()):
        if _plain(value):
            out[attr] = value
        elif attr == "scorer" and value is not None:
            out[attr] = repr(value)
        elif attr == "narrow" and value is not None:      # what a model reads: the selection's own settings
            out[attr] = settings_of(getattr(value, "__self__", value))
    return out


_STEP_IDS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def step_id(step) -> str | None:
    """What a step handed to the retriever or assistant is, for the key: a hash of its function's code (or of its
    class's, for an object). A course wrapper names the learner's function it wraps as ``__wrapped__``
    (``functools.wraps``), and that function is the one hashed: two learners' fusions differ, though both run
    through the same wrapper.

    >>> import functools
    >>> def mine(lists): return []
    >>> def theirs(lists): return [("a", 1.0)]
    >>> wrap = lambda fn: functools.wraps(fn)(lambda lists, weights=None: fn(lists))
    >>> step_id(wrap(mine)) == step_id(mine) != step_id(wrap(theirs))
    True
    """
    if step is None:
        return None
    try:
        return _STEP_IDS[step]        # hashing reads the source: once per step, not on every question
    except (KeyError, TypeError):
        pass
    inner = inspect.unwrap(step)
    if inspect.isfunction(inner) or inspect.ismethod(inner):
        found = code_hash(inner)
    else:
        settings = f":{inner!r}" if dataclasses.is_dataclass(inner) else ""     # ReleaseNotes(("whatsnew/",), 0.5)
        found = f"{type(inner).__qualname__}:{code_hash(type(inner))}{settings}"
    with contextlib.suppress(TypeError):      # a step that cannot be weakly referenced is hashed each time
        _STEP_IDS[step] = found
    return found


class AnswerCache:
    """At most ``size`` answers; ``get``/``put`` by ``key``; emptied when the index version changes."""

    def __init__(self, size: int = 1024):
        if size < 1:
            raise ValueError(f"answer cache size {size}: must be at least 1")
        self.size, self.version = size, None
        self._entries: OrderedDict[str, object] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def key(self, assistant, question: str, user) -> str:
        groups = sorted(set(user or ()) | {PUBLIC})
        parts = {"question": normalized(question), "groups": groups, "index": assistant.retriever.index.version,
                 "mode": assistant.mode, "k": assistant.k, "threshold": assistant.threshold,
                 "refusal": assistant.refusal, "attribution": assistant.attribute is not None,
                 "guard": None if assistant.guard is None else type(assistant.guard.detector).__name__,
                 "levers": repr(assistant.retriever.levers),
                 "reranker": getattr(assistant.retriever.reranker, "name", type(assistant.retriever.reranker).__name__),
                 "generator": settings_of(assistant.generator),
                 "keyword": step_id(assistant.retriever.keyword), "fuse": step_id(assistant.retriever.fuse),
                 "rescore": step_id(assistant.retriever.rescore),
                 "check": step_id(assistant.check), "evidence": step_id(assistant.evidence)}
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=repr).encode()).hexdigest()

    def _see(self, version: str) -> None:
        if version != self.version:      # a reindex: nothing cached for the old index is served again
            self._entries.clear()
            self.version = version

    def get(self, key: str, version: str):
        """A copy of the cached answer, or None."""
        with self._lock:
            self._see(version)
            answer = self._entries.get(key)
            if answer is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return copy.deepcopy(answer)

    def put(self, key: str, version: str, answer) -> None:
        with self._lock:
            self._see(version)
            self._entries[key] = copy.deepcopy(answer)
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


class CachedAssistant:
    """An assistant whose answers are served again: ``ask`` answers from ``cache`` when it holds the key (the
    answer marked ``cached`` and traced as such), else asks ``assistant`` and keeps its answer."""

    def __init__(self, assistant, cache: AnswerCache):
        self.assistant, self.cache = assistant, cache

    def key(self, question: str, user=None) -> str:
        return self.cache.key(self.assistant, question, user)

    def cached(self, question: str, user=None):
        """The cached answer for this question and user (traced, marked ``cached``), or None."""
        started = time.perf_counter()
        answer = self.cache.get(self.key(question, user), self.assistant.retriever.index.version)
        if answer is None:
            return None
        answer.question, answer.cached = question, True
        answer.timings_ms = {"cache": round((time.perf_counter() - started) * 1000, 2)}
        self.assistant.trace_answer(answer, user, None)
        return answer

    def ask(self, question: str, user=None):
        """The cached answer, or the assistant's, kept for the next time."""
        answer = self.cached(question, user)
        if answer is None:
            answer = self.assistant.ask(question, user)
            self.cache.put(self.key(question, user), self.assistant.retriever.index.version, answer)
        return answer

