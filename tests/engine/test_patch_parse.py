from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from conformance_paths import MISSING as _NO_SCENARIOS
from conformance_paths import SCENARIOS
from patch_strategies import patches
from redline.engine.errors import RedlineError
from redline.engine.patch_parse import (
    AddFile,
    DeleteFile,
    Hunk,
    HunkLine,
    Operation,
    Patch,
    PatchSyntaxError,
    UpdateFile,
    format_patch,
    parse_patch,
)

# Scenarios whose patch.txt is malformed: name -> (line number, a fragment of `expected`).
REJECTED_SCENARIOS = {
    "005_rejects_empty_patch": (2, "the patch changes nothing"),
    "008_rejects_empty_update_hunk": (3, "a hunk for 'foo.txt'"),
    "013_rejects_invalid_hunk_header": (2, "a file operation"),
}


def scenario_patches() -> list[Any]:
    if not SCENARIOS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=_NO_SCENARIOS))]
    return [
        pytest.param(path, id=path.parent.name) for path in sorted(SCENARIOS.glob("*/patch.txt"))
    ]


def ctx(text: str) -> HunkLine:
    return HunkLine(" ", text)


def rem(text: str) -> HunkLine:
    return HunkLine("-", text)


def add(text: str) -> HunkLine:
    return HunkLine("+", text)


def ops(text: str) -> tuple[Operation, ...]:
    return parse_patch(text).operations


def syntax_error(text: str) -> PatchSyntaxError:
    with pytest.raises(PatchSyntaxError) as info:
        parse_patch(text)
    return info.value


FULL = """\
*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Delete File: old.txt
*** Update File: src/app.py
*** Move to: src/main.py
@@ def main():
     x = 1
-    return x
+    return x + 1
@@
 tail
+more
*** End of File
*** End Patch
"""

FULL_PATCH = Patch(
    (
        AddFile("docs/new.md", ("# Title", "", "body")),
        DeleteFile("old.txt"),
        UpdateFile(
            "src/app.py",
            "src/main.py",
            (
                Hunk(
                    "def main():",
                    (ctx("    x = 1"), rem("    return x"), add("    return x + 1")),
                    False,
                ),
                Hunk(None, (ctx("tail"), add("more")), True),
            ),
        ),
    )
)


# -- the format --------------------------------------------------------------


def test_full_patch() -> None:
    assert parse_patch(FULL) == FULL_PATCH


def test_line_numbers_of_operations_and_hunks() -> None:
    add_file, delete, update = ops(FULL)
    assert isinstance(update, UpdateFile)
    assert [add_file.line_number, delete.line_number, update.line_number] == [2, 6, 7]
    assert [hunk.line_number for hunk in update.hunks] == [9, 13]


def test_line_numbers_are_not_part_of_equality() -> None:
    assert DeleteFile("a", line_number=3) == DeleteFile("a")
    assert DeleteFile("a").line_number == 0


def test_results_are_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        FULL_PATCH.operations[0].path = "x"  # type: ignore[misc]


def test_add_file_with_no_lines_is_an_empty_file() -> None:
    assert ops("*** Begin Patch\n*** Add File: empty.txt\n*** End Patch\n") == (
        AddFile("empty.txt", ()),
    )


def test_add_file_body_keeps_text_after_the_plus_verbatim() -> None:
    text = "*** Begin Patch\n*** Add File: a\n+  indented \n+*** End Patch\n+\n*** End Patch"
    assert ops(text) == (AddFile("a", ("  indented ", "*** End Patch", "")),)


def test_delete_file() -> None:
    assert ops("*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch") == (
        DeleteFile("gone.txt"),
    )


def test_move_to() -> None:
    text = (
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b/a.txt\n@@\n-x\n+y\n*** End Patch"
    )
    assert ops(text) == (
        UpdateFile("a.txt", "b/a.txt", (Hunk(None, (rem("x"), add("y")), False),)),
    )


def test_anchor_text_after_at_at() -> None:
    text = "*** Update File: a\n@@ class Foo:\n-x\n@@     def bar(self):  \n+y\n"
    (update,) = ops(text)
    assert isinstance(update, UpdateFile)
    # One space separates '@@' from the anchor; further leading space is kept,
    # trailing whitespace is dropped.
    assert [hunk.anchor for hunk in update.hunks] == ["class Foo:", "    def bar(self):"]


def test_at_at_with_trailing_whitespace_has_no_anchor() -> None:
    (update,) = ops("*** Update File: a\n@@  \n-x\n")
    assert isinstance(update, UpdateFile)
    assert update.hunks[0].anchor is None


def test_first_hunk_may_omit_at_at() -> None:
    text = "*** Begin Patch\n*** Update File: a\n x\n-y\n+z\n@@\n-w\n*** End Patch"
    (update,) = ops(text)
    assert isinstance(update, UpdateFile)
    assert update.hunks == (
        Hunk(None, (ctx("x"), rem("y"), add("z")), False),
        Hunk(None, (rem("w"),), False),
    )
    assert [hunk.line_number for hunk in update.hunks] == [3, 6]


def test_hunk_lines_keep_their_prefix_kind() -> None:
    (update,) = ops("*** Update File: a\n@@\n keep\n-gone\n+new\n")
    assert isinstance(update, UpdateFile)
    assert [(line.kind, line.text) for line in update.hunks[0].lines] == [
        (" ", "keep"),
        ("-", "gone"),
        ("+", "new"),
    ]


def test_empty_line_inside_a_hunk_is_empty_context() -> None:
    (update,) = ops("*** Update File: a\n@@\n a\n\n-b\n\t\n+c\n*** End Patch")
    assert isinstance(update, UpdateFile)
    assert update.hunks[0].lines == (ctx("a"), ctx(""), rem("b"), ctx(""), add("c"))


def test_trailing_empty_lines_of_a_hunk_stay_context() -> None:
    # The planner decides whether such lines must match (Codex retries without them).
    text = "*** Update File: a\n@@\n-b\n+c\n\n*** Delete File: z\n"
    update, _ = ops(text)
    assert isinstance(update, UpdateFile)
    assert update.hunks[0].lines == (rem("b"), add("c"), ctx(""))


@pytest.mark.parametrize(
    "line",
    [" *** End Patch", "-*** Update File: x", "+*** End of File", " *** Begin Patch", " @@ x"],
)
def test_prefixed_marker_lines_are_ordinary_hunk_content(line: str) -> None:
    (update,) = ops(f"*** Begin Patch\n*** Update File: a\n@@\n x\n{line}\n y\n*** End Patch")
    assert isinstance(update, UpdateFile)
    assert update.hunks[0].lines[1] == HunkLine(line[0], line[1:])  # type: ignore[arg-type]


def test_end_of_file_pins_the_preceding_hunk() -> None:
    text = "*** Update File: a\n@@\n-x\n*** End of File\n@@\n-y\n*** End of File \n"
    (update,) = ops(text)
    assert isinstance(update, UpdateFile)
    assert [hunk.end_of_file for hunk in update.hunks] == [True, True]


def test_hunk_without_end_of_file_is_not_pinned() -> None:
    (update,) = ops("*** Update File: a\n@@\n-x\n")
    assert isinstance(update, UpdateFile)
    assert update.hunks[0].end_of_file is False


def test_consecutive_updates_of_one_path_stay_separate_and_ordered() -> None:
    text = "*** Update File: a\n@@\n-1\n+2\n*** Update File: a\n@@\n-2\n+3\n"
    first, second = ops(text)
    assert isinstance(first, UpdateFile)
    assert isinstance(second, UpdateFile)
    assert (first.path, second.path) == ("a", "a")
    assert first.hunks[0].lines == (rem("1"), add("2"))
    assert second.hunks[0].lines == (rem("2"), add("3"))


def test_paths_are_kept_as_written_apart_from_surrounding_space() -> None:
    text = "*** Delete File:  ../up.txt \n*** Delete File: /abs/x\n*** Add File: a b/c d.txt\n"
    assert [op.path for op in ops(text)] == ["../up.txt", "/abs/x", "a b/c d.txt"]


def test_unicode_is_kept() -> None:
    (update,) = ops("*** Update File: café.txt\n@@ naïve\n-ü\n+✅\n")
    assert isinstance(update, UpdateFile)
    assert update.path == "café.txt"
    assert update.hunks[0] == Hunk("naïve", (rem("ü"), add("✅")), False)


# -- leniency ----------------------------------------------------------------

BODY = "*** Update File: a\n@@\n-x\n+y\n"
BODY_OPS = (UpdateFile("a", None, (Hunk(None, (rem("x"), add("y")), False),)),)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(f"*** Begin Patch\n{BODY}*** End Patch\n", id="both-markers"),
        pytest.param(f"*** Begin Patch\n{BODY}*** End Patch", id="no-final-newline"),
        pytest.param(BODY, id="no-markers"),
        pytest.param(f"*** Begin Patch\n{BODY}", id="no-end-marker"),
        pytest.param(f"{BODY}*** End Patch\n", id="no-begin-marker"),
        pytest.param(f" *** Begin Patch\n{BODY}*** End Patch \n", id="padded-markers"),
        pytest.param(f"*** Begin Patch \t\n{BODY} *** End Patch\n", id="padded-markers-2"),
        pytest.param(f"\n\n  \n*** Begin Patch\n{BODY}*** End Patch\n\n \n", id="blank-edges"),
        pytest.param(f"*** Begin Patch\n  {BODY}*** End Patch\n", id="padded-header"),
        pytest.param(f"*** Begin Patch\n\n \n{BODY}*** End Patch\n", id="blank-before-op"),
        pytest.param(f"*** Begin Patch\n{BODY}*** End Patch\n".replace("\n", "\r\n"), id="crlf"),
        pytest.param(f"<<'EOF'\n*** Begin Patch\n{BODY}*** End Patch\nEOF\n", id="heredoc-quoted"),
        pytest.param(f"<<EOF\n*** Begin Patch\n{BODY}*** End Patch\nEOF", id="heredoc-bare"),
        pytest.param(f'<<"EOF"\n{BODY}EOF\n', id="heredoc-double-quoted-no-markers"),
        pytest.param(
            f"apply_patch <<'EOF'\n*** Begin Patch\n{BODY}*** End Patch\nEOF\n",
            id="heredoc-apply-patch",
        ),
        pytest.param(
            f"cat <<'PATCH'\n*** Begin Patch\n{BODY}*** End Patch\nPATCH\n", id="heredoc-cat"
        ),
        pytest.param(f"apply_patch <<-EOF\n{BODY}  EOF  \n", id="heredoc-dash"),
    ],
)
def test_lenient_framing(text: str) -> None:
    assert ops(text) == BODY_OPS


def test_line_numbers_count_lines_as_given_when_markers_are_missing() -> None:
    (update,) = ops(f"\n{BODY}")
    assert update.line_number == 2


def test_line_numbers_count_lines_as_given_inside_a_heredoc() -> None:
    (update,) = ops(f"apply_patch <<'EOF'\n*** Begin Patch\n{BODY}*** End Patch\nEOF\n")
    assert isinstance(update, UpdateFile)
    assert (update.line_number, update.hunks[0].line_number) == (3, 4)


def test_blank_lines_between_operations_and_after_end_of_file_are_skipped() -> None:
    text = (
        "*** Delete File: a\n\n \n*** Add File: b\n+x\n\n*** Update File: c\n\n"
        "@@\n-y\n*** End of File\n\n@@\n-z\n"
    )
    delete, add_file, update = ops(text)
    assert delete == DeleteFile("a")
    assert add_file == AddFile("b", ("x",))
    assert update == UpdateFile(
        "c", None, (Hunk(None, (rem("y"),), True), Hunk(None, (rem("z"),), False))
    )


def test_padded_move_to() -> None:
    (update,) = ops("*** Update File: a\n  *** Move to:  b  \n@@\n-x\n")
    assert isinstance(update, UpdateFile)
    assert update.move_to == "b"


# -- errors ------------------------------------------------------------------


def test_error_message_names_line_and_expectation() -> None:
    text = "*** Begin Patch\n*** Delete File: x\n*** Update File: a\n@@\n a\n-b\nfoo\n*** End Patch"
    error = syntax_error(text)
    assert str(error) == (
        "apply_patch syntax error at line 7: expected a hunk line starting with "
        "' ', '-' or '+', or '@@', found 'foo'"
    )
    assert (error.line_number, error.line) == (7, "foo")
    assert error.expected == "a hunk line starting with ' ', '-' or '+', or '@@'"


def test_error_is_a_redline_error() -> None:
    assert isinstance(syntax_error("nonsense"), RedlineError)


@pytest.mark.parametrize(
    ("text", "line_number", "line", "expected"),
    [
        pytest.param(
            "*** Begin Patch\n*** End Patch\n",
            2,
            "*** End Patch",
            "the patch changes nothing",
            id="empty-patch",
        ),
        pytest.param("", 1, None, "the patch changes nothing", id="empty-text"),
        pytest.param(" \n\n", 1, None, "the patch changes nothing", id="blank-text"),
        pytest.param(
            "*** Begin Patch\n", 2, None, "the patch changes nothing", id="begin-marker-only"
        ),
        pytest.param(
            "*** Begin Patch\n*** Update File: foo.txt\n*** End Patch\n",
            3,
            "*** End Patch",
            "a hunk for 'foo.txt'",
            id="update-without-hunks",
        ),
        pytest.param(
            "*** Update File: a\n*** Move to: b\n*** Delete File: c\n",
            3,
            "*** Delete File: c",
            "an Update needs one even for a pure rename",
            id="rename-without-hunks",
        ),
        pytest.param(
            "*** Update File: a\n@@\n*** End Patch",
            3,
            "*** End Patch",
            "a hunk cannot be empty",
            id="at-at-without-lines",
        ),
        pytest.param(
            "*** Update File: a\n@@\n@@\n-x\n",
            3,
            "@@",
            "a hunk cannot be empty",
            id="two-at-at",
        ),
        pytest.param(
            "*** Update File: a\n@@\n",
            3,
            None,
            "a hunk cannot be empty",
            id="at-at-at-end-of-text",
        ),
        pytest.param(
            "*** Update File: a\n@@\n*** End of File\n",
            3,
            "*** End of File",
            "a hunk cannot be empty",
            id="end-of-file-without-lines",
        ),
        pytest.param(
            "*** Update File: a\n@@def f():\n-x\n",
            2,
            "@@def f():",
            "'@@' alone or '@@ ' followed by anchor text",
            id="at-at-without-space",
        ),
        pytest.param(
            "*** Update File: a\nfoo\n",
            2,
            "foo",
            "'@@' starting a hunk, or a hunk line starting with ' ', '-' or '+'",
            id="first-hunk-line-without-prefix",
        ),
        pytest.param(
            "*** Update File: a\n@@\n-x\n*** End of File\n y\n",
            5,
            " y",
            "a hunk line starting with ' ', '-' or '+', or '@@'",
            id="lines-after-end-of-file-need-at-at",
        ),
        pytest.param(
            "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch\n",
            2,
            "*** Frobnicate File: foo",
            "a file operation: '*** Add File: <path>', '*** Update File: <path>' "
            "or '*** Delete File: <path>'",
            id="unknown-header",
        ),
        pytest.param("hello\n", 1, "hello", "a file operation", id="not-a-patch"),
        pytest.param(
            "*** Add File: a\nhello\n",
            2,
            "hello",
            "a line of the new file starting with '+'",
            id="add-line-without-plus",
        ),
        pytest.param(
            "*** Add File: a\n+x\n\n+y\n",
            3,
            "",
            "write an empty line as a lone '+'",
            id="add-blank-line-then-more-lines",
        ),
        pytest.param(
            "*** Add File: a\n+x\n-y\n", 3, "-y", "a line of the new file", id="add-minus-line"
        ),
        pytest.param(
            "*** Move to: b\n@@\n-x\n",
            1,
            "*** Move to: b",
            "'*** Move to:' must directly follow its Update line",
            id="move-without-update",
        ),
        pytest.param(
            "*** Update File: a\n@@\n-x\n*** Move to: b\n",
            4,
            "*** Move to: b",
            "'*** Move to:' must directly follow its Update line",
            id="move-after-hunk",
        ),
        pytest.param(
            "*** Delete File: a\n*** End of File\n",
            2,
            "*** End of File",
            "'*** End of File' must directly follow hunk lines",
            id="end-of-file-outside-update",
        ),
        pytest.param(
            "*** Delete File: a\n@@\n-x\n",
            2,
            "@@",
            "hunks belong to an '*** Update File:' section",
            id="hunk-after-delete",
        ),
        pytest.param(
            "*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n",
            3,
            "*** End Patch",
            "'*** End Patch' must be the last line",
            id="text-after-end-patch",
        ),
        pytest.param(
            "*** Begin Patch\n*** Delete File: a\n*** Begin Patch\n*** End Patch\n",
            3,
            "*** Begin Patch",
            "'*** Begin Patch' may only open the patch",
            id="second-begin-patch",
        ),
        pytest.param(
            "*** Add File: \n+x\n",
            1,
            "*** Add File: ",
            "a file path after '*** Add File: '",
            id="empty-add-path",
        ),
        pytest.param(
            "*** Delete File:\n",
            1,
            "*** Delete File:",
            "a file path after '*** Delete File: '",
            id="empty-delete-path",
        ),
        pytest.param(
            "*** Update File:   \n@@\n-x\n",
            1,
            "*** Update File:   ",
            "a file path after '*** Update File: '",
            id="empty-update-path",
        ),
        pytest.param(
            "*** Update File: a\n*** Move to: \n@@\n-x\n",
            2,
            "*** Move to: ",
            "a file path after '*** Move to: '",
            id="empty-move-path",
        ),
        pytest.param(
            "<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n",
            5,
            None,
            "'EOF' closing the heredoc opened at line 1",
            id="unterminated-heredoc",
        ),
    ],
)
def test_syntax_errors(text: str, line_number: int, line: str | None, expected: str) -> None:
    error = syntax_error(text)
    assert (error.line_number, error.line) == (line_number, line)
    assert expected in error.expected
    found = "the end of the patch" if line is None else repr(line)
    assert str(error) == (
        f"apply_patch syntax error at line {line_number}: expected {error.expected}, found {found}"
    )


def test_long_lines_are_shortened_in_the_message_only() -> None:
    line = "x" * 500
    error = syntax_error(f"*** Delete File: a\n{line}\n")
    assert error.line == line
    assert len(str(error)) < 300
    assert str(error).endswith("'…")


# -- format_patch ------------------------------------------------------------


def test_format_patch_writes_the_strict_form() -> None:
    assert format_patch(FULL_PATCH) == FULL


@given(patches)
def test_format_then_parse_round_trips(patch: Patch) -> None:
    assert parse_patch(format_patch(patch)) == patch


# -- the Codex conformance scenarios ------------------------------------------


@pytest.mark.parametrize("patch_file", scenario_patches())
def test_scenario_patches(patch_file: Path) -> None:
    text = patch_file.read_text(encoding="utf-8")
    name = patch_file.parent.name
    if name in REJECTED_SCENARIOS:
        line_number, fragment = REJECTED_SCENARIOS[name]
        error = syntax_error(text)
        assert error.line_number == line_number
        assert fragment in error.expected
    else:
        assert parse_patch(text).operations


def test_scenarios_include_the_rejections_listed_here() -> None:
    if not SCENARIOS.is_dir():
        pytest.skip(_NO_SCENARIOS)
    present = {path.parent.name for path in SCENARIOS.glob("*/patch.txt")}
    assert set(REJECTED_SCENARIOS) <= present


def _scenario(name: str) -> Patch:
    if not SCENARIOS.is_dir():
        pytest.skip(_NO_SCENARIOS)
    return parse_patch((SCENARIOS / name / "patch.txt").read_text(encoding="utf-8"))


def test_scenario_move() -> None:
    assert _scenario("004_move_to_new_directory") == Patch(
        (
            UpdateFile(
                "old/name.txt",
                "renamed/dir/name.txt",
                (Hunk(None, (rem("old content"), add("new content")), False),),
            ),
        )
    )


def test_scenario_multiple_operations() -> None:
    assert [type(op) for op in _scenario("002_multiple_operations").operations] == [
        AddFile,
        DeleteFile,
        UpdateFile,
    ]


def test_scenario_end_of_file_marker() -> None:
    (update,) = _scenario("022_update_file_end_of_file_marker").operations
    assert isinstance(update, UpdateFile)
    assert update.hunks == (Hunk(None, (ctx("first"), rem("second"), add("second updated")), True),)


@pytest.mark.parametrize(
    "name",
    [
        "017_whitespace_padded_hunk_header",
        "018_whitespace_padded_patch_markers",
        "020_whitespace_padded_patch_marker_lines",
    ],
)
def test_scenarios_with_padding(name: str) -> None:
    (update,) = _scenario(name).operations
    assert isinstance(update, UpdateFile)
    assert len(update.hunks) == 1
    assert [line.kind for line in update.hunks[0].lines] == ["-", "+"]
