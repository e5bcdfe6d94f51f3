"""Similarity measures: the batched and GIL-free forms give the direct forms' numbers."""

from __future__ import annotations

import random

import numpy as np
import pytest
from rapidfuzz import fuzz, process

from redline.engine import similarity


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(["a", "bb", "ccc", "x = 1", "\t", "()", ""]) for _ in range(n))


def test_ratio_is_the_same_through_cdist() -> None:
    rng = random.Random(3)
    long_a, long_b = words(rng, 800), words(rng, 900)
    assert len(long_a) * len(long_b) > similarity._RELEASE_GIL  # goes through cdist
    assert similarity.ratio(long_a, long_b) == fuzz.ratio(long_a, long_b) / 100.0
    others = [words(rng, k) for k in range(1, 30)]
    assert [float(x) for x in similarity.ratios(long_a, others)] == [
        fuzz.ratio(long_a, b) / 100.0 for b in others
    ]


def test_line_scores_reduce_the_whole_matrix(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(5)
    old = [words(rng, rng.randint(0, 6)) for _ in range(7)]
    lines = [words(rng, rng.randint(0, 6)) for _ in range(60)]
    matrix = np.maximum(
        process.cdist(
            [x.rstrip() for x in old], [y.rstrip() for y in lines],
            scorer=fuzz.ratio, dtype=np.float32,
        ),
        process.cdist(
            [x.rstrip().expandtabs(4) for x in old], [y.rstrip().expandtabs(4) for y in lines],
            scorer=fuzz.ratio, dtype=np.float32,
        ),
    ) / np.float32(100.0)  # fmt: skip
    starts = len(lines) - len(old) + 1
    expected_means = np.zeros(starts, dtype=np.float32)
    for k in range(len(old)):
        expected_means += matrix[k, k : k + starts]
    expected_means /= np.float32(len(old))
    # A few old lines at a time, as for a large request: the same numbers.
    monkeypatch.setattr(similarity, "_ROWS_AT_ONCE", 2 * len(lines))
    scores = similarity.line_scores(old, lines)
    assert np.array_equal(scores.best, matrix.max(axis=0))
    assert np.array_equal(scores.means, expected_means)
    assert len(similarity.line_scores(old, lines[:3]).means) == 0


def test_a_file_known_to_hold_no_tab_scores_as_one_looked_through() -> None:
    rng = random.Random(8)
    old = [words(rng, rng.randint(0, 6)).replace("\t", "") for _ in range(4)]
    lines = [words(rng, rng.randint(0, 6)).replace("\t", "") for _ in range(50)]
    told, looked = similarity.line_scores(old, lines, False), similarity.line_scores(old, lines)
    assert np.array_equal(told.best, looked.best)
    assert np.array_equal(told.means, looked.means)
