"""The course baseline is the course's code: its BM25 class, dense search and RRF, transcribed from the
course text (milestones 2 and 3) and run on the same chunks, give the same rankings."""
import math
import re
from collections import Counter

import numpy as np
import pytest

from raglab.evaluation.baseline import CourseBaseline, course_tokenize

pytestmark = pytest.mark.slow      # builds a float32 index of the small profile's words chunks

TOKEN = re.compile(r"[a-z0-9_]+")


def tokenize(s):                                            # the course's, verbatim
    return TOKEN.findall(s.lower())


class CourseBM25:
    """The course's BM25 class, verbatim except that ``search`` returns rows (the course returns ids)."""

    def __init__(self, texts, k1=1.5, b=0.75):
        self.k1, self.b = k1, b
        self.tf = [Counter(tokenize(t)) for t in texts]
        self.len = [sum(c.values()) for c in self.tf]
        self.N, self.avgdl = len(texts), sum(self.len) / len(texts)
        df = Counter(term for c in self.tf for term in c)
        self.idf = {t: math.log(1 + (self.N - n + 0.5) / (n + 0.5)) for t, n in df.items()}

    def scores(self, query):
        q = tokenize(query)
        out = []
        for tf, dl in zip(self.tf, self.len):
            norm = self.k1 * (1 - self.b + self.b * dl / self.avgdl)
            out.append(sum(self.idf[t] * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in q if t in tf))
        return np.array(out)


def course_rrf(rankings, k=60, top_n=6):                    # the course's, verbatim
    score = Counter()
    for ranked in rankings:
        for rank, doc_id in enumerate(ranked, start=1):
            score[doc_id] += 1.0 / (k + rank)
    return [d for d, _ in score.most_common(top_n)]


QUERIES = ["How do I pretty-print JSON with an indent?", "Which exception does json.loads raise?",
           "default value of the timeout argument", "__init__ of a dataclass", "os.path.join with absolute path"]


@pytest.fixture(scope="module")
def baseline():
    return CourseBaseline("python-docs", "small")


def test_it_is_float32_words_150_30(baseline):
    m = baseline.index.manifest
    assert m["chunking"] == {"strategy": "words", "size": 150, "overlap": 30, "prefix": False}
    assert m["precision"] == "float32" and baseline.embedder.precision == "float32"
    assert course_tokenize("os.path.join(__init__)") == ["os", "path", "join", "__init__"]


@pytest.mark.parametrize("query", QUERIES)
def test_bm25_scores_are_the_course_class_scores(baseline, query):
    course = CourseBM25([c.text for c in baseline.index.chunks])
    ours = baseline.bm25.scores(query)
    assert ours == pytest.approx(course.scores(query), rel=1e-9, abs=1e-12)
    expected = course.scores(query)
    top = [r for r in baseline.keyword(query)]
    assert len(top) == min(20, int((expected > 0).sum()))
    assert sorted(expected[top], reverse=True) == pytest.approx(sorted(expected, reverse=True)[:len(top)])


@pytest.mark.parametrize("query", QUERIES)
def test_hybrid_is_the_course_rrf_of_its_dense_and_bm25_lists(baseline, query):
    dense, keyword = baseline.dense(query), baseline.keyword(query)
    vectors = baseline.embedder.encode([c.indexed_text for c in baseline.index.chunks], progress=False)
    cos = vectors @ baseline.embedder.encode_query(query)
    assert set(dense) == set(np.argsort(-cos)[:20].tolist())
    expected = course_rrf([dense, keyword], top_n=10)
    assert [baseline.index.row_of[h.id] for h in baseline.search(query, "hybrid", 10)] == expected
