"""The embedding precision: ``float32`` by default, ``bfloat16`` or ``auto`` for speed, ``float64`` for vectors
that are the same bytes on every CPU.

Matrix-multiply kernels differ from CPU to CPU (and with the batch's shape): AVX2, AVX-512 and AMX sum a dot
product's terms in other orders, and each order rounds differently. In float32 a vector then differs in its
last bits from one CPU to another (about 1e-7 in a component), in bfloat16 in its third decimal (6e-4);
bfloat16's difference is enough to swap two near-tied chunks, move a metric in its fourth decimal, or split a
text one sentence elsewhere, float32's shows only in a last printed digit. So the default is ``float32``: the
notebooks are executed in it, and a learner's CPU prints their numbers. ``bfloat16`` (torch autocast: matrix
multiplies in bfloat16, vectors returned as float32) is 2 to 3 times faster on a CPU with native bfloat16
arithmetic (``native_bf16``: the ``avx512_bf16`` or ``amx_bf16`` flag in ``/proc/cpuinfo``), and emulated,
so slower, elsewhere; ``auto`` picks it where it is native. In ``float64`` the forward pass carries 29 more
bits than the float32 vector it returns: the kernels' differences (about 1e-16) vanish when the result is
rounded to float32, and the vector is the same bytes on every CPU, thread count and batch, at about twice
float32's time (measured: ``evals/results/embedding-notes.md``; ``tests/stages/test_batch_invariance.py``
checks it under other kernels).

``RAGLAB_EMBED_PRECISION`` or ``precision=`` picks one. The precision is part of the embedding cache id and of
the index manifest, and an index embedded in another one is refused.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Iterable

from raglab.base import config

PRECISIONS = ("float32", "bfloat16", "float64")
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")   # x86 flags of bfloat16 arithmetic (Cooper Lake, Zen 4, Sapphire Rapids)


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> frozenset[str]:
    """The CPU feature flags the kernel reports in ``/proc/cpuinfo`` (none where it does not exist)."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


@functools.lru_cache(maxsize=1)
def _native_bf16_here() -> bool:
    return native_bf16(cpu_flags())


def native_bf16(flags: Iterable[str] | None = None) -> bool:
    """Whether a CPU with these flags (default: this one's) has native bfloat16 arithmetic.

    Read from ``/proc/cpuinfo`` rather than torch, so that it never imports torch; elsewhere (no
    ``/proc/cpuinfo``) the answer is False.

    >>> native_bf16({"avx512f", "avx512_bf16"}), native_bf16({"amx_bf16"}), native_bf16({"avx512f", "avx2"})
    (True, True, False)
    """
    if flags is None:
        return _native_bf16_here()
    return any(flag in set(flags) for flag in NATIVE_BF16_FLAGS)


def resolve_precision(precision: str | None = None, device: str = "cpu") -> str:
    """The precision to embed with: ``precision`` if given, else ``RAGLAB_EMBED_PRECISION`` (default
    ``float32``); ``auto`` is ``bfloat16`` on a CPU with native bfloat16, else ``float32``.

    >>> resolve_precision("float32"), resolve_precision("float64"), resolve_precision("auto", device="cuda")
    ('float32', 'float64', 'float32')
    """
    chosen = (precision or config.get("RAGLAB_EMBED_PRECISION")).strip().lower()
    if chosen == "auto":
        return "bfloat16" if device == "cpu" and native_bf16() else "float32"
    if chosen not in PRECISIONS:
        source = "precision" if precision else "RAGLAB_EMBED_PRECISION"
        raise ValueError(f"unknown precision {chosen!r} ({source}): choose auto, {', '.join(PRECISIONS)}")
    return chosen
