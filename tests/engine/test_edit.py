"""The edit tool end to end on bytes: statuses, endings, encodings, batches."""

from __future__ import annotations

import codecs

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit
from redline.engine.newlines import split, to_lf
from support.endings import suffix_after_edit


def edit(data: bytes, old: str, new: str, replace_all: bool = False, **kw: float) -> EditOutcome:
    return apply_edit(data, EditRequest("f.txt", (EditItem(old, new, replace_all),), **kw))


def batch(data: bytes, *items: tuple[str, str] | tuple[str, str, bool]) -> EditOutcome:
    return apply_edit(data, EditRequest("f.txt", tuple(EditItem(*i) for i in items), batch=True))


def test_exact_edit_result_fields() -> None:
    out = edit(b"one\ntwo\nthree\n", "two\n", "2\n")
    r = out.result
    assert out.data == b"one\n2\nthree\n"
    assert (r.status, r.match_type, r.confidence, r.matched_text) == (
        "applied",
        "exact",
        1.0,
        "two\n",
    )
    assert [(m.start_line, m.end_line) for m in r.matches] == [(2, 2)]
    assert r.diff is not None and "-two\n+2\n" in r.diff
    assert r.exit_code == 0


def test_identical_strings_are_refused() -> None:
    r = edit(b"a\n", "a", "a").result
    assert r.status == "invalid"
    assert r.error == "old_string and new_string are identical"


def test_empty_old_string_is_refused() -> None:
    r = edit(b"a\n", "", "b").result
    assert r.status == "invalid" and "old_string is empty" in (r.error or "")


def test_not_found_names_the_nearest_block_and_differing_lines() -> None:
    data = b"def total(items):\n    return sum(i.price for i in items)\n"
    r = edit(data, "def total(items):\n    return sum(i.cost for i in items)\n", "x\n").result
    assert r.status == "no_match"
    assert r.error is not None and r.error.startswith("old_string not found in file")
    assert "lines 1-2" in r.error and "similarity" in r.error
    assert "i.price" in r.error and "i.cost" in r.error


def test_not_found_with_whole_lines_drifted_gives_read_coordinates() -> None:
    lines = [f"line {i} of a file with some text" for i in range(40)]
    data = ("\n".join(lines) + "\n").encode()
    old = "line 10 of a file with some text\ncompletely new\nother words here\nline 13 of a file\n"
    r = edit(data, old, "x\n").result
    assert r.status == "no_match"
    assert r.error is not None
    assert "offset=" in r.error or "2-4" in r.error or "Nothing in the file" in r.error


def test_found_n_times() -> None:
    r = edit(b"x = 1\nx = 1\n", "x = 1", "x = 2").result
    assert r.status == "ambiguous"
    assert r.error is not None and r.error.startswith("old_string found 2 times")
    assert [m.start_line for m in r.matches] == [1, 2]
    assert r.exit_code == 1


def test_replace_all_replaces_every_exact_occurrence() -> None:
    out = edit(b"foo(1)\nbar\nfoo(2)\n", "foo", "baz", replace_all=True)
    assert out.data == b"baz(1)\nbar\nbaz(2)\n"
    assert [m.start_line for m in out.result.matches] == [1, 3]


def test_replace_all_does_not_use_tolerant_tiers() -> None:
    r = edit("say “hi”\n".encode(), 'say "hi"', 'say "bye"', replace_all=True).result
    assert r.status == "no_match"
    assert "exact occurrences only" in (r.error or "")


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_uniform_endings_are_kept(newline: str) -> None:
    data = newline.join(["a", "b", "c", ""]).encode()
    out = edit(data, "b\n", "b1\nb2\n")
    assert out.data == newline.join(["a", "b1", "b2", "c", ""]).encode()
    assert out.result.matched_text == "b" + newline


def test_mixed_endings_replacement_takes_the_endings_it_replaces() -> None:
    data = b"a\r\nb\nc\r\nd\n"
    out = edit(data, "b\nc\n", "B\nX\nC\n")
    # b had LF, c had CRLF; the extra line takes the last replaced ending.
    assert out.data == b"a\r\nB\nX\r\nC\r\nd\n"
    assert out.result.matched_text == "b\nc\r\n"


def test_old_string_with_crlf_is_read_as_lf() -> None:
    out = edit(b"a\nb\n", "a\r\nb\r\n", "a\r\nc\r\n")
    assert out.data == b"a\nc\n"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig", "gb18030"])
def test_encodings_round_trip(encoding: str) -> None:
    text = "# 说明：计算总价\ndef total(items):\n    return sum(items)\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    out = edit(data, "return sum(items)", "return sum(items) * 2  # 翻倍")
    assert out.result.status == "applied"
    assert out.data is not None
    expected = text.replace("return sum(items)", "return sum(items) * 2  # 翻倍").encode(encoding)
    if encoding == "utf-16-be":
        expected = codecs.BOM_UTF16_BE + expected
    assert out.data == expected


def test_binary_file_is_refused() -> None:
    r = edit(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "IHDR", "x").result
    assert r.status == "invalid"
    assert "binary" in (r.error or "")


def test_unencodable_replacement_is_refused() -> None:
    data = "caf\xe9 = 1\nname = 'na\xefve'\n".encode("cp1252") * 20
    out = edit(data, "caf\xe9 = 1\nname", "caf\xe9 = 1  # \U0001f600\nname", replace_all=True)
    assert out.result.status == "invalid"
    assert out.data is None


def test_invisible_characters_are_cleaned_and_reported() -> None:
    out = edit(b"value = compute()\n", "value\u200b = comp\u200bute()", "value = compute(\u2060x)")
    assert out.data == b"value = compute(x)\n"
    assert out.result.cleaned == ["U+200B×2", "U+2060×1"]
    assert out.result.match_type == "exact"


def test_emoji_zwj_sequence_is_kept() -> None:
    family = "👨\u200d👩\u200d👧"
    out = edit(b"icon = 'x'\n", "'x'", f"'{family}'")
    assert out.data == f"icon = '{family}'\n".encode()
    assert out.result.cleaned == []


def test_combining_marks_on_a_base_are_kept() -> None:
    out = edit(b"name = 'Viet'\n", "'Viet'", "'Việt Nam' + 'x\u0305'")
    assert out.data == "name = 'Việt Nam' + 'x\u0305'\n".encode()


def test_cjk_text_edit() -> None:
    data = "# 计算，返回结果\nresult = 计算(数据)\n".encode()
    out = edit(data, "# 计算,返回结果", "# 计算并返回结果")
    assert out.result.match_type == "punctuation"
    assert out.data == "# 计算并返回结果\nresult = 计算(数据)\n".encode()


def test_no_change_when_replacement_equals_file_text() -> None:
    # The file already has what new_string asks for in its own quotes.
    out = edit("x = “a”\n".encode(), 'x = "a"', "x = “a”")
    assert out.result.status == "no_change"
    assert out.data is None


def test_batch_applies_all_items_once() -> None:
    out = batch(b"a = 1\nb = 2\nc = 3\n", ("a = 1", "a = 10"), ("c = 3", "c = 30"))
    assert out.result.status == "applied"
    assert out.data == b"a = 10\nb = 2\nc = 30\n"
    assert [m.start_line for m in out.result.matches] == [1, 3]


def test_batch_with_a_failing_item_writes_nothing_and_lists_failures() -> None:
    out = batch(b"a = 1\nb = 2\n", ("a = 1", "a = 10"), ("zzz", "y"), ("b = 2", "b = 2"))
    assert out.data is None
    r = out.result
    assert r.status == "no_match"
    assert [f.index for f in r.failures] == [1]
    assert r.skipped == [2]
    assert "nothing was written" in (r.error or "")


def test_batch_is_exact_only() -> None:
    out = batch("x = “a”\n".encode(), ('x = "a"', 'x = "b"'))
    assert out.result.status == "no_match"


def test_batch_refuses_overlaps() -> None:
    out = batch(b"abcdef\n", ("abcd", "x"), ("cdef", "y"))
    assert out.data is None
    assert out.result.failures and "overlaps" in out.result.failures[0].error


def test_batch_of_only_skipped_items_is_no_change() -> None:
    out = batch(b"a\n", ("a", "a"))
    assert out.result.status == "no_change"
    assert out.result.skipped == [0]


# --- properties ----------------------------------------------------------------

_line = st.text(alphabet="abc xyz(),.'\"\t", min_size=0, max_size=12)
_newline = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def files_with_a_unique_block(draw: st.DrawFn) -> tuple[str, int, int, str]:
    lines = draw(st.lists(_line, min_size=1, max_size=12))
    endings = draw(st.lists(_newline, min_size=len(lines), max_size=len(lines)))
    marker = "UNIQUE-MARKER"
    pos = draw(st.integers(0, len(lines) - 1))
    lines[pos] = lines[pos] + marker + draw(_line)
    text = "".join(line + end for line, end in zip(lines, endings, strict=True))
    start = text.index(marker)
    end = draw(st.integers(start + len(marker), len(text)))
    if text[end - 1 : end + 1] == "\r\n":  # a span never ends inside a CRLF
        end += 1
    return text, start, end, draw(st.text(alphabet="pqr\n", max_size=8))


@given(files_with_a_unique_block())
# A line emptied between a lone CR and its LF, then the same with an empty line after
# it (both found by runs with fresh seeds; see support/endings.py).
@example(("\naaaaaa\rUNIQUE-MARKERa\n", 8, 22, ""))
@example(("\rUNIQUE-MARKER\n\n", 1, 14, ""))
def test_matched_text_is_exactly_the_replaced_span(case: tuple[str, int, int, str]) -> None:
    text, start, end, new = case
    old_original = text[start:end]
    old_lf = old_original.replace("\r\n", "\n").replace("\r", "\n")
    if old_lf == new:
        return
    out = edit(text.encode(), old_lf, new)
    assert out.result.status == "applied"
    assert out.result.match_type == "exact"
    assert out.result.matched_text == old_original
    assert out.data is not None
    after = out.data.decode()
    assert after.startswith(text[:start])
    suffix = text[end:]
    assert after.endswith(suffix_after_edit(after[: len(after) - len(suffix)], suffix))
    assert split(after)[0] == to_lf(text[:start]) + new + to_lf(text[end:])


@given(
    st.lists(_line, min_size=2, max_size=10),
    _newline,
    st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "gb18030"]),
)
def test_edit_then_inverse_restores_bytes(lines: list[str], newline: str, encoding: str) -> None:
    text = newline.join([*lines, "TARGET line", ""])
    data = text.encode(encoding)
    forward = edit(data, "TARGET line", "REPLACED\nwith two")
    assert forward.data is not None
    assert forward.data.decode(encoding).count(newline) == text.count(newline) + 1
    back = edit(forward.data, "REPLACED\nwith two", "TARGET line")
    assert back.data == data


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "", "  x = 1", "beta beta"])


@given(
    st.lists(st.tuples(_WORDS, st.sampled_from(["\n", "\r\n", "\r"])), min_size=1, max_size=12),
    st.sampled_from(["beta", "gamma", "alpha\n", "a"]),
    st.sampled_from(["B", "", "two\nlines", "x\r\ny\n"]),
)
def test_every_replacement_of_a_mixed_file_keeps_the_endings_of_one_at_a_time(
    lines: list[tuple[str, str]], old: str, new: str
) -> None:
    """replace_all writes what replacing each occurrence in turn, from the last, gives:
    the text, and the endings of the lines each one replaces or adds."""
    from redline.engine.newlines import split

    text = "".join(line + ending for line, ending in lines)
    lf_text, endings = split(text)
    spans, pos = [], lf_text.find(old)
    while pos != -1:  # as replace_all finds them
        spans.append(pos)
        pos = lf_text.find(old, pos + len(old))
    if not spans or old == new:
        return
    expected_text, expected_endings = lf_text, endings
    for start in reversed(spans):  # one at a time, from the last
        lf_new = new.replace("\r\n", "\n").replace("\r", "\n")
        expected_endings = expected_endings.replace(expected_text, start, start + len(old), lf_new)
        expected_text = expected_text[:start] + lf_new + expected_text[start + len(old) :]
    answer = apply_edit(text.encode(), EditRequest(path="f", edits=(EditItem(old, new, True),)))
    assert answer.data == expected_endings.restore(expected_text).encode()
