"""The token-level merge of one changed line."""

from __future__ import annotations

import pytest

from redline.engine.errors import MergeConflict
from redline.engine.tokens import TokenMap, merge_tokens

NO_MAP = TokenMap([], frozenset())


def test_changes_to_different_tokens_both_apply() -> None:
    assert merge_tokens("f(a, b)", "f(a,  b)", "g(a, b)", NO_MAP, 0) == "g(a,  b)"


def test_the_same_change_on_both_sides_applies_once() -> None:
    assert merge_tokens("class Node::", "class Node:", "class Node2:", NO_MAP, 0) == "class Node2:"


def test_one_token_changed_two_ways_conflicts() -> None:
    with pytest.raises(MergeConflict):
        merge_tokens("memo = {}", "memZ = {}", "memo_v2 = {}", NO_MAP, 0)


def test_a_change_of_spacing_only_yields_to_the_agents() -> None:
    got = merge_tokens("cp old_name   target_dir", "cp old_name  target_dir",
                       "cp new_name  target_dir", NO_MAP, 0)  # fmt: skip
    assert got == "cp new_name  target_dir"


def test_a_space_between_two_words_is_never_format() -> None:
    with pytest.raises(MergeConflict):
        merge_tokens("return item", "returnitem", "return item_v2", NO_MAP, 0)


def test_changes_side_by_side_in_a_run_of_equal_tokens_conflict() -> None:
    # Which ")" of "))" each side changed is a guess.
    with pytest.raises(MergeConflict):
        merge_tokens("len(t))", "len(t)", "len(t) NULL", NO_MAP, 0)


def test_a_merge_that_unbalances_brackets_both_sides_balance_conflicts() -> None:
    with pytest.raises(MergeConflict):
        merge_tokens("assume(x in y))", "assume(x in y)", "assume(not f(x, y))", NO_MAP, 0)


def test_a_misspelling_the_block_shows_twice_is_written_the_files_way() -> None:
    pairs = [("sesion.close()", "session.close()", True)]
    tokens = TokenMap(pairs, frozenset())
    assert tokens.carry("sesion.token = None", 0) == "session.token = None"


def test_a_misspelling_seen_once_on_a_rewritten_line_is_not_carried() -> None:
    tokens = TokenMap([("x in itmes", "x in items", False)], frozenset())
    assert tokens.carry("for x in itmes:", 0) == "for x in itmes:"


def test_a_name_the_block_writes_two_ways_is_a_conflict_where_added() -> None:
    pairs = [("if memo:", "if memo:", True), ("memo = {}", "memZ = {}", True)]
    with pytest.raises(MergeConflict):
        TokenMap(pairs, frozenset()).carry("memo.clear()", 0)


def test_curly_quotes_the_agent_types_map_back_by_whether_they_open_or_close() -> None:
    tokens = TokenMap([("say “hi” and ‘bye’", "say \"hi\" and 'bye'", True)], frozenset())
    assert tokens.carry("log(“done”, ‘x’)", 0) == "log(\"done\", 'x')"


@pytest.mark.parametrize(
    ("block", "added"),
    [
        (('say "hi"', "say “hi”"), 'log("done")'),
        (("it's", "it’s"), "f'<a {x}>'"),
        (("a - b", "a — b"), "run(--fast)"),
        (("a - b", "a – b"), "x = well-tested - 5"),
        (("f(a, b).", "f(a，b)。"), "g(a, b)."),
    ],
)
def test_an_ascii_mark_the_agent_adds_is_written_as_typed(
    block: tuple[str, str], added: str
) -> None:
    # The block shows the file writing a typographic twin for the agent's ASCII mark;
    # in text the agent adds, the mark it typed is the one it means.
    tokens = TokenMap([(*block, True)], frozenset())
    assert tokens.carry(added, 0) == added
