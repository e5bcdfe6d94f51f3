"""Which lines of a file an earlier edit wrote, and whether a later change rewrites them.

Pure: texts in, line numbers out. An edit that rewrites the lines a flagged,
unapproved edit inserted would launder it — the flagged lines leave the diff
and the rewrite, exact, passes — so such an edit carries the earlier flag
(gitops.carried finds the earlier edits, the guard clears the flag when they
are approved). Lines are compared whole; only significant ones count, as in
the guard: a ``}`` or a blank line proves nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

# Lines shorter than this or made only of punctuation ("}", "end", "") prove nothing.
MIN_SIGNIFICANT = 4


def significant(line: str) -> bool:
    """Whether ``line`` (stripped) is long enough and has a letter or digit."""
    return len(line) >= MIN_SIGNIFICANT and any(c.isalnum() for c in line)


def lines(data: bytes | None) -> list[str]:
    """The stripped lines of a file's bytes (none for a missing file)."""
    if data is None:
        return []
    return [line.strip() for line in data.decode("utf-8", errors="replace").splitlines()]


def inserted(before: Sequence[str], after: Sequence[str]) -> set[int]:
    """Indices of the significant lines of ``after`` that the change ``before`` → ``after``
    inserted or rewrote."""
    found: set[int] = set()
    for tag, _, _, j1, j2 in _opcodes(before, after):
        if tag in ("replace", "insert"):
            found.update(j for j in range(j1, j2) if significant(after[j]))
    return found


def followed(indices: set[int], old: Sequence[str], new: Sequence[str]) -> set[int]:
    """Where the lines ``old[i]`` for ``i`` in ``indices`` are in ``new``, unchanged."""
    if not indices:
        return set()
    found: set[int] = set()
    for tag, i1, i2, j1, _ in _opcodes(old, new):
        if tag == "equal":
            found.update(j1 + (i - i1) for i in range(i1, i2) if i in indices)
    return found


def rewritten(before: Sequence[str], after: Sequence[str]) -> set[int]:
    """Indices of the lines of ``before`` that the change ``before`` → ``after`` replaced
    or deleted."""
    found: set[int] = set()
    for tag, i1, i2, _, _ in _opcodes(before, after):
        if tag in ("replace", "delete"):
            found.update(range(i1, i2))
    return found


def _opcodes(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    # The common head and tail are cut first: an edit changes a small part of a file.
    lo = 0
    top = min(len(a), len(b))
    while lo < top and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < top - lo and a[len(a) - 1 - hi] == b[len(b) - 1 - hi]:
        hi += 1
    codes: list[tuple[str, int, int, int, int]] = []
    if lo:
        codes.append(("equal", 0, lo, 0, lo))
    middle = difflib.SequenceMatcher(None, a[lo : len(a) - hi], b[lo : len(b) - hi], False)
    codes += [(t, i1 + lo, i2 + lo, j1 + lo, j2 + lo) for t, i1, i2, j1, j2 in middle.get_opcodes()]
    if hi:
        codes.append(("equal", len(a) - hi, len(a), len(b) - hi, len(b)))
    return codes
