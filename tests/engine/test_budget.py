"""The tolerant budget: what it counts, where it stops the tolerant tiers, what it says."""

from __future__ import annotations

import time

import pytest

from perturbations import code, with_slip
from redline.engine import budget
from redline.engine.budget import LIMIT, TOO_LARGE, estimate
from redline.engine.diagnose import not_found
from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit
from redline.engine.hunks import HunkError, apply_hunks
from redline.engine.match import FileView, Span, match_chain
from redline.engine.patch_parse import Hunk, HunkLine

# --- the count --------------------------------------------------------------------------------


def test_the_estimate_grows_with_both_sizes() -> None:
    small, large = code(10), code(1000)
    assert estimate(small, large) > estimate(small, code(100))
    assert estimate(large, large) > 50 * estimate(small, large)


def test_a_line_weighs_more_than_its_characters() -> None:
    # 1,000 lines of one character cost more to compare than one line of 2,000.
    assert budget.size("x\n" * 1000) > budget.size("x" * 2000)
    assert estimate("a\n" * 300, "b\n" * 10_000) > estimate("a" * 600 + "\n", "b" * 20_000)


def test_a_one_line_old_string_is_priced_by_the_lines_it_is_aligned_in() -> None:
    fragment = "compute(alpha_5, beta_5)"
    short_lines = code(1000)
    one_long_line = short_lines.replace("\n", " ")

    def alignments(text: str) -> int:
        passes = budget.PASS_WEIGHT * budget.size(text) + budget.size(fragment) * budget.size("")
        return estimate(fragment, text) - passes

    # Aligned inside each line: a long line costs far more than many short ones.
    assert alignments(one_long_line) > 10 * alignments(short_lines)


def test_an_old_string_too_short_for_the_fuzzy_tiers_costs_only_the_passes() -> None:
    text = code(1000)
    passes = budget.PASS_WEIGHT * budget.size(text)
    aligned = budget.ALIGN_WEIGHT * budget.alignment_steps("x = 1", "")
    assert estimate("x = 1", text, fuzzy=False) == (
        passes + budget.size("x = 1") * budget.size("") + aligned
    )


def test_a_line_that_repeats_its_tokens_is_priced_by_the_merges_alignments() -> None:
    # The merge aligns a line token by token in Python: each pair of equal tokens is a
    # step, so a line of one token repeated costs the square of its repetitions.
    # "a b": one line, three tokens; "": one (empty) line, no token.
    assert budget.alignment_steps("a b", "") == (1 + 3) + 1
    line = "word, " * 1000  # 3,000 tokens of three kinds
    assert budget.alignment_steps(line, "") == (1 + 3 * 1000**2) + 1
    assert budget.alignment_steps(line, line) == 2 * (1 + 3 * 1000**2)
    # An ordinary block of code costs next to nothing by it...
    block = "".join(code(300))
    assert budget.ALIGN_WEIGHT * budget.alignment_steps(block, block) < LIMIT // 100
    # ...while a 20,000-character line of `word, ` is past the limit by it alone, far
    # past what its size says (a punctuation-tier edit of it took 4 s in the merge).
    long_line = "word, " * 3333
    assert budget.size(long_line) ** 2 < LIMIT // 100
    assert budget.ALIGN_WEIGHT * budget.alignment_steps(long_line, long_line) > LIMIT


def test_check_names_the_sizes_and_the_limit() -> None:
    old, text = code(3000), code(30_000)
    over = budget.check(old, text)
    assert over is not None
    assert over.work > LIMIT
    message = over.message
    assert message.startswith(TOO_LARGE)
    assert f"old_string: {len(old):,} characters in 3,000 lines" in message
    assert f"the file: {len(text):,} characters in 30,000 lines" in message
    assert "the limit is 1.0e11" in message
    assert budget.check(code(30), text) is None


# --- the match chain --------------------------------------------------------------------------


def test_past_the_limit_the_tolerant_tiers_do_not_run() -> None:
    text = code(50)
    old = "  " + code(3, start=20).replace("    ", "  ")  # re-indented: the whitespace tier
    view = FileView(text)
    assert match_chain(view, old, 0.8).match_type == "whitespace"
    work = estimate(old, text)
    refused = match_chain(FileView(text), old, 0.8, limit=work - 1)
    assert refused.match_type is None
    assert refused.too_large is not None
    assert refused.too_large.work == work
    assert match_chain(FileView(text), old, 0.8, limit=work).match_type == "whitespace"


def test_an_exact_match_of_any_size_ignores_the_budget() -> None:
    text = code(40_000)
    old = text[len(text) // 4 : len(text) // 2]  # 400 KB
    found = match_chain(FileView(text), old, 0.8, limit=0)
    assert found.match_type == "exact"
    assert found.too_large is None


# --- the edit tool ------------------------------------------------------------------------


def edit(text: str, old: str, new: str, replace_all: bool = False) -> EditOutcome:
    request = EditRequest("big.py", (EditItem(old, new, replace_all),))
    return apply_edit(text.encode(), request)


def test_a_large_tolerant_edit_is_refused_at_once_with_what_to_send() -> None:
    text = code(25_000)  # 1.4 MB
    old = with_slip(text[: len(text) // 10])  # 140 KB, one character dropped
    started = time.perf_counter()
    outcome = edit(text, old, old.replace("alpha_1,", "ALPHA_1,"))
    assert time.perf_counter() - started < 5  # 110 s before the budget
    assert outcome.data is None
    result = outcome.result
    assert result.status == "no_match"
    assert result.error is not None
    assert result.error.startswith("old_string not found in file exactly, and " + TOO_LARGE)
    assert f"old_string: {len(old):,} characters" in result.error
    assert f"the file: {len(text):,} characters in 25,000 lines" in result.error
    assert "the limit is 1.0e11" in result.error


def test_an_exact_edit_of_any_size_applies() -> None:
    text = code(40_000)  # 2.3 MB
    old = text[len(text) // 4 : len(text) // 2]  # 570 KB
    new = old.replace("alpha", "ALPHA")
    outcome = edit(text, old, new)
    assert outcome.result.status == "applied"
    assert outcome.result.match_type == "exact"
    assert outcome.data == text.replace(old, new).encode()


def test_a_request_within_the_budget_is_still_matched_tolerantly() -> None:
    text = code(25_000)  # 1.4 MB, 25,000 lines
    block = code(200, start=12_000)
    assert budget.check(block, text, new=block) is None
    outcome = edit(text, with_slip(block), block.replace("gamma=12100", "gamma=0"))
    assert outcome.result.status == "applied"
    assert outcome.result.match_type == "fuzzy"
    assert outcome.data == text.replace("gamma=12100", "gamma=0").encode()


def test_past_the_budget_a_retry_is_pointed_out_not_assumed() -> None:
    text = code(25_000)
    new = text[: len(text) // 10]  # the edit landed: new_string is in the file, once
    old = with_slip(new).replace("beta", "BETA")
    outcome = edit(text, old, new)
    assert outcome.result.status == "no_match"
    assert outcome.result.error is not None
    assert TOO_LARGE in outcome.result.error
    assert "new_string is in the file (line 1): if this is a retry" in outcome.result.error


def test_replace_all_past_the_budget_says_so() -> None:
    text = code(25_000)
    old = with_slip(text[: len(text) // 10])
    outcome = edit(text, old, "x", replace_all=True)
    assert outcome.result.status == "no_match"
    assert outcome.result.error is not None
    assert TOO_LARGE in outcome.result.error


# --- apply_patch and the diagnosis --------------------------------------------------------


def hunk(*lines: str) -> Hunk:
    return Hunk(None, tuple(HunkLine(line[0], line[1:]) for line in lines), end_of_file=False)


def test_past_the_budget_hunks_are_placed_exactly_only() -> None:
    text = "a = 1\nb = 2   \nc = 3\n"
    drifted = hunk(" a = 1", "-b = 2", "+b = 20")  # matches only with rstrip tolerance
    placed, evidence, _ = apply_hunks(text, [drifted], "f.txt")
    assert placed == "a = 1\nb = 20   \nc = 3\n"  # the file's trailing spaces kept
    assert evidence[0].match_type == "rstrip"
    with pytest.raises(HunkError) as refused:
        apply_hunks(text, [drifted], "f.txt", limit=0)
    assert "hunk not found (1/1) in f.txt" in str(refused.value)
    assert f"Only an exact match was tried: {TOO_LARGE}" in str(refused.value)
    exact = hunk(" c = 3", "+d = 4")
    placed, evidence, _ = apply_hunks(text, [exact], "f.txt", limit=0)
    assert placed == text + "d = 4\n"
    assert evidence[0].match_type == "exact"


def test_a_large_exact_hunk_with_a_common_first_line_is_found_quickly() -> None:
    # Every other line is blank: the first line of the hunk is everywhere.
    lines = [line for i in range(20_000) for line in ("", f"x{i} = {i}")]
    text = "\n".join(lines) + "\n"
    body = lines[10_000:14_000]
    big = hunk(*(" " + line for line in body), "+tail = 1")
    started = time.perf_counter()
    placed, evidence, _ = apply_hunks(text, [big], "f.txt")
    assert time.perf_counter() - started < 5
    assert evidence[0].start_line == 10_001
    assert placed.count("tail = 1\n") == 1


def test_the_diagnosis_lists_differing_lines_only_within_the_budget() -> None:
    text = code(10)
    old = code(3, start=4).replace("beta_4", "beta_X")
    view = FileView(text)
    first = text.index("    value_4")
    nearest = Span(first, text.index("    value_7"), 0.97)
    listed = not_found(view, old, nearest)
    assert "these lines differ" in listed
    bounded = not_found(view, old, nearest, limit=0)
    assert "these lines differ" not in bounded
    assert "Re-read that region (offset=5, limit=3)" in bounded


def test_an_edit_request_may_carry_another_limit() -> None:
    text = code(50)
    old = with_slip(code(3, start=20))
    new = old.replace("gamma=21", "gamma=0")
    assert edit(text, old, new).result.status == "applied"
    request = EditRequest("big.py", (EditItem(old, new),), limit=1000)
    refused = apply_edit(text.encode(), request).result
    assert refused.status == "no_match"
    assert refused.error is not None and TOO_LARGE in refused.error
    assert "the limit is 1.0e3" in refused.error
