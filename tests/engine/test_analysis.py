"""engine.analysis: a file's whole-text analyses are made once per content, and bounded.

A fuzzy edit in a large file learns its indentation style and folds the whole
text; a second request on the same content reuses them and answers the same
bytes; another content is analysed anew; texts past the bound are dropped, the
least recently used first.
"""

from __future__ import annotations

from perturbations import code, with_slip
from redline.engine.analysis import ANALYSES, SMALLEST, Analyses, Characters
from redline.engine.edit import EditItem, EditRequest, apply_edit

LINES = 3_000  # ~170,000 characters: past SMALLEST


def fuzzy_request(start: int) -> EditRequest:
    block = code(100, start=start)
    target = f"gamma={start + 1})"
    return EditRequest(
        path="big.py",
        edits=(EditItem(with_slip(block), block.replace(target, "gamma=-1)")),),
    )


def test_a_second_fuzzy_edit_on_the_same_content_reuses_the_analyses() -> None:
    data = code(LINES).encode()
    assert len(data) > SMALLEST
    before = ANALYSES.made
    first = apply_edit(data, fuzzy_request(1_500))
    made_once = ANALYSES.made - before
    again = apply_edit(data, fuzzy_request(1_500))
    other = apply_edit(data, fuzzy_request(2_500))  # another edit, the same file content

    assert first.result.status == "applied" and first.result.match_type == "fuzzy"
    assert made_once >= 1
    assert ANALYSES.made - before == made_once  # nothing analysed again
    assert again.data == first.data  # the same answer, byte for byte
    assert other.result.status == "applied" and other.data != first.data


def test_the_indentation_style_is_learnt_only_when_the_match_does_not_tell() -> None:
    """A fuzzy match indented as old_string is merged without the file's style; one
    indented otherwise, at one depth, needs the file's steps to place its lines."""
    text = code(LINES)
    block = code(12, start=1_700)
    plain = EditRequest(path="big.py", edits=(EditItem(with_slip(block), block + "    x = 1\n"),))
    assert apply_edit(text.encode(), plain).result.status == "applied"
    assert "style" not in ANALYSES.kinds(text)
    shifted = "".join("  " + line for line in with_slip(block).splitlines(keepends=True))
    new = "".join("  " + line for line in block.splitlines(keepends=True)) + "    if x:\n      y\n"
    moved = EditRequest(path="big.py", edits=(EditItem(shifted, new),))
    answer = apply_edit(text.encode(), moved)
    assert answer.result.match_type == "fuzzy"
    assert "style" in ANALYSES.kinds(text)


def test_another_content_is_analysed_anew() -> None:
    data = code(LINES).encode()
    apply_edit(data, fuzzy_request(1_500))
    before = ANALYSES.made
    changed = data.replace(b"value_10 ", b"value_ten ")
    answer = apply_edit(changed, fuzzy_request(1_500))
    assert answer.result.status == "applied"
    assert ANALYSES.made > before


def test_the_least_recently_used_text_goes_first_past_the_bound() -> None:
    analyses = Analyses(kept_chars=30, smallest=10)
    made: list[str] = []

    def analysed(text: str) -> str:
        return analyses.of(text, "upper", lambda: made.append(text) or text.upper())

    a, b, c = "a" * 12, "b" * 12, "c" * 12
    assert analysed(a) == a.upper()
    analysed(b)
    analysed(a)  # a is now the most recently used
    analysed(c)  # 36 characters kept: b goes
    analysed(a)
    analysed(b)
    assert made == [a, b, c, b]
    analysed("short")  # under `smallest`: made each time, never kept
    analysed("short")
    assert made[-2:] == ["short", "short"]


def test_the_characters_of_a_text_answer_as_its_set_does() -> None:
    plain = code(LINES)
    marked = plain + "“quoted” – ünïcödé 你好 🙂\u200b"
    asked = ["“", "”", "–", "—", "ü", "你", "🙂", "\u200b", "\u2019", "a", "\n", "q", "é"]
    asked += ["“quoted”", "你好", "", "ab"]  # not a character: never in the set
    for text in (plain, marked, "short “text”"):
        chars = Characters(text)
        for item in asked * 2:  # the second time from what was kept
            assert (item in chars) == (item in frozenset(text)), (item, text[-30:])
