"""When two runs of a notebook cell printed the same thing up to floating-point noise.

A notebook's committed outputs are compared with a new run's (nbval). In one precision on another CPU, the
float32 arithmetic (the embedding's matrix multiplies, FAISS's and BLAS's dot products, their kernels chosen by
the CPU) may end a score in another last bit, about 1e-7: printed with four decimals, a score that lies that
close to a rounding boundary shows one unit more or less in its last digit. Two outputs agree when their text is the same and each number differs from its counterpart by at
most one unit in its last printed decimal; a count, a ranking, a name, a word or any larger change still
differs.
"""
from __future__ import annotations

import re
from decimal import Decimal

NUMBER = re.compile(r"-?\d+\.\d+")


def agree(reference: str, new: str) -> bool:
    """Whether ``new`` is ``reference`` with decimal numbers at most one unit off in their last printed digit.

    >>> agree("MRR 0.4372, recall 0.81", "MRR 0.4373, recall 0.81"), agree("MRR 0.4372", "MRR 0.4369")
    (True, False)
    >>> agree("904 chunks", "903 chunks"), agree("0.50", "0.5"), agree("-0.001 [-0.12, 0.10]", "0.000 [-0.12, 0.10]")
    (False, False, True)
    """
    if reference == new:
        return True
    ref_numbers, new_numbers = NUMBER.findall(reference), NUMBER.findall(new)
    if NUMBER.split(reference) != NUMBER.split(new) or len(ref_numbers) != len(new_numbers):
        return False
    return all(_one_unit_apart(a, b) for a, b in zip(ref_numbers, new_numbers))


def _one_unit_apart(a: str, b: str) -> bool:
    """Two printed decimals with as many decimal places, at most one unit of the last place apart."""
    places = len(a.split(".")[1])
    if len(b.split(".")[1]) != places:
        return False
    return abs(Decimal(a) - Decimal(b)) <= Decimal(1).scaleb(-places)
