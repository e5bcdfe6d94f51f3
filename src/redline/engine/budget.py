"""How much work tolerant matching may do: a budget by size, checked before it starts.

The exact tier is a substring search and runs whatever the size. The tolerant
tiers compare old_string with the file line by line and character by
character, so their work grows with the product of the two sizes: a 10 KB
old_string against a 1 MB file once held a request for 15 s, a 100 KB one for
two minutes. :func:`estimate` counts, from the sizes alone, the character
comparisons they would make; past :data:`LIMIT` they do not run and the
request is refused (:class:`TooLarge`, whose message says what to send instead).

The count (every line of a text weighs :data:`LINE_WEIGHT` characters more than
its text, for the fixed cost of comparing two lines):

- the passes over the whole file — folding, splitting, indentation:
  :data:`PASS_WEIGHT` × size(file);
- old_string against the block it matched (new_string included):
  size(old) × size(new);
- for an old_string of several lines (or one ending in a newline): every line of
  old_string with every line of the file, size(old) × size(file), then
  old_string whole with :data:`WINDOWS` windows of its own size, WINDOWS × len(old)²;
- the merge's alignments (engine.merge, engine.tokens: difflib's SequenceMatcher in
  Python, over the lines of old_string and new_string and over the tokens of each
  line): every pair of equal elements an alignment may visit, :data:`ALIGN_WEIGHT`
  comparisons each — a line that repeats one token thousands of times (``word, word,
  ...``, a minified file) costs far more than its size says;
- for one line without a newline (a fragment of a line): a sliding alignment
  inside each line of the file, (n + m) × min(n, m)² for a line of m characters
  (n the length of old_string), then :data:`FRAGMENTS` alignments with the best
  candidates, counted at the price of the dearest line — so that one alignment,
  which holds the GIL, is never more than a small part of the budget.

On the 2-core development machine a comparison costs 0.01–0.02 ns whatever the
shape, so at :data:`LIMIT` a request takes 1–1.6 s (the target is 2 s), while a
300-line block in a 30,000-line file of code uses 42% of it
(``bench/budget_bench.py`` measures both). The engine is pure: callers may pass
another limit (``EditRequest.limit``, ``apply_hunks(limit=...)``).
"""

from __future__ import annotations

from redline.engine.records import record

LINE_WEIGHT = 16
PASS_WEIGHT = 4096
WINDOWS = 120  # up to 40 candidate starts x 3 window sizes (engine.match)
FRAGMENTS = 40  # candidate lines a fragment is aligned in (engine.match)
# one step of the merge's alignments (a dictionary look-up and a compare in Python):
# a 12,000-character line of ``word, `` counts 2.4e7 steps (in old_string and in
# new_string) and its punctuation-tier edit takes 1.5 s (bench/budget_bench.py)
ALIGN_WEIGHT = 4_000
LIMIT = 100_000_000_000  # 1.6 s for the dearest shape measured (bench/budget_bench.py)
TOO_LARGE = "too large for tolerant matching: send the exact text or a smaller block"


def size(text: str) -> int:
    """Characters, each line counting :data:`LINE_WEIGHT` more."""
    return len(text) + LINE_WEIGHT * (text.count("\n") + 1)


def _alignment(n: int, m: int) -> int:
    """Comparisons of a sliding alignment of an ``n``-character text in an ``m``-character one."""
    short = min(n, m)
    return (n + m) * short * short + LINE_WEIGHT * LINE_WEIGHT


def estimate(
    old: str,
    text: str,
    *,
    new: str = "",
    lines: list[str] | None = None,
    fuzzy: bool = True,
    limit: int = LIMIT,
) -> int:
    """Character comparisons the tolerant tiers may make matching ``old`` in ``text``.

    ``lines``: ``text`` split at its newlines, when the caller has them (only a
    one-line ``old`` needs them). ``fuzzy``: False when old_string is too short
    for the fuzzy tiers, which then do not run. Counting stops once past ``limit``.
    """
    file_size = size(text)
    work = PASS_WEIGHT * file_size + size(old) * size(new)
    if work > limit:
        return work
    work += ALIGN_WEIGHT * alignment_steps(old, new)
    if not fuzzy or work > limit:
        return work
    if "\n" in old:
        return work + size(old) * file_size + WINDOWS * len(old) * len(old)
    n = len(old)
    dearest = 0
    for line in lines if lines is not None else text.split("\n"):
        cost = _alignment(n, len(line))
        work += cost
        if work > limit:
            return work
        dearest = max(dearest, cost)
    return work + FRAGMENTS * dearest


def alignment_steps(old: str, new: str) -> int:
    """Pairs of equal elements the merge's alignments may visit: of the lines of
    ``old`` and of ``new``, and of the tokens within each of their lines (for each
    element, how often it occurs, squared — old_string is aligned with the block it
    matched, which is old_string give or take its slips, and with new_string)."""
    from collections import Counter

    from redline.engine.tokens import TOKEN  # the tolerant tiers' own; they run next

    steps = 0
    for text in (old, new):
        lines = text.split("\n")
        steps += sum(c * c for c in Counter(lines).values())
        for line in lines:
            steps += sum(c * c for c in Counter(TOKEN.findall(line)).values())
    return steps


@record(frozen=True)
class TooLarge:
    """A request past the budget: the sizes, the estimate and the limit."""

    old_chars: int
    old_lines: int
    file_chars: int
    file_lines: int
    work: int
    limit: int

    @property
    def message(self) -> str:
        return (
            f"{TOO_LARGE} (old_string: {_count(self.old_chars, 'character')} in "
            f"{_count(self.old_lines, 'line')}; the file: {_count(self.file_chars, 'character')} "
            f"in {_count(self.file_lines, 'line')}; matching them with tolerance would take "
            f"about {_power(self.work)} character comparisons, and the limit is "
            f"{_power(self.limit)})"
        )


def check(
    old: str,
    text: str,
    *,
    new: str = "",
    lines: list[str] | None = None,
    fuzzy: bool = True,
    limit: int = LIMIT,
) -> TooLarge | None:
    """None when tolerant matching of ``old`` in ``text`` fits in ``limit``."""
    work = estimate(old, text, new=new, lines=lines, fuzzy=fuzzy, limit=limit)
    if work <= limit:
        return None
    return TooLarge(len(old), _lines(old), len(text), _lines(text), work, limit)


def _lines(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _power(n: int) -> str:
    """``n`` as 1.4e12 (two significant digits)."""
    mantissa, exponent = f"{n:.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"
