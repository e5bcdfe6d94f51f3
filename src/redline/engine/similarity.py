"""Similarity measures for the fuzzy tiers, computed in rapidfuzz's C++ kernels.

Similarities are in [0, 1]: the normalised Indel similarity of ``difflib``'s
``ratio`` family, so figures are comparable with a SequenceMatcher baseline.
"""

from __future__ import annotations

from functools import cache
from types import ModuleType
from typing import Any

# numpy and rapidfuzz are imported when a tolerant tier first needs them: an
# exact edit (and the start-up of every ``redline apply``) does without them.

Matrix = Any  # numpy array of shape (len(old_lines), len(file_lines)), values in [0, 1]


@cache
def _fuzz() -> ModuleType:
    from rapidfuzz import fuzz

    return fuzz


def ratio(a: str, b: str) -> float:
    return float(_fuzz().ratio(a, b)) / 100.0


def line_matrix(old_lines: list[str], file_lines: list[str]) -> Matrix:
    """Similarity of every old line with every file line (raw and tab-expanded)."""
    import numpy as np
    from rapidfuzz import fuzz, process

    old = [line.rstrip() for line in old_lines]
    new = [line.rstrip() for line in file_lines]
    scores = process.cdist(old, new, scorer=fuzz.ratio, dtype=np.float32, workers=1)
    if any("\t" in line for line in old) or any("\t" in line for line in new):
        expanded = process.cdist(
            [line.expandtabs(4) for line in old],
            [line.expandtabs(4) for line in new],
            scorer=fuzz.ratio,
            dtype=np.float32,
            workers=1,
        )
        scores = np.maximum(scores, expanded)
    return scores / np.float32(100.0)


def block_means(matrix: Matrix) -> Any:
    """Mean of the diagonal starting at each file line: entry i scores block ``i..i+n``."""
    import numpy as np

    n, total = matrix.shape
    starts = total - n + 1
    if starts <= 0:
        return np.zeros(0, dtype=np.float32)
    acc = np.zeros(starts, dtype=np.float32)
    for k in range(n):
        acc += matrix[k, k : k + starts]
    return acc / np.float32(n)


def best_line_hits(matrix: Matrix) -> Any:
    """For each file line, its best similarity to any old line."""
    return matrix.max(axis=0)


def window_means(values: Any, size: int) -> Any:
    """Mean of ``values`` over each window of ``size`` consecutive entries."""
    import numpy as np

    if size <= 0 or len(values) < size:
        return np.zeros(0, dtype=np.float32)
    sums = np.concatenate(([0.0], np.cumsum(values, dtype=np.float64)))
    return (sums[size:] - sums[:-size]) / size


def partial_scores(needle: str, lines: list[str]) -> Any:
    """How well ``needle`` fits inside each line (best substring alignment)."""
    import numpy as np
    from rapidfuzz import fuzz, process

    scores = process.cdist([needle], lines, scorer=fuzz.partial_ratio, dtype=np.float32, workers=1)
    return scores[0] / np.float32(100.0)


def partial_alignment(needle: str, haystack: str) -> tuple[int, int, float]:
    """The span of ``haystack`` that best matches ``needle`` and its similarity."""
    found = _fuzz().partial_ratio_alignment(needle, haystack)
    if found is None:
        return 0, 0, 0.0
    return found.dest_start, found.dest_end, float(found.score) / 100.0
