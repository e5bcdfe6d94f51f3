"""What to tell a model whose old_string was not found."""

from __future__ import annotations

from difflib import SequenceMatcher

from redline.engine import budget, similarity
from redline.engine.errors import MergeConflict
from redline.engine.match import FileView, Span

NOT_FOUND = "old_string not found in file"
_LINE_LEVEL = 0.6  # lines this similar count as the same line, edited
_MAX_SHOWN = 6
_NEAREST_FLOOR = 0.5  # below this, a "nearest block" would only mislead
_CHANGES_DRIFTED = "the edit changes a line that differs in the file"


def not_found(
    view: FileView,
    old: str,
    nearest: Span | None,
    conflict: MergeConflict | None = None,
    limit: int = budget.LIMIT,
) -> str:
    """The not-found message: the nearest block, or where to re-read.

    ``conflict``: the nearest block was similar enough, but the edit would change
    text that differs in the file, so it was not applied. The lines that differ
    are listed only when comparing old_string with the block fits in ``limit``
    (the tolerant budget, :mod:`redline.engine.budget`); otherwise the message
    gives the block's place to re-read.
    """
    if nearest is None or nearest.score < _NEAREST_FLOOR:
        return (
            f"{NOT_FOUND}. Nothing in the file resembles it closely; read the file and copy "
            "old_string from its current text (whitespace, punctuation and small slips are "
            "tolerated)."
        )
    first = view.line_of(nearest.start)
    last = view.line_of(max(nearest.start, nearest.end - 1))
    block = view.lines[first : last + 1]
    old_lines = old.rstrip("\n").split("\n")
    fits = budget.check(old, "\n".join(block), limit=limit) is None
    differing = _differing(old_lines, block, first) if fits else None
    where = f"lines {first + 1}-{last + 1}" if last > first else f"line {first + 1}"
    header = f"{NOT_FOUND}. Nearest block: {where} (similarity {nearest.score:.2f})"
    if differing is not None and differing:
        shown = differing[:_MAX_SHOWN]
        more = len(differing) - len(shown)
        body = "\n".join(shown) + (f"\n  ... and {more} more" if more > 0 else "")
        why = ""
        if conflict is not None:
            why = f"; it was not used because {conflict.reason or _CHANGES_DRIFTED}"
        return (
            f"{header}{why}; these lines differ (old_string vs file):\n{body}\n"
            "Copy these lines from the file as they are now and retry."
        )
    if conflict is not None and conflict.reason:
        return (
            f"{header}; it was not used because {conflict.reason}. Re-read that region "
            f"(offset={first + 1}, limit={last - first + 1}) and copy old_string from it exactly."
        )
    return (
        f"{header}, but whole lines differ. Re-read that region (offset={first + 1}, "
        f"limit={last - first + 1}) and retry with its current text, or use a smaller "
        "anchor of 2-4 distinctive lines."
    )


def _differing(old_lines: list[str], block: list[str], first: int) -> list[str] | None:
    """Pairs of differing lines, or None when the difference is not line-for-line."""
    out: list[str] = []
    matcher = SequenceMatcher(None, old_lines, block, False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace" or i2 - i1 != j2 - j1:
            return None
        for i, j in zip(range(i1, i2), range(j1, j2), strict=True):
            if similarity.ratio(old_lines[i], block[j]) < _LINE_LEVEL:
                return None
            out.append(f"  old_string line {i + 1}: {old_lines[i]!r}")
            out.append(f"  file line {first + j + 1}: {block[j]!r}")
    return out
