"""The workbook's exercises: self-checks that print pass or fail with the reason, and the student's own code.

Every exercise in a notebook is two cells: the student's answer (between ``### BEGIN SOLUTION`` and
``### END SOLUTION`` in the instructor's notebook; ``raglab release`` blanks it for students) and a
self-check::

    check("1. Fit the model", lambda: (over <= 0.10, f"{over:.1%} of the chunks are over 256 tokens"))

``check`` prints ``PASS`` or ``FAIL`` with the reason and raises ``AssertionError`` on a fail, so the
autograder (nbgrader) scores the cell by whether it raised. An answer not written yet (the blank's
``NotImplementedError``, or a name it never set) is a fail that says so.

Where a milestone's own code is the exercise (the chunker, BM25, RRF, the citation check, recall and
MRR...), ``yours_or_library`` lets the cells below run on raglab's version until the student's works, and
``own_work`` is the autograder's hidden test that a "solution" is not merely raglab's function called.
"""
from __future__ import annotations

import contextlib
import inspect
import sys
import types
from typing import Callable
from unittest import mock

NOT_DONE = (NotImplementedError, NameError)


def _outcome(test: Callable[[], tuple[bool, str]]) -> tuple[bool, str]:
    try:
        ok, why = test()
    except NotImplementedError as exc:
        return False, f"not done yet ({exc or 'the answer cell above still raises NotImplementedError'})"
    except NameError as exc:
        return False, f"not done yet: {exc} (run the answer cell above first)"
    except Exception as exc:                      # the student's code failed: say how, in one line
        return False, f"{type(exc).__name__}: {exc}"
    return bool(ok), str(why)


def check(title: str, test: Callable[[], tuple[bool, str]]) -> None:
    """Run one self-check: print ``PASS title: why`` or ``FAIL title: why``; a fail raises AssertionError.

    >>> check("demo", lambda: (1 + 1 == 2, "arithmetic holds"))
    PASS  demo: arithmetic holds
    >>> check("demo", lambda: undefined_name > 0)
    Traceback (most recent call last):
    AssertionError: FAIL  demo: not done yet: name 'undefined_name' is not defined (run the answer cell above first)
    """
    ok, why = _outcome(test)
    line = f"{'PASS' if ok else 'FAIL'}  {title}: {why}"
    if not ok:
        raise AssertionError(line)
    print(line)


def yours_or_library(yours: Callable, library: Callable, *probe, **probe_kw) -> Callable:
    """The student's function if it runs on the probe arguments, else raglab's, saying which is used,
    so the cells below still run (and the milestone still renders) while an exercise is blank."""
    try:
        yours(*probe, **probe_kw)
    except NOT_DONE:
        print(f"`{yours.__name__}` is not written yet: the cells below use raglab's `{library.__name__}`.")
        return library
    except Exception as exc:
        print(f"`{yours.__name__}` failed ({type(exc).__name__}: {exc}): the cells below use raglab's "
              f"`{library.__name__}`.")
        return library
    print(f"the cells below use your `{yours.__name__}`.")
    return yours


def own_work(fn: Callable, *library: Callable, probe: Callable[[], object] | None = None) -> tuple[bool, str]:
    """Whether ``fn`` does the work itself rather than calling the raglab function(s) it replaces.

    Two checks: what the function's code refers to (a raglab function among ``library``, or the
    attribute of that name on a raglab module), and, with ``probe``, a run with those functions
    replaced by ones that raise (a wrapper that hides the call behind another name is caught here).
    """
    if getattr(fn, "__module__", None) != "__main__":
        return False, f"`{getattr(fn, '__name__', fn)}` is {fn!r}, not a function written in the notebook"
    found = _refers_to_library(fn, library, {getattr(f, "__name__", "") for f in library}, depth=3)
    if found:
        return False, found
    if probe is not None:
        with _library_disabled(library):
            try:
                probe()
            except _LibraryCalled as exc:
                return False, f"`{fn.__name__}` reaches raglab's `{exc}` when it runs, instead of doing the work"
    return True, f"`{fn.__name__}` does the work itself"


def _refers_to_library(fn, library: tuple, names: set[str], depth: int) -> str | None:
    """Why ``fn`` (or a notebook function it calls, ``depth`` levels down) reaches the library, or None."""
    try:
        refs = inspect.getclosurevars(fn)
    except TypeError:
        return f"`{fn!r}` is not a plain function"
    for name, value in {**refs.globals, **refs.nonlocals}.items():
        if any(value is f for f in library):
            return f"`{fn.__name__}` calls raglab's `{value.__name__}` (as `{name}`) instead of doing the work"
        if isinstance(value, types.ModuleType) and value.__name__.split(".")[0] == "raglab" \
                and names & set(refs.unbound):
            return f"`{fn.__name__}` calls raglab's `{sorted(names & set(refs.unbound))[0]}` (through `{name}`) " \
                   "instead of doing the work"
        if depth and isinstance(value, types.FunctionType) and value is not fn \
                and getattr(value, "__module__", None) == fn.__module__:
            deeper = _refers_to_library(value, library, names, depth - 1)
            if deeper:
                return f"`{fn.__name__}` calls `{value.__name__}`, and " + deeper
    return None


class _LibraryCalled(RuntimeError):
    pass


@contextlib.contextmanager
def _library_disabled(library: tuple):
    """Replace each library function, wherever a raglab module holds it, by one that raises."""
    patches = []
    for f in library:
        def raiser(*a, _name=f.__name__, **k):
            raise _LibraryCalled(_name)
        for mod in list(sys.modules.values()):
            name = getattr(mod, "__name__", "") if isinstance(mod, types.ModuleType) else ""
            if name.split(".")[0] == "raglab" or name == "__main__":     # raglab, and aliases in the notebook
                for attr, value in list(vars(mod).items()):
                    if value is f:
                        patches.append(mock.patch.object(mod, attr, raiser))
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        yield


def summary(*points: str):
    """The milestone's summary as a Markdown list (each point a sentence with the run's numbers)."""
    from IPython.display import Markdown

    return Markdown("\n".join(f"- {p}" for p in points))
