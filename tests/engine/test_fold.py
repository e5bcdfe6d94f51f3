"""Folded views for the punctuation and whitespace tiers, and their map back."""

from __future__ import annotations

import functools
import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engine import fold as fold_module
from redline.engine.edit import EditItem, EditRequest, apply_edit
from redline.engine.fold import (
    Folded,
    compact_key,
    fold_punctuation,
    fold_whitespace,
    punctuation_key,
)
from redline.engine.invisible import clean
from redline.engine.match import FileView, match_chain

ACUTE = "\u0301"
OVERLINE = "\u0305"


def _check_map(folded: Folded) -> None:
    """Every folded character comes from exactly one original character."""
    origins = folded.origins()
    assert len(origins) == len(folded.text)
    assert len(folded.source) == len(folded.original)
    assert origins == [folded.origin(j) for j in range(len(folded.text))]
    assert all(a < b for a, b in pairwise(origins))
    assert all(0 <= i < len(folded.original) for i in origins)
    for j, i in enumerate(origins):
        assert folded.source[i] == folded.text[j]


# --- 1:1 punctuation folding -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("‘single’ ‚low‛ ′prime‵", "'single' 'low' 'prime'"),
        ("“double” „low‟ ″ditto‶ «guillemets»", '"double" "low" "ditto" "guillemets"'),
        ("a‐b‑c‒d–e—f―g−h", "a-b-c-d-e-f-g-h"),
        ("x−1", "x-1"),
    ],
)
def test_quotes_and_dashes_fold_to_ascii(text: str, expected: str) -> None:
    assert fold_punctuation(text).text == expected


@pytest.mark.parametrize(
    ("full", "ascii"),
    [("，", ","), ("；", ";"), ("：", ":"), ("．", "."), ("！", "!"), ("？", "?"), ("（", "("),
     ("）", ")"), ("［", "["), ("＝", "="), ("＂", '"'), ("～", "~"), ("Ａ", "A"), ("０", "0")],
)  # fmt: skip
def test_full_width_forms_fold_to_ascii_twins(full: str, ascii: str) -> None:
    assert fold_punctuation(full).text == ascii
    assert fold_punctuation(f"x{full}y").source == f"x{ascii}y"


def test_full_width_cjk_sentence_matches_its_ascii_form() -> None:
    assert punctuation_key("调用（参数１，参数２）；完成！") == punctuation_key(
        "调用(参数1, 参数2); 完成!"
    )


def test_ideographic_and_no_break_spaces_fold_to_space() -> None:
    assert fold_punctuation("a\u3000\u3000b").text == "a  b"
    assert fold_punctuation("a\u00a0\u00a0b").text == "a  b"
    assert fold_punctuation("x\u3000=\u00a01").source == "x = 1"


def test_ideographic_comma_folds_to_comma() -> None:
    assert fold_punctuation("甲、乙").text == "甲,乙"


@pytest.mark.parametrize(
    ("cjk", "ascii"),
    [("。", "."), ("｡", "."), ("、", ","), ("､", ","), ("「", '"'), ("」", '"'), ("｢", '"'),
     ("｣", '"'), ("『", "'"), ("』", "'"), ("【", "["), ("】", "]")],
)  # fmt: skip
def test_cjk_punctuation_folds_to_its_ascii_twin(cjk: str, ascii: str) -> None:
    # Issue 10 item 12.
    assert fold_punctuation(f"x{cjk}y").source == f"x{ascii}y"


def test_cjk_sentence_with_quotes_matches_its_ascii_form() -> None:
    assert punctuation_key("他说：「好。」『引』【注】") == punctuation_key("他说:\"好.\"'引'[注]")


def test_cjk_full_stop_and_comma_match_at_the_punctuation_tier() -> None:
    # Issue 10 item 12: the agent wrote half-width ',' and '.' for '，' and '。'.
    text = "before = 1\nx = f(a，b)。\nafter = 2\n"
    chain = match_chain(FileView(text), "x = f(a,b).\n", 0.8)
    assert chain.match_type == "punctuation"
    [span] = chain.spans
    assert text[span.start : span.end] == "x = f(a，b)。\n"


def test_translation_is_one_to_one() -> None:
    text = "‘’“”–—−，；：．！？（）\u3000\u00a0、。「」『』【】｡､｢｣ plain"
    assert len(fold_punctuation(text).source) == len(text)


# --- Optional spaces -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("f(a, b)", "f(a,b)"),
        ("a; b", "a;b"),
        ("key: value", "key:value"),
        ("end. Next", "end.Next"),
        ("wow! yes? ok", "wow!yes?ok"),
        ("f( x )", "f(x)"),
        ("( )", "()"),
        ("print (x )", "print (x)"),  # no rule for a space before (
        ("foo bar", "foobar"),
        ("x1 y_2", "x1y_2"),
        ("中 文", "中文"),
    ],
)
def test_one_optional_space_is_removed(text: str, expected: str) -> None:
    assert fold_punctuation(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        "a,  b",  # two spaces after a comma
        "foo  bar",  # two spaces between words
        "f(  x)",  # two spaces after (
        "f(x  )",  # two spaces before )
        "a\tb",  # a tab is not an optional space
        "a,\tb",
        "x = y",  # = is not in the list
        "a , b"[:3],  # space before a comma
        "x + 1",
        "a. ",  # nothing after the space
        "a,\n b",  # a newline is not a space
    ],
)
def test_other_spaces_are_kept(text: str) -> None:
    assert fold_punctuation(text).text == text


def test_space_before_comma_is_kept_and_after_it_removed() -> None:
    assert fold_punctuation("a , b").text == "a ,b"


def test_full_width_punctuation_then_space_rules() -> None:
    assert fold_punctuation("f（ x，\u3000y ）").text == "f(x,y)"


# --- Invisible characters and orphan combining marks ---------------------------------------


@pytest.mark.parametrize("char", ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad"])
def test_invisible_characters_are_removed(char: str) -> None:
    folded = fold_punctuation(f"{char}ret{char}urn{char}")
    assert folded.text == "return"
    _check_map(folded)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{ACUTE}x", "x"),
        (f"{ACUTE}{OVERLINE}x", "x"),
        (f"a\n{ACUTE}b", "a\nb"),
        (f"a\t{ACUTE}b", "a\tb"),
        (f"a  {ACUTE}", "a  "),
        ("x\n\u20d7\u20d7y", "x\ny"),
    ],
)
def test_orphan_combining_marks_are_removed(text: str, expected: str) -> None:
    assert fold_punctuation(text).text == expected


@pytest.mark.parametrize(
    "text",
    [
        f"cafe{ACUTE}",
        f"x = 1{OVERLINE}",
        "Tiếng-Việt",
        "Tie\u0302\u0301ng",
        "بِسْمِ",
        "हिन्दी",
        "👍🏽",
    ],
)
def test_marks_on_a_visible_base_are_kept(text: str) -> None:
    assert fold_punctuation(text).text == text


def test_orphan_mark_after_a_space_does_not_block_the_space_rules() -> None:
    # The mark goes; "(" then one space then "x" still folds to "(x".
    assert fold_punctuation(f"( {ACUTE}x)").text == "(x)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("foo\u200b bar", "foobar"),
        ("foo \u200bbar", "foobar"),
        ("x,\u200b y", "x,y"),
        ("f(\u2060 x \u00ad)", "f(x)"),
        ("\u200b\u0301x", "x"),
        (" \u200b\u0301x", " x"),
        ("a\u200b\u0301", "a"),  # the mark sat on the invisible character, not on "a"
    ],
)
def test_invisible_characters_do_not_block_the_other_rules(text: str, expected: str) -> None:
    folded = fold_punctuation(text)
    assert folded.text == expected
    _check_map(folded)


def test_a_match_across_a_leaked_invisible_maps_back_over_it() -> None:
    original = "msg = 'foo\u200b bar'\n"
    folded = fold_punctuation(original)
    needle = fold_punctuation("'foo bar'").text
    pos = folded.text.index(needle)
    start, end = folded.span(pos, pos + len(needle))
    assert original[start:end] == "'foo\u200b bar'"


# --- Mapping back ---------------------------------------------------------------------


def test_span_maps_a_folded_match_back_exactly() -> None:
    original = "call（a，\u3000b）  # “note”"
    folded = fold_punctuation(original)
    assert folded.text == 'call(a,b)  # "note"'
    needle = fold_punctuation("(a, b)").text
    pos = folded.text.index(needle)
    start, end = folded.span(pos, pos + len(needle))
    assert original[start:end] == "（a，\u3000b）"
    start, end = folded.span(folded.text.index('"'), len(folded.text))
    assert original[start:end] == "“note”"


def test_span_excludes_deletions_at_its_edges_and_includes_those_inside() -> None:
    original = "\u200bfoo bar\u200b"
    folded = fold_punctuation(original)
    assert folded.text == "foobar"
    assert folded.span(0, 6) == (1, 8)
    assert original[slice(*folded.span(0, 6))] == "foo bar"
    assert folded.origins() == [1, 2, 3, 5, 6, 7]


def test_origin_when_nothing_is_deleted() -> None:
    folded = fold_punctuation("x=1")
    assert folded.origins() == [0, 1, 2]
    assert folded.span(0, 3) == (0, 3)


def test_empty_text() -> None:
    for fold in (fold_punctuation, fold_whitespace):
        folded = fold("")
        assert folded.text == ""
        assert folded.origins() == []


PUNCTUATION_ALPHABET = st.sampled_from(
    [
        "a", "b", "_", "1", "中", " ", "  ", "\n", "\t", ",", ";", ":", ".", "!", "?", "(", ")",
        "=", "‘", "’", "“", "”", "–", "—", "−", "，", "；", "：", "．", "！", "？", "（", "）",
        "\u3000", "\u00a0", "、", "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad",
        ACUTE, OVERLINE, "\u20d7", "é", "👨",
    ]
)  # fmt: skip
PUNCTUATION_TEXTS = st.lists(PUNCTUATION_ALPHABET, max_size=40).map("".join)


@given(PUNCTUATION_TEXTS | st.text(max_size=40))
def test_punctuation_fold_maps_every_character_back(text: str) -> None:
    folded = fold_punctuation(text)
    assert folded.original == text
    _check_map(folded)
    # Each kept character is the fold of the original character it came from.
    for j, i in enumerate(folded.origins()):
        assert fold_punctuation(text[i]).source == folded.text[j]
    assert punctuation_key(text) == folded.text


@given(PUNCTUATION_TEXTS | st.text(max_size=40), st.data())
def test_punctuation_span_covers_exactly_the_folded_range(text: str, data: st.DataObject) -> None:
    folded = fold_punctuation(text)
    if not folded.text:
        return
    start = data.draw(st.integers(0, len(folded.text) - 1))
    end = data.draw(st.integers(start + 1, len(folded.text)))
    a, b = folded.span(start, end)
    origins = folded.origins()
    assert (a, b) == (origins[start], origins[end - 1] + 1)
    # Inside the span, only deleted characters lie between the mapped ones.
    kept = [i for i in origins if a <= i < b]
    assert "".join(folded.source[i] for i in kept) == folded.text[start:end]


@given(PUNCTUATION_TEXTS)
def test_deleted_characters_are_only_spaces_invisibles_and_marks(text: str) -> None:
    folded = fold_punctuation(text)
    kept = set(folded.origins())
    for i, char in enumerate(folded.source):
        if i not in kept:
            assert (
                char == " "
                or char in "\u200b\u200c\u200d\u2060\ufeff\u00ad"
                or char in (ACUTE, OVERLINE, "\u20d7")
            )


@given(PUNCTUATION_TEXTS)
def test_folding_is_idempotent(text: str) -> None:
    key = punctuation_key(text)
    assert punctuation_key(key) == key


@given(PUNCTUATION_TEXTS)
def test_file_fold_tolerates_what_clean_removes_from_old_string(text: str) -> None:
    # old_string is cleaned before matching; the file is not. Folding the file
    # must reach the same key, or a file with leaked invisible characters never
    # matches at the punctuation tier.
    assert punctuation_key(clean(text)[0]) == punctuation_key(text)


# --- Whitespace fold ----------------------------------------------------------------------


def test_whitespace_fold_removes_all_whitespace() -> None:
    original = "def  f( x ):\r\n\treturn\u00a0x\u3000\n"
    folded = fold_whitespace(original)
    assert folded.text == "deff(x):returnx"
    assert folded.source == original
    start, end = folded.span(folded.text.index("f("), folded.text.index(":") + 1)
    assert original[start:end] == "f( x ):"


def test_whitespace_fold_keeps_punctuation_and_invisibles() -> None:
    assert fold_whitespace("“a”\u200b—b").text == "“a”\u200b—b"


@given(
    st.text(st.sampled_from("ab \t\n\r\u00a0\u3000\x0b\x0c"), max_size=40) | st.text(max_size=40)
)
def test_whitespace_fold_maps_every_character_back(text: str) -> None:
    folded = fold_whitespace(text)
    assert folded.text == "".join(c for c in text if not c.isspace())
    _check_map(folded)
    for j, i in enumerate(folded.origins()):
        assert text[i] == folded.text[j]
    removed = set(range(len(text))) - set(folded.origins())
    assert all(text[i].isspace() for i in removed)


# --- Large texts: the map back without the whole shift table ------------------------------

LONG_LINE_UNITS = st.sampled_from(
    ["word", " ", ", ", "( ", " )", "“", "”", "—", "，", "\u200b", ACUTE, " \u0301", "\t", "中 文"]
)


@st.composite
def large_texts(draw: st.DrawFn) -> str:
    """Texts over the large-text bound: a few lines, some far longer than the bound."""
    lines = []
    for _ in range(draw(st.integers(1, 4))):
        units = draw(st.lists(LONG_LINE_UNITS, min_size=1, max_size=6))
        repeat = draw(st.sampled_from([1, 3, 700, 1500, 3000]))
        lines.append("".join(units) * repeat)
    text = "\n".join(lines)
    if draw(st.booleans()):
        text += "\n"  # otherwise the last line has no newline
    padding = "pad, ( x ) “q”\n" * (fold_module._LARGE // 14 + 1)
    return text if len(text) > fold_module._LARGE else padding + text


@settings(max_examples=40)
@given(large_texts(), st.data())
def test_large_text_origin_and_span_equal_the_shift_table_path(
    text: str, data: st.DataObject
) -> None:
    # Issue 10 item 11: a line over the bound mapped back to the wrong place
    # (the last line lost its last character, a long line recursed).
    assert len(text) > fold_module._LARGE
    large = fold_punctuation(text)
    small = fold_punctuation(text)
    origins = small.origins()  # builds the shift table: the small-text path
    assert len(origins) == len(large.text)
    points = data.draw(st.lists(st.integers(0, len(large.text) - 1), min_size=1, max_size=30))
    for j in [0, len(large.text) - 1, *points]:
        assert large.origin(j) == origins[j]
    start, end = sorted(
        data.draw(st.lists(st.integers(0, len(large.text)), min_size=2, max_size=2))
    )
    if end > start:
        assert large.span(start, end) == small.span(start, end)
    assert large._shifts is None  # the large path was the one tested


@pytest.mark.parametrize("last_newline", [True, False])
def test_large_text_single_long_line_maps_without_recursion(last_newline: bool) -> None:
    text = "“quoted, ( spaced )”\u200b " * 4000 + ("\n" if last_newline else "")
    large = fold_punctuation(text)
    origins = fold_punctuation(text).origins()
    for j in (0, 1, len(large.text) // 2, len(large.text) - 1):
        assert large.origin(j) == origins[j]
    assert large.span(0, len(large.text)) == (0, origins[-1] + 1)


@pytest.mark.parametrize("length", [6_000, 9_000])
@pytest.mark.parametrize("last", [False, True])
def test_long_line_matched_at_the_punctuation_tier_keeps_the_files_bytes(
    length: int, last: bool
) -> None:
    # The file has curly quotes on a line longer than the large-text bound;
    # old_string has them straight. The edit changes the short line only, so
    # the long line must come back byte for byte as the file has it.
    body = "word, " * (length // 6)
    curly, straight = f"msg = “{body}”", f'msg = "{body}"'
    if last:  # the long line is the file's last line, without a newline
        data = f"head\nx = 1\n{curly}".encode()
        old, new = f"x = 1\n{straight}", f"x = 2\n{straight}"
        expected = f"head\nx = 2\n{curly}".encode()
    else:
        data = f"head\n{curly}\nx = 1\ntail\n".encode()
        old, new = f"{straight}\nx = 1\n", f"{straight}\nx = 2\n"
        expected = f"head\n{curly}\nx = 2\ntail\n".encode()
    outcome = apply_edit(data, EditRequest("f.txt", (EditItem(old, new),)))
    assert (outcome.result.status, outcome.result.match_type) == ("applied", "punctuation")
    assert outcome.data == expected
    matched = outcome.result.matched_text or ""
    assert matched == (f"x = 1\n{curly}" if last else f"{curly}\nx = 1\n")


def test_a_long_line_repeating_its_tokens_is_refused_by_the_budget_not_merged() -> None:
    # A 20,000-character line of `word, ` took the merge 4 s to align token by token
    # (a longer one, minutes): the budget counts those steps and refuses at once.
    body = "word, " * 3333
    data = f"head\nmsg = “{body}”\nx = 1\ntail\n".encode()
    old, new = f'msg = "{body}"\nx = 1\n', f'msg = "{body}"\nx = 2\n'
    outcome = apply_edit(data, EditRequest("f.txt", (EditItem(old, new),)))
    assert outcome.data is None
    assert outcome.result.status == "no_match"
    error = outcome.result.error or ""
    assert "too large for tolerant matching: send the exact text or a smaller block" in error
    assert "the file: 20,023 characters in 4 lines" in error


_PIECE_TEXT = st.text(
    alphabet=st.sampled_from(
        [*"ab1 ,;:.!?()\n\t", "\u200b", ACUTE, "\u3000", "，", "“", "—", "\u00a0"]
    ),
    max_size=400,
)


@settings(max_examples=200, deadline=None)
@given(_PIECE_TEXT)
def test_folding_in_pieces_gives_the_same_text(text: str) -> None:
    """A long text is folded piece by piece (so that no one call holds the GIL for
    long); cutting after a newline or between two letters or digits changes nothing."""
    whole = fold_punctuation(text).text, fold_whitespace(text).text
    saved = fold_module._PIECE
    fold_module._PIECE = 3
    try:
        pieces = fold_punctuation(text).text, fold_whitespace(text).text
    finally:
        fold_module._PIECE = saved
    assert pieces == whole


# --- whole-file passes ---------------------------------------------------------------

_SPACES_AND_TEXT = st.text(
    alphabet=st.sampled_from(
        list(" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1fab,(){}\u00a0\u3000\u2028\u200b\x85é”")
    ),
    max_size=80,
)


@settings(max_examples=300)
@given(_SPACES_AND_TEXT, st.booleans())
def test_without_spaces_removes_what_the_whitespace_regex_removes(text: str, ascii: bool) -> None:
    if ascii:
        text = text.encode("ascii", "ignore").decode("ascii")
    assert fold_module.without_spaces(text) == re.sub(r"\s+", "", text)
    assert fold_whitespace(text).text == re.sub(r"\s+", "", text)


def test_without_spaces_of_a_long_text_folds_it_in_pieces_alike() -> None:
    text = "x = 1\u3000 # é\n\tb ( c )\r\n" * 20_000  # past the piece size, not ASCII
    assert len(text) > 4 * (1 << 16)
    assert fold_module.without_spaces(text) == re.sub(r"\s+", "", text)


@settings(max_examples=300)
@given(_SPACES_AND_TEXT)
def test_compact_lines_gives_each_lines_compact_key(text: str) -> None:
    plain = text.encode("ascii", "ignore").decode("ascii")
    compact = fold_module.compact_lines(plain)
    assert compact is not None
    assert compact.split("\n") == [compact_key(line) for line in plain.split("\n")]
    # The whitespace fold made from the compact lines is the one made from the text.
    assert fold_whitespace(plain, compact).text == re.sub(r"\s+", "", plain)


_MARKED_TEXT = st.text(
    alphabet=st.sampled_from(
        [
            *" \t\n\r\x0b\x1c\x85ab,.(){}\u00a0\u3000\u2028é”“–—，。「\uff21\ue000",
            *"\u200b\u0301\u00ad",  # invisible characters and a combining mark
        ]
    ),
    max_size=60,
)


@settings(max_examples=500)
@given(_MARKED_TEXT, st.integers(0, 3))
def test_compact_lines_of_any_text_are_its_compact_keys_or_none(text: str, long: int) -> None:
    """Typographic marks fold 1:1 into the keys; a text with an invisible character or a
    combining mark (whose deletion depends on its neighbours) or U+E000 gives None.
    Long texts are compacted a piece at a time, ASCII pieces byte-wise: the same keys."""
    tail = text
    text = _LONG_PREFIX * long + tail  # past the piece size when long
    compact = fold_module.compact_lines(text)
    unfoldable = "\ue000" in text or any(c in text for c in "\u200b\u0301\u00ad")
    assert (compact is None) == unfoldable
    if compact is not None:  # the prefix's keys are worked out once, line by line
        expected = _prefix_keys(long) + [compact_key(line) for line in tail.split("\n")]
        assert compact.split("\n") == expected


_LONG_PREFIX = "x = (1, 2)\n" * 7_000 + "\n"


@functools.cache
def _prefix_keys(long: int) -> list[str]:
    """The compact key of each line of ``_LONG_PREFIX * long`` (it ends with a newline)."""
    return [compact_key(line) for line in (_LONG_PREFIX * long).split("\n")[:-1]]
