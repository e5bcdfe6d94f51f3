"""The edit-tool benchmark corpus: realistic edit cases cut from the stdlib.

Deterministic for a given Python installation (fixed seeds, fixed file list).
Each :class:`~casekit.Case` carries the file bytes, the request, and either the
exact expected new bytes (computed by position on the original file, never from
a tool's output) or the refusal statuses a careful tool returns.

    python bench/corpus.py            # list categories and case counts
    python bench/corpus.py --show N   # print case N (old/new/expected diff)
"""

from __future__ import annotations

import argparse
import difflib
import random
from collections import Counter
from collections.abc import Callable

import cases_batch
import cases_exact
import cases_fuzzy
import cases_refuse
import cases_tolerant
from casekit import Attempt, Case, collect
from sources import Source, load_sources

SEED = 20240611
PER_CATEGORY = 20
QUICK_PER_CATEGORY = 5


def _fixed(attempt: Attempt) -> Callable[[list[Source]], Attempt]:
    return lambda _pool: attempt


# category -> attempt factory (given the source pool); table order.
CATEGORIES: dict[str, Callable[[list[Source]], Attempt]] = {
    "exact": _fixed(cases_exact.exact),
    "indent_drift": _fixed(cases_tolerant.indent_drift),
    "trailing_spaces": _fixed(cases_tolerant.trailing_spaces),
    "tabs": _fixed(cases_tolerant.tabs),
    "curly_quotes": _fixed(cases_tolerant.curly_quotes),
    "cjk_punctuation": _fixed(cases_tolerant.cjk_punctuation),
    "typo_unchanged_line": _fixed(cases_fuzzy.typo_unchanged_line),
    "typo_changed_line": _fixed(cases_fuzzy.typo_changed_line),
    "typo_echoed": _fixed(cases_fuzzy.typo_echoed),
    "stale_other_line": _fixed(cases_fuzzy.stale_other_line),
    "stale_same_line": _fixed(cases_fuzzy.stale_same_line),
    "crlf": _fixed(cases_exact.crlf),
    "mixed_endings": _fixed(cases_exact.mixed_endings),
    "zero_width": _fixed(cases_exact.zero_width),
    "duplicate": _fixed(cases_refuse.duplicate),
    "absent": cases_refuse.absent_attempt,
    "replace_all": _fixed(cases_exact.replace_all),
    "batch": _fixed(cases_batch.batch),
    "batch_failing": cases_batch.batch_failing_attempt,
}


def build_corpus(
    quick: bool = False, per_category: int | None = None, only: set[str] | None = None
) -> list[Case]:
    n = per_category or (QUICK_PER_CATEGORY if quick else PER_CATEGORY)
    sources = load_sources()
    cases: list[Case] = []
    for category, factory in CATEGORIES.items():
        if only and category not in only:
            continue
        rng = random.Random(f"{SEED}:{category}")
        cases.extend(collect(category, n, sources, rng, factory(sources)))
    return cases


def describe(case: Case) -> str:
    """Human-readable dump of one case: request items and the expected diff."""
    out = [f"# {case.name}", f"category={case.category} batch={case.request.batch}"]
    for k, item in enumerate(case.request.edits):
        out.append(f"--- item {k} replace_all={item.replace_all}")
        out.append(f"old_string:\n{item.old_string!r}\nnew_string:\n{item.new_string!r}")
    if case.expected is None:
        out.append(f"expected refusal: {sorted(case.refuse) or 'any status but applied'}")
    else:
        before = case.data.decode("utf-8").splitlines(keepends=True)
        after = case.expected.decode("utf-8").splitlines(keepends=True)
        diff = difflib.unified_diff(before, after, "file", "expected", n=1)
        out.append("".join(repr(line)[1:-1] + "\n" for line in diff))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--show", type=int, nargs="*", help="print these case indices")
    parser.add_argument("--category", action="append", help="only these categories")
    args = parser.parse_args()
    cases = build_corpus(args.quick, only=set(args.category) if args.category else None)
    if args.show is not None:
        for k in args.show:
            print(describe(cases[k]))
        return
    for category, count in Counter(c.category for c in cases).items():
        print(f"{category:22} {count}")
    print(f"{'total':22} {len(cases)}")


if __name__ == "__main__":
    main()
