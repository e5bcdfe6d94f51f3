"""Following an edit through later changes, by diff alignment. Pure: lines in, spans out.

An edit changed a file from ``before`` to ``after``. Whether a later version of
that file, ``now``, still holds it is asked as ``git merge-file`` would answer
it, position by position, with the exact bytes of each line (indentation and
line ending included):

- taking the edit back — merging ``after`` → ``before`` onto ``now`` — changes
  nothing: ``now`` *undoes* the edit (each place it changed holds the text from
  before it again);
- making the edit again — merging ``before`` → ``after`` onto ``now`` — changes
  nothing: the edit is *intact* in ``now``;
- otherwise the edit's places hold something else: rewritten since, lines
  changed next to them, or a file of another history that never had the edit;
  :func:`kept` tells apart a version that still has the edit's own lines, as
  written, at their places.

:func:`would_change` is that merge: the two diffs from the common base are
laid side by side; changes of the two sides that overlap or touch form one
region (as git's merge groups them), and a region the edit's side changes is
left as it is only when ``now`` holds exactly the edit's side's text there. The
lines that equal lines elsewhere prove nothing: ``return True`` occurs in many
files, and only its place counts.

Diffs are :class:`Hunk` lists. git-backed callers get them from libgit2 (the
xdiff git's merge uses: gitops.follow); :func:`diff` is a pure stand-in.
:func:`carry` maps line numbers through a diff (the statistics follow inserted
lines with it), :func:`touches` says whether a change reaches a span, and
:func:`similarity` pairs a moved or copied file with its source as
``git diff -M -C`` does (half the content in common).
"""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Mapping, Sequence
from typing import NamedTuple

Lines = Sequence[bytes]
SIMILAR = 0.5  # git's default rename and copy threshold (-M50%, -C50%)


class Hunk(NamedTuple):
    """One change of a diff from text ``a`` to text ``b`` (line indices from 0)."""

    a: int  # first line it replaces in ``a`` (with a_len 0: it inserts before this line)
    a_len: int
    b: int  # first line it writes in ``b`` (with b_len 0: it deleted before this line)
    b_len: int


class Span(NamedTuple):
    """Lines ``start`` to ``end`` (exclusive, from 0) of a file; when ``start == end``,
    the place before line ``start`` where lines were deleted."""

    start: int
    end: int


def split(data: bytes | None) -> list[bytes]:
    """A file's lines as git counts them: each with its ``\\n``, the last one without
    when the file does not end with one (none for a missing or empty file)."""
    if not data:
        return []
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def diff(a: Lines, b: Lines) -> list[Hunk]:
    """The changes from ``a`` to ``b`` (pure Python: the common head and tail, then
    difflib between them). git-backed callers use libgit2's instead (gitops.follow)."""
    lo = 0
    top = min(len(a), len(b))
    while lo < top and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < top - lo and a[len(a) - 1 - hi] == b[len(b) - 1 - hi]:
        hi += 1
    matcher = difflib.SequenceMatcher(None, a[lo : len(a) - hi], b[lo : len(b) - hi], False)
    return [
        Hunk(i1 + lo, i2 - i1, j1 + lo, j2 - j1)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    ]


def would_change(
    base: Lines, goal: Lines, now: Lines, to_goal: Sequence[Hunk], to_now: Sequence[Hunk]
) -> list[Span]:
    """The places of ``now`` that merging the change ``base`` → ``goal`` onto it
    (``git merge-file now base goal``) would change; empty when it would change nothing.

    ``to_goal`` and ``to_now`` are the diffs from ``base``. Changes of the two sides
    whose ``base`` lines overlap or touch form one region; in a region where ``goal``
    changed something, the merge leaves ``now`` alone only when ``now`` holds exactly
    ``goal``'s text there (both sides made the same change); elsewhere it applies
    ``goal``'s change or conflicts. Each such region is returned as it lies in ``now``.
    """
    marked = sorted(
        [(h.a, h.a + h.a_len, False, h) for h in to_now]
        + [(h.a, h.a + h.a_len, True, h) for h in to_goal],
        key=lambda item: (item[0], item[1], item[2]),
    )
    spans: list[Span] = []
    now_shift = goal_shift = 0  # lines added minus removed before the current region
    i = 0
    while i < len(marked):
        start, end, _, _ = marked[i]
        j = i
        grown_now = grown_goal = 0
        goal_side = False
        while j < len(marked) and (j == i or marked[j][0] <= end):
            _, hunk_end, theirs, hunk = marked[j]
            end = max(end, hunk_end)
            delta = hunk.b_len - hunk.a_len
            if theirs:
                goal_side = True
                grown_goal += delta
            else:
                grown_now += delta
            j += 1
        if goal_side:
            now_from = start + now_shift
            now_to = end + now_shift + grown_now
            goal_from = start + goal_shift
            goal_to = end + goal_shift + grown_goal
            if list(now[now_from:now_to]) != list(goal[goal_from:goal_to]):
                spans.append(Span(now_from, now_to))
        now_shift += grown_now
        goal_shift += grown_goal
        i = j
    return spans


def kept(to_goal: Sequence[Hunk], to_now: Sequence[Hunk]) -> bool:
    """Whether ``now`` keeps every line of ``base`` that the change to ``goal`` rewrites
    or deletes, in place, and inserts nothing where that change inserts: ``now``'s changes
    (``to_now``) delete or rewrite none of those lines (they may add lines beside or
    between them). With ``base`` the text an edit wrote and ``goal`` the text before it:
    ``now`` still has the edit's own lines as it wrote them, and keeps deleted what it
    deleted."""
    for theirs in to_goal:
        start, end = theirs.a, theirs.a + theirs.a_len
        for ours in to_now:
            o_start, o_end = ours.a, ours.a + ours.a_len
            if start == end:  # the edit deleted lines here: inserting here, or across, is not
                if (o_start == o_end == start) or o_start < start < o_end:
                    return False
            elif o_start < o_end and o_start < end and start < o_end:
                return False
    return True


def touches(spans: Sequence[Span], hunks: Sequence[Hunk]) -> bool:
    """Whether a change (``hunks`` from the text the spans are in) rewrites, deletes or
    adds next to a line of ``spans``; for a span of deleted lines, whether it changes
    the lines either side of the place or inserts there."""
    for span in spans:
        for hunk in hunks:
            if span.start == span.end or hunk.a_len == 0:
                # A point (deleted lines, an insertion): touching counts.
                if hunk.a <= span.end and span.start <= hunk.a + hunk.a_len:
                    return True
            elif hunk.a < span.end and span.start < hunk.a + hunk.a_len:
                return True
    return False


def similarity(a: Lines, b: Lines, hunks: Sequence[Hunk]) -> float:
    """How much of two texts is in common, as git scores a rename or copy: the bytes of
    the lines the diff ``hunks`` (``a`` → ``b``) keeps, over the larger size."""
    size = max(sum(map(len, a)), sum(map(len, b)))
    if not size:
        return 1.0
    changed = 0
    for hunk in hunks:
        changed += sum(len(line) for line in a[hunk.a : hunk.a + hunk.a_len])
    kept = sum(map(len, a)) - changed
    return kept / size


def carry(live: Mapping[int, int], hunks: Sequence[Hunk]) -> tuple[dict[int, int], list[int]]:
    """Carry line indices of ``a`` to ``b`` through the diff ``hunks``: the lines a hunk
    deletes or rewrites are removed (their values returned), the others move by the
    lines added and removed above them. ``live`` maps a line index now to a value kept
    along (the line's index when it was written)."""
    removed_starts: list[int] = []
    removed_ends: list[int] = []
    ends: list[int] = []  # per hunk: the first line of ``a`` after it
    shifts: list[int] = []  # ... and the shift of the lines from there on
    shift = 0
    for hunk in hunks:
        if hunk.a_len:
            removed_starts.append(hunk.a)
            removed_ends.append(hunk.a + hunk.a_len)
        shift += hunk.b_len - hunk.a_len
        ends.append(hunk.a + hunk.a_len)
        shifts.append(shift)
    kept: dict[int, int] = {}
    removed: list[int] = []
    for line, value in live.items():
        k = bisect.bisect_right(removed_starts, line) - 1
        if k >= 0 and line < removed_ends[k]:
            removed.append(value)
            continue
        m = bisect.bisect_right(ends, line) - 1
        kept[line + (shifts[m] if m >= 0 else 0)] = value
    return kept, removed


def describe(spans: Sequence[Span]) -> str:
    """Where spans are, for a person (lines from 1): ``lines 4-5``, ``line 9``,
    ``lines deleted after line 7``, joined with commas."""
    said = []
    for span in spans:
        if span.start == span.end:
            where = f"after line {span.start}" if span.start else "at the top"
            said.append(f"lines deleted {where}")
        elif span.end - span.start == 1:
            said.append(f"line {span.start + 1}")
        else:
            said.append(f"lines {span.start + 1}-{span.end}")
    return ", ".join(said) or "the whole file"
