"""The library's seams where a learner's function replaces a stage (``raglab.course.exercises.stage``
wires them in the notebooks; the retriever's and the assistant's are the course layer's, tested in
tests/course/test_stages.py; the chunker's word windows are tests/book/test_chunkers.py's): each gives
raglab's own result for a correct function, carries a buggy one's bug through to the result, and refuses
output it cannot lay back onto the index."""
import random
from types import SimpleNamespace

import numpy as np
import pytest

from raglab.book.memory_index import access_mask, rule_mask


def test_a_learners_access_rule_gives_the_mask_and_bad_rows_are_refused():
    rng = random.Random(3)
    groups = ["public", "premium", "staff"]
    chunks = [SimpleNamespace(access=tuple(rng.sample(groups, rng.randint(1, 2)))) for _ in range(50)]

    def by_sets(access, user):
        return [i for i, a in enumerate(access) if set(a) & (set(user) | {"public"})]

    for user in [None, ("premium",), ("staff", "premium")]:
        assert np.array_equal(rule_mask(chunks, user, by_sets), access_mask(chunks, user))
    forgets_public = rule_mask(chunks, None, lambda access, user: [i for i, a in enumerate(access) if set(a) & user])
    assert not forgets_public.any()
    with pytest.raises(ValueError, match="not a row number from 0 to 49"):
        rule_mask(chunks, None, lambda access, user: [50])
