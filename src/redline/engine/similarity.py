"""Similarity measures for the fuzzy tiers, computed in rapidfuzz's C++ kernels.

Similarities are in [0, 1]: the normalised Indel similarity of ``difflib``'s
``ratio`` family, so figures are comparable with a SequenceMatcher baseline.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import repeat
from operator import contains
from types import ModuleType
from typing import Any

# numpy and rapidfuzz are imported when a tolerant tier first needs them: an
# exact edit (and the start-up of every ``redline apply``) does without them.


@cache
def _fuzz() -> ModuleType:
    from rapidfuzz import fuzz

    return fuzz


# Above this many character pairs a comparison goes through ``process.cdist``,
# which releases the GIL while it works (a direct call holds it): a long
# comparison must not stall the daemon's other threads.
_RELEASE_GIL = 1_000_000
# Cells of the line-similarity matrix computed at once (float32: 4 bytes each).
_ROWS_AT_ONCE = 4_000_000


def ratio(a: str, b: str) -> float:
    if len(a) * len(b) > _RELEASE_GIL:
        return float(ratios(a, [b])[0])
    return float(_fuzz().ratio(a, b)) / 100.0


def ratios(a: str, others: list[str]) -> Any:
    """``ratio(a, b)`` for every ``b`` in ``others`` (a numpy array), without the GIL."""
    import numpy as np
    from rapidfuzz import fuzz, process

    scores = process.cdist([a], others, scorer=fuzz.ratio, dtype=np.float64, workers=1)
    return scores[0] / 100.0


@dataclass(frozen=True)
class LineScores:
    """What the fuzzy tiers need of the similarity of every old line with every file line.

    ``best``: for each file line, its best similarity to any old line.
    ``means``: entry i is the mean similarity of old line k with file line i + k
    (the block of old_string's line count starting at file line i); empty when
    the file has fewer lines than old_string.
    """

    best: Any
    means: Any


def line_scores(
    old_lines: list[str], file_lines: list[str], file_tabs: bool | None = None
) -> LineScores:
    """Similarity of every old line with every file line (raw and tab-expanded), reduced.

    Computed a group of old lines at a time, so that the whole matrix (old lines
    x file lines) is never held at once. ``file_tabs``: False when the caller knows
    the file holds no tab (else its lines are looked through for one).
    """
    import numpy as np

    old = [line.rstrip() for line in old_lines]
    new = list(map(str.rstrip, file_lines))  # a file's 100,000 lines: kept out of Python's loop
    tabs = any("\t" in line for line in old) or (
        file_tabs is not False and any(map(contains, new, repeat("\t")))
    )
    n, total = len(old), len(new)
    starts = max(0, total - n + 1)
    best = np.zeros(total, dtype=np.float32)
    acc = np.zeros(starts, dtype=np.float32)
    rows = max(1, _ROWS_AT_ONCE // max(1, total))
    for r0 in range(0, n, rows):
        group = _line_matrix(old[r0 : r0 + rows], new, tabs)
        np.maximum(best, group.max(axis=0), out=best)
        for k, row in enumerate(group, start=r0):
            acc += row[k : k + starts]
    return LineScores(best, acc / np.float32(n) if starts else acc)


def _line_matrix(old: list[str], new: list[str], tabs: bool) -> Any:
    import numpy as np
    from rapidfuzz import fuzz, process

    scores = process.cdist(old, new, scorer=fuzz.ratio, dtype=np.float32, workers=1)
    if tabs:
        expanded = process.cdist(
            [line.expandtabs(4) for line in old],
            [line.expandtabs(4) for line in new],
            scorer=fuzz.ratio,
            dtype=np.float32,
            workers=1,
        )
        np.maximum(scores, expanded, out=scores)
    scores /= np.float32(100.0)
    return scores


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
