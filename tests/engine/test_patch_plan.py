"""engine.patch_plan and engine.patch: file groups, preflight, statuses and messages.

Everything runs against an in-memory snapshot; nothing touches the disk.
"""

from __future__ import annotations

import codecs

import pytest

from redline.engine.errors import RequestError
from redline.engine.patch import apply_patch
from redline.engine.patch_parse import PatchSyntaxError
from redline.engine.patch_plan import FileChange, plan_patch
from redline.engine.plan import PatchOutcome
from redline.engine.result import GroupReport


class Snapshot:
    """Files as bytes by normalised path; directories as a set of paths."""

    def __init__(self, files: dict[str, bytes] | None = None, dirs: tuple[str, ...] = ()) -> None:
        self.files = dict(files or {})
        self.dirs = set(dirs)
        self.reads: list[str] = []

    def relative(self, path: str) -> str:
        return path

    def read(self, path: str) -> bytes | None:
        self.reads.append(path)
        return self.files.get(path)

    def is_dir(self, path: str) -> bool:
        return path in self.dirs


def patch(*sections: str) -> str:
    return "*** Begin Patch\n" + "".join(sections) + "*** End Patch\n"


def update(path: str, *lines: str, move_to: str | None = None) -> str:
    move = f"*** Move to: {move_to}\n" if move_to else ""
    return f"*** Update File: {path}\n{move}" + "".join(line + "\n" for line in lines)


def add(path: str, *lines: str) -> str:
    return f"*** Add File: {path}\n" + "".join("+" + line + "\n" for line in lines)


def delete(path: str) -> str:
    return f"*** Delete File: {path}\n"


def run(
    text: str, files: dict[str, bytes] | None = None, dirs: tuple[str, ...] = ()
) -> PatchOutcome:
    return apply_patch(text, Snapshot(files, dirs))


def changes(outcome: PatchOutcome) -> dict[str, tuple[bytes | None, bytes | None]]:
    return {c.path: (c.before, c.after) for c in outcome.changes}


FILES = {"a.txt": b"alpha\n", "b.txt": b"beta\n", "c.txt": b"gamma\n"}
MISSING_HUNK = ["@@", "-not in the file", "+x"]


# --- file groups -------------------------------------------------------------------


def test_single_update() -> None:
    outcome = run(patch(update("a.txt", "@@", "-alpha", "+ALPHA")), FILES)
    result = outcome.result
    assert result.status == "applied"
    assert result.exit_code == 0
    assert result.error is None
    assert result.path == "a.txt"
    assert changes(outcome) == {"a.txt": (b"alpha\n", b"ALPHA\n")}
    assert result.committed == [GroupReport(["a.txt"], ["update a.txt"], None)]
    assert result.not_applied == []
    assert result.diff == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n"


def test_consecutive_updates_of_one_path_apply_in_order_in_memory() -> None:
    # The second section's context is a line the first section added.
    text = patch(
        update("a.txt", "@@", " alpha", "+added by the first section"),
        update("a.txt", "@@", " added by the first section", "+added by the second"),
    )
    outcome = run(text, FILES)
    assert outcome.result.status == "applied"
    assert changes(outcome) == {
        "a.txt": (b"alpha\n", b"alpha\nadded by the first section\nadded by the second\n")
    }
    assert outcome.plan is not None
    (group,) = outcome.plan.groups
    assert group.operations == ("update a.txt", "update a.txt")
    assert outcome.result.committed == [GroupReport(["a.txt"], ["update a.txt", "update a.txt"])]


def test_a_failing_later_section_fails_the_earlier_ones_of_the_same_path() -> None:
    text = patch(update("a.txt", "@@", "-alpha", "+ALPHA"), update("a.txt", *MISSING_HUNK))
    outcome = run(text, FILES)
    assert outcome.result.status == "failed"
    assert outcome.changes == []
    (group,) = outcome.result.not_applied
    assert group.operations == ["update a.txt", "update a.txt"]


def test_move_binds_source_and_destination() -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA", move_to="moved/a.txt"),
        update("moved/a.txt", "@@", " ALPHA", "+more"),
    )
    outcome = run(text, FILES)
    assert outcome.result.status == "applied"
    assert changes(outcome) == {
        "a.txt": (b"alpha\n", None),
        "moved/a.txt": (None, b"ALPHA\nmore\n"),
    }
    assert outcome.result.committed == [
        GroupReport(
            ["a.txt", "moved/a.txt"],
            ["update a.txt and move it to moved/a.txt", "update moved/a.txt"],
        )
    ]
    assert outcome.result.path is None  # two paths


def test_chain_through_a_move_rolls_back_as_a_unit() -> None:
    # Update a → Move b, then Update b fails: the move does not happen either.
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA", move_to="b2.txt"),
        update("b2.txt", *MISSING_HUNK),
        update("c.txt", "@@", "-gamma", "+GAMMA"),
    )
    outcome = run(text, FILES)
    assert outcome.result.status == "partially_applied"
    assert changes(outcome) == {"c.txt": (b"gamma\n", b"GAMMA\n")}
    (failed,) = outcome.result.not_applied
    assert failed.paths == ["a.txt", "b2.txt"]
    assert failed.operations == ["update a.txt and move it to b2.txt", "update b2.txt"]
    assert failed.reason is not None
    assert failed.reason.startswith("hunk not found (1/1) in b2.txt")


def test_independent_groups_apply_when_another_fails() -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA"),
        update("b.txt", *MISSING_HUNK),
        add("new.txt", "fresh"),
    )
    outcome = run(text, FILES)
    assert outcome.result.status == "partially_applied"
    assert changes(outcome) == {
        "a.txt": (b"alpha\n", b"ALPHA\n"),
        "new.txt": (None, b"fresh\n"),
    }
    assert [g.paths for g in outcome.result.committed] == [["a.txt"], ["new.txt"]]
    assert [g.paths for g in outcome.result.not_applied] == [["b.txt"]]


def test_later_operations_touching_a_failed_path_are_excluded() -> None:
    text = patch(
        update("a.txt", *MISSING_HUNK),
        update("b.txt", "@@", "-beta", "+BETA"),
        update("a.txt", "@@", "-alpha", "+ALPHA"),  # would apply on its own
        delete("a.txt"),
    )
    outcome = run(text, FILES)
    assert outcome.result.status == "partially_applied"
    assert changes(outcome) == {"b.txt": (b"beta\n", b"BETA\n")}
    (failed,) = outcome.result.not_applied
    assert failed.paths == ["a.txt"]
    assert failed.operations == ["update a.txt", "update a.txt", "delete a.txt"]


def test_a_move_source_used_later_joins_the_group() -> None:
    # Delete of the moved-away source fails, and takes the move with it.
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA", move_to="z.txt"),
        delete("a.txt"),
    )
    outcome = run(text, FILES)
    assert outcome.result.status == "failed"
    assert outcome.changes == []
    assert outcome.result.error == (
        "apply_patch failed: update a.txt and move it to z.txt, delete a.txt: "
        "cannot delete missing file: a.txt"
    )


def test_delete_then_add_of_one_path_is_one_group() -> None:
    outcome = run(patch(delete("a.txt"), add("a.txt", "reborn")), FILES)
    assert outcome.result.status == "applied"
    assert changes(outcome) == {"a.txt": (b"alpha\n", b"reborn\n")}
    assert outcome.result.committed == [GroupReport(["a.txt"], ["delete a.txt", "add a.txt"])]


def test_paths_are_normalised() -> None:
    outcome = run(patch(update("./a.txt", "@@", "-alpha", "+ALPHA")), FILES)
    assert changes(outcome) == {"a.txt": (b"alpha\n", b"ALPHA\n")}


# --- preflight: nothing changes, status invalid ---------------------------------------


def _invalid(text: str, files: dict[str, bytes] | None = None) -> str:
    outcome = run(text, FILES if files is None else files)
    assert outcome.result.status == "invalid"
    assert outcome.result.exit_code == 2
    assert outcome.changes == []
    assert outcome.plan is None
    assert outcome.result.committed == outcome.result.not_applied == []
    assert outcome.result.error is not None
    return outcome.result.error


def test_syntax_error_names_the_line() -> None:
    text = patch(update("a.txt", "@@", "-alpha", "+ALPHA"), "garbage here\n")
    error = _invalid(text)
    assert error.startswith("apply_patch syntax error at line 6:")
    assert "'garbage here'" in error
    with pytest.raises(PatchSyntaxError) as info:
        plan_patch(text, Snapshot(FILES))
    assert info.value.line_number == 6


def test_syntax_error_keeps_valid_operations_from_applying() -> None:
    text = patch(add("new.txt", "x"), "*** Update File: a.txt\n")
    assert "a hunk for 'a.txt'" in _invalid(text)


def test_overlapping_file_and_directory_paths() -> None:
    error = _invalid(patch(add("dir", "x"), add("dir/file", "y")))
    assert error == (
        "apply_patch contains overlapping operations: 'dir' is a file in one operation and a "
        "directory of 'dir/file' in another; split the patch"
    )


def test_overlapping_paths_through_a_move() -> None:
    error = _invalid(patch(update("a.txt", "@@", "-alpha", "+x", move_to="d"), add("d/e.txt", "y")))
    assert error.startswith("apply_patch contains overlapping operations")


def test_two_spellings_of_one_file() -> None:
    error = _invalid(patch(add("a/b.txt", "x"), update("a/./b.txt", "@@", "-x", "+y")), {})
    assert error == (
        "apply_patch contains overlapping operations: 'a/b.txt' and 'a/./b.txt' name the same "
        "file; spell each path one way"
    )


@pytest.mark.parametrize("spelling", ["a//b.txt", "./a/b.txt", "a/./b.txt"])
def test_other_spellings_of_one_file(spelling: str) -> None:
    error = _invalid(patch(delete("a/b.txt"), delete(spelling)), {"a/b.txt": b"x\n"})
    assert "name the same file" in error


def test_a_backslash_is_refused_not_read_as_a_folder() -> None:
    error = _invalid(patch(delete("a/b.txt"), delete("a\\b.txt")), {"a/b.txt": b"x\n"})
    assert error == (
        "apply_patch: path 'a\\\\b.txt' contains a backslash; separate folders with forward "
        "slashes ('a/b.txt') — redline does not edit file names that contain a backslash"
    )


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        (add("/etc/passwd", "x"), "is absolute"),
        (add("C:\\x.txt", "x"), "is absolute"),
        (delete("../outside.txt"), "contains '..'"),
        (delete("sub/../../outside.txt"), "contains '..'"),
        (update("a.txt", "@@", "-alpha", "+x", move_to="/tmp/stolen.txt"), "is absolute"),
        (update("a.txt", "@@", "-alpha", "+x", move_to="../stolen.txt"), "contains '..'"),
        (add(".git/hooks/pre-push", "x"), "inside a .git directory"),
        (update("a.txt", "@@", "-alpha", "+x", move_to=".git/hooks/x"), ".git directory"),
    ],
)
def test_bad_paths_are_refused_before_anything(section: str, problem: str) -> None:
    # A valid group comes first: it is not applied either.
    error = _invalid(patch(update("b.txt", "@@", "-beta", "+BETA"), section))
    assert error.startswith("apply_patch: path ")
    assert problem in error
    with pytest.raises(RequestError):
        plan_patch(patch(section), Snapshot(FILES))


def test_preflight_reads_nothing() -> None:
    snapshot = Snapshot(FILES)
    outcome = apply_patch(patch(update("a.txt", "@@", "-alpha", "+x"), add("/abs", "x")), snapshot)
    assert outcome.result.status == "invalid"
    assert snapshot.reads == []


# --- operation failures ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "reason"),
    [
        (update("missing.txt", "@@", "-x", "+y"), "cannot update missing file: missing.txt"),
        (add("a.txt", "x"), "cannot add file that already exists: a.txt"),
        (delete("missing.txt"), "cannot delete missing file: missing.txt"),
        (
            delete("sub"),
            "cannot delete sub: it is a directory (apply_patch works on files)",
        ),
        (
            update("sub", "@@", "-x", "+y"),
            "cannot update sub: it is a directory (apply_patch works on files)",
        ),
        (add("sub", "x"), "cannot add sub: it is a directory (apply_patch works on files)"),
        (
            update("a.txt", "@@", "-alpha", "+x", move_to="b.txt"),
            "cannot move a.txt to b.txt: a file already exists there (apply_patch does not "
            "overwrite; delete it first or pick another name)",
        ),
        (
            update("a.txt", "@@", "-alpha", "+x", move_to="sub"),
            "cannot move a.txt to sub: it is a directory (apply_patch works on files; name the "
            "file inside it)",
        ),
        (
            update("bin.dat", "@@", "-x", "+y"),
            "file is binary or not in a detectable text encoding",
        ),
    ],
)
def test_operation_failure_fails_only_its_group(section: str, reason: str) -> None:
    files = {**FILES, "bin.dat": b"\x00\x01\x02x\n"}
    outcome = run(patch(section, update("c.txt", "@@", "-gamma", "+GAMMA")), files, dirs=("sub",))
    result = outcome.result
    assert result.status == "partially_applied"
    assert result.exit_code == 3
    assert changes(outcome) == {"c.txt": (b"gamma\n", b"GAMMA\n")}
    (failed,) = result.not_applied
    assert failed.reason is not None
    assert failed.reason.startswith(reason)
    assert result.error is not None
    assert reason in result.error


def test_move_onto_existing_file_changes_neither_file() -> None:
    outcome = run(patch(update("a.txt", "@@", "-alpha", "+x", move_to="b.txt")), FILES)
    assert outcome.result.status == "failed"
    assert outcome.result.exit_code == 1
    assert outcome.changes == []


def test_move_to_its_own_path_is_an_update() -> None:
    outcome = run(patch(update("a.txt", "@@", "-alpha", "+ALPHA", move_to="a.txt")), FILES)
    assert outcome.result.status == "applied"
    assert changes(outcome) == {"a.txt": (b"alpha\n", b"ALPHA\n")}


# --- statuses and messages -------------------------------------------------------------


def test_partial_message_singular() -> None:
    text = patch(update("a.txt", "@@", "-alpha", "+ALPHA"), update("b.txt", *MISSING_HUNK))
    result = run(text, FILES).result
    assert result.status == "partially_applied"
    assert result.exit_code == 3
    assert result.error == (
        "apply_patch partially applied: 1 change committed, 1 file group not applied: "
        "update b.txt: hunk not found (1/1) in b.txt: expected line 'not in the file', which "
        "is not in the file; re-read the file and copy the context lines exactly. "
        "The committed changes are in place; do not redo them."
    )
    assert result.committed == [GroupReport(["a.txt"], ["update a.txt"], None)]
    (failed,) = result.not_applied
    assert (failed.paths, failed.operations) == (["b.txt"], ["update b.txt"])
    assert failed.reason is not None
    assert failed.reason.startswith("hunk not found (1/1) in b.txt")


def test_partial_message_plural() -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA"),
        delete("gone.txt"),
        add("new.txt", "n"),
        add("c.txt", "exists"),
    )
    result = run(text, FILES).result
    assert result.status == "partially_applied"
    assert result.error == (
        "apply_patch partially applied: 2 changes committed, 2 file groups not applied: "
        "delete gone.txt: cannot delete missing file: gone.txt; "
        "add c.txt: cannot add file that already exists: c.txt. "
        "The committed changes are in place; do not redo them."
    )
    assert [(g.paths, g.operations) for g in result.committed] == [
        (["a.txt"], ["update a.txt"]),
        (["new.txt"], ["add new.txt"]),
    ]
    assert [(g.paths, g.reason) for g in result.not_applied] == [
        (["gone.txt"], "cannot delete missing file: gone.txt"),
        (["c.txt"], "cannot add file that already exists: c.txt"),
    ]


def test_changes_are_counted_by_operation() -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+ALPHA"),
        update("a.txt", "@@", "-ALPHA", "+AGAIN"),
        delete("missing.txt"),
    )
    error = run(text, FILES).result.error
    assert error is not None
    assert error.startswith(
        "apply_patch partially applied: 2 changes committed, 1 file group not applied"
    )


def test_failed_single_group_message() -> None:
    result = run(patch(add("a.txt", "x")), FILES).result
    assert result.status == "failed"
    assert result.exit_code == 1
    assert (
        result.error == "apply_patch failed: add a.txt: cannot add file that already exists: a.txt"
    )
    assert result.committed == []
    assert result.diff is None


def test_failed_several_groups_message() -> None:
    result = run(patch(add("a.txt", "x"), delete("missing.txt")), FILES).result
    assert result.status == "failed"
    assert result.error == (
        "apply_patch failed: 2 file groups not applied: add a.txt: cannot add file that already "
        "exists: a.txt; delete missing.txt: cannot delete missing file: missing.txt"
    )


def test_no_change() -> None:
    outcome = run(patch(update("a.txt", "@@", "-alpha", "+alpha")), FILES)
    assert outcome.result.status == "no_change"
    assert outcome.result.exit_code == 0
    assert outcome.result.ok
    assert outcome.changes == []
    assert outcome.result.diff is None
    assert outcome.result.error is None


def test_add_then_delete_in_one_patch_is_no_change() -> None:
    outcome = run(patch(add("tmp.txt", "x"), delete("tmp.txt")), FILES)
    assert outcome.result.status == "no_change"
    assert outcome.changes == []


# --- evidence ---------------------------------------------------------------------------


def test_hunk_evidence_names_its_path() -> None:
    files = {"a.txt": b"one\ntwo\nthree\n", "b.txt": b"x  \ny\n"}
    text = patch(
        update("a.txt", "@@", "-one", "+ONE", "@@", "-three", "+THREE"),
        update("b.txt", "@@", " x", "-y", "+Y"),
    )
    result = run(text, files).result
    assert [(h.path, h.hunk, h.match_type, h.start_line, h.end_line) for h in result.hunks] == [
        ("a.txt", 1, "exact", 1, 1),
        ("a.txt", 2, "exact", 3, 3),
        ("b.txt", 1, "rstrip", 1, 2),
    ]
    assert result.hunks[2].matched_text == "x  \ny"
    assert result.hunks[2].confidence == 0.99
    # The result carries the weakest hunk's match type and confidence.
    assert (result.match_type, result.confidence) == ("rstrip", 0.99)


def test_hunk_evidence_of_failed_groups_is_left_out() -> None:
    text = patch(
        update("a.txt", "@@", "-alpha", "+A"), update("b.txt", "@@", "-beta", "+B"), delete("nope")
    )
    result = run(text, FILES).result
    assert [h.path for h in result.hunks] == ["a.txt", "b.txt"]
    text = patch(update("a.txt", "@@", "-alpha", "+A", "@@", "-nope", "+x"))
    assert run(text, FILES).result.hunks == []


def test_hunk_evidence_reports_anchor_and_other_matches() -> None:
    files = {"f.py": b"def a():\n    return 1\ndef b():\n    return 1\n"}
    result = run(
        patch(update("f.py", "@@ def b():", "-    return 1", "+    return 2")), files
    ).result
    (h,) = result.hunks
    assert (h.anchor_found, h.other_matches, h.start_line) == (True, 1, 4)
    assert result.to_dict()["hunks"][0]["path"] == "f.py"


def test_invisible_characters_in_added_lines_are_reported() -> None:
    text = patch(add("n.txt", "a\u200bb"), update("a.txt", "@@", "-alpha", "+al\u2060pha\u200b!"))
    outcome = run(text, FILES)
    assert changes(outcome) == {"n.txt": (None, b"ab\n"), "a.txt": (b"alpha\n", b"alpha!\n")}
    assert outcome.result.cleaned == ["U+200B×2", "U+2060×1"]


# --- encodings and new files -----------------------------------------------------------


@pytest.mark.parametrize(
    ("bom", "codec"), [(codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be")]
)
def test_utf16_with_bom_is_written_back_in_utf16(bom: bytes, codec: str) -> None:
    before = bom + "first\r\nsecond\r\n".encode(codec)
    outcome = run(
        patch(update("u.txt", "@@", " first", "-second", "+zweite ✓", "+third")), {"u.txt": before}
    )
    assert outcome.result.status == "applied"
    assert changes(outcome) == {
        "u.txt": (before, bom + "first\r\nzweite ✓\r\nthird\r\n".encode(codec))
    }


def test_utf8_bom_is_kept() -> None:
    before = codecs.BOM_UTF8 + b"x = 1\n"
    outcome = run(patch(update("b.py", "@@", "-x = 1", "+x = 2")), {"b.py": before})
    assert changes(outcome) == {"b.py": (before, codecs.BOM_UTF8 + b"x = 2\n")}


CHINESE = (
    "# 配置文件说明\n"
    "这是一个用于测试编码检测的中文文本文件，内容需要足够长，字符集检测才能可靠地识别它的编码。\n"
    "第一部分：数据库连接的设置，包括主机名、端口号、用户名和密码等信息。\n"
    "第二部分：日志记录的级别与输出位置，默认写入当前目录下的日志文件。\n"
    "第三部分：缓存的大小和过期时间，单位分别是兆字节和秒。\n"
    "超时时间 = 三十秒\n"
    "第四部分：其他选项，例如是否启用调试模式以及界面使用的语言。\n"
    "结束。\n"
)


def test_gb18030_file_is_written_back_in_gb18030() -> None:
    before = CHINESE.encode("gb18030")
    assert len(before) >= 300
    with pytest.raises(UnicodeDecodeError):
        before.decode("utf-8")
    text = patch(
        update("config.txt", "@@", "-超时时间 = 三十秒", "+超时时间 = 六十秒", "+重试次数 = 三次")
    )
    outcome = run(text, {"config.txt": before})
    assert outcome.result.status == "applied"
    expected = CHINESE.replace("超时时间 = 三十秒\n", "超时时间 = 六十秒\n重试次数 = 三次\n")
    assert changes(outcome) == {"config.txt": (before, expected.encode("gb18030"))}
    assert outcome.result.diff is not None
    assert "+超时时间 = 六十秒" in outcome.result.diff


def test_add_writes_utf8_with_a_final_newline() -> None:
    outcome = run(patch(add("docs/new.md", "# Título", "", "naïve ✓")), {})
    assert changes(outcome) == {"docs/new.md": (None, "# Título\n\nnaïve ✓\n".encode())}
    assert outcome.result.diff is not None
    assert outcome.result.diff.startswith("--- /dev/null\n+++ b/docs/new.md\n")


def test_add_with_no_lines_is_an_empty_file() -> None:
    outcome = run(patch(add("empty.txt")), {})
    assert changes(outcome) == {"empty.txt": (None, b"")}


def test_delete_diff_ends_in_dev_null() -> None:
    outcome = run(patch(delete("a.txt")), FILES)
    assert changes(outcome) == {"a.txt": (b"alpha\n", None)}
    assert outcome.result.diff is not None
    assert outcome.result.diff.startswith("--- a/a.txt\n+++ /dev/null\n")


def test_changes_keep_the_order_of_the_groups() -> None:
    text = patch(add("z.txt", "z"), update("a.txt", "@@", "-alpha", "+A"), delete("c.txt"))
    outcome = run(text, FILES)
    assert [(c.path, c.before, c.after) for c in outcome.changes] == [
        ("z.txt", None, b"z\n"),
        ("a.txt", b"alpha\n", b"A\n"),
        ("c.txt", b"gamma\n", None),
    ]
    assert all(isinstance(c, FileChange) for c in outcome.changes)


# --- exit codes --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "status", "code"),
    [
        (patch(update("a.txt", "@@", "-alpha", "+A")), "applied", 0),
        (patch(update("a.txt", "@@", "-alpha", "+alpha")), "no_change", 0),
        (patch(update("a.txt", *MISSING_HUNK)), "failed", 1),
        ("not a patch at all\n", "invalid", 2),
        (patch(update("a.txt", "@@", "-alpha", "+A"), delete("nope")), "partially_applied", 3),
    ],
)
def test_exit_codes(text: str, status: str, code: int) -> None:
    result = run(text, FILES).result
    assert (result.status, result.exit_code) == (status, code)
