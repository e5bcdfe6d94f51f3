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


def test_a_glued_slip_the_agent_rewrites_into_less_than_the_file_has_conflicts() -> None:
    # Found replaying this repository's history: ``countb`` is ``count(b`` with a
    # dropped mark; the agent's ``count(`` leaves out the ``b`` the file has, which
    # is no fix of the file's beside the agent's.
    with pytest.raises(MergeConflict):
        merge_tokens('n.countb"{")', 'n.count(b"{")', 't.count("{")', NO_MAP, 0)


def test_a_glued_slip_the_agent_fixes_as_the_file_has_it_merges() -> None:
    got = merge_tokens('n.countb"{")', 'n.count(b"{")', 't.count(b"{")', NO_MAP, 0)
    assert got == 't.count(b"{")'


def test_a_mark_the_file_adds_at_a_word_the_agent_rewrites_conflicts() -> None:
    # Found replaying this repository's history: ``]g`` is ``]:g`` with a dropped
    # colon, and the agent rewrites the ``g``; the colon went with it.
    with pytest.raises(MergeConflict):
        merge_tokens("{item['c']g}", "{item['c']:g}", "{show(item['c'])}", NO_MAP, 0)


def test_spacing_the_file_adds_at_a_word_the_agent_rewrites_stays() -> None:
    assert merge_tokens("a =b + 1", "a = b + 1", "a =c + 1", NO_MAP, 0) == "a = c + 1"


def test_a_mark_the_file_adds_apart_from_the_agents_change_still_merges() -> None:
    got = merge_tokens("print(a b) + x", "print(a, b) + x", "print(a b) + y", NO_MAP, 0)
    assert got == "print(a, b) + y"


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


# Found by replaying the histories of jinja (Python) and fd (Rust) with slips.


def test_a_mark_the_file_adds_where_the_agents_rewrite_ends_with_it_is_written_once() -> None:
    # The quote dropped the final ":"; the new line drops a "]" and ends in ":".
    base = "def parse(self) -> t.Union[nodes.Node, list[nodes.Node]]"
    new = "def parse(self) -> nodes.Node | list[nodes.Node]:"
    assert merge_tokens(base, base + ":", new, NO_MAP, 0) == new


def test_a_copy_dropped_from_a_run_the_agent_changes_elsewhere_conflicts() -> None:
    # ":::" in the quote, "::" in the file, the third ":" rewritten by the agent:
    # which copy the file dropped and which one the agent changed is a guess.
    with pytest.raises(MergeConflict):
        merge_tokens(
            "use std::time:::SystemTime;",
            "use std::time::SystemTime;",
            "use std::time::{Duration, SystemTime};",
            NO_MAP,
            0,
        )


def test_a_copy_dropped_from_a_run_next_to_the_agents_change_still_merges() -> None:
    assert merge_tokens("f((x)", "f(x)", "g((x)", NO_MAP, 0) == "g(x)"


@pytest.mark.parametrize("tokens", [NO_MAP, TokenMap([("–" * 5, "-" * 5, False)], frozenset("-"))])
def test_a_dash_dropped_from_a_run_the_file_writes_as_hyphens_leaves_hyphens(
    tokens: TokenMap,
) -> None:
    # An RST underline quoted with en dashes for the file's hyphens, shortened by
    # one: every dash the file keeps stays a hyphen.
    assert merge_tokens("–" * 5, "-" * 5, "–" * 4, tokens, 0) == "-" * 4
