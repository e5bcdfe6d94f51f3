"""engine.write: whole-file write and delete, planned in memory as one file group."""

from __future__ import annotations

import codecs

import pytest

from redline.engine.patch_plan import MemorySnapshot
from redline.engine.plan import PatchOutcome
from redline.engine.write import DeleteRequest, LineEnding, WriteRequest, plan_file

CRLF_FILE = b"one\r\ntwo\r\nthree\r\n"


def write(
    files: dict[str, bytes], path: str, content: str, line_ending: LineEnding | None = None
) -> PatchOutcome:
    return plan_file(WriteRequest(path, content, line_ending), MemorySnapshot(files))


def test_a_new_file_is_utf8_with_lf_endings() -> None:
    outcome = write({}, "src/new.py", "a = 1\r\nb = 2\n")
    result = outcome.result
    assert result.status == "applied"
    assert result.path == "src/new.py"
    assert (result.encoding, result.line_ending) == ("utf-8", "lf")
    [change] = outcome.changes
    assert (change.path, change.before, change.after) == ("src/new.py", None, b"a = 1\nb = 2\n")
    assert result.diff is not None and result.diff.startswith("--- /dev/null\n+++ b/src/new.py")
    assert result.match_type is None and result.confidence is None
    assert outcome.plan is not None
    assert [g.operations for g in outcome.plan.applied] == [("create src/new.py",)]


def test_a_new_file_takes_crlf_when_asked() -> None:
    outcome = write({}, "win.bat", "echo a\necho b\n", "crlf")
    assert outcome.changes[0].after == b"echo a\r\necho b\r\n"
    assert outcome.result.line_ending == "crlf"


@pytest.mark.parametrize("content", ["uno\ndos\n", "uno\r\ndos\r\n", "uno\rdos\r"])
def test_a_crlf_file_stays_crlf(content: str) -> None:
    outcome = write({"w.txt": CRLF_FILE}, "w.txt", content)
    assert outcome.changes[0].after == b"uno\r\ndos\r\n"
    assert outcome.result.line_ending == "crlf"
    assert outcome.plan is not None
    assert outcome.plan.applied[0].operations == ("overwrite w.txt",)
    # The diff reads as text, without carriage returns.
    assert outcome.result.diff is not None and "\r" not in outcome.result.diff
    assert "-one\n" in outcome.result.diff and "+uno\n" in outcome.result.diff


def test_a_cr_file_stays_cr() -> None:
    outcome = write({"mac.txt": b"a\rb\r"}, "mac.txt", "x\ny\n")
    assert outcome.changes[0].after == b"x\ry\r"
    assert outcome.result.line_ending == "cr"


@pytest.mark.parametrize(
    ("before", "after", "style"),
    [
        (b"a\r\nb\r\nc\n", b"x\r\ny\r\n", "crlf"),  # CRLF used most
        (b"a\nb\r\nc\n", b"x\ny\n", "lf"),  # LF used most
        (b"a\r\nb\n", b"x\r\ny\r\n", "crlf"),  # a tie: the first one seen
        (b"a\nb\r\n", b"x\ny\n", "lf"),
    ],
)
def test_a_mixed_file_takes_the_ending_it_uses_most(
    before: bytes, after: bytes, style: str
) -> None:
    outcome = write({"m.txt": before}, "m.txt", "x\ny\n")
    assert outcome.changes[0].after == after
    assert outcome.result.line_ending == style


def test_line_ending_given_wins_over_the_files() -> None:
    outcome = write({"w.txt": CRLF_FILE}, "w.txt", "one\r\ntwo\r\n", "lf")
    assert outcome.changes[0].after == b"one\ntwo\n"
    assert outcome.result.line_ending == "lf"


def test_a_file_without_newlines_gets_lf() -> None:
    outcome = write({"one.txt": b"single"}, "one.txt", "first\nsecond\n")
    assert outcome.changes[0].after == b"first\nsecond\n"


@pytest.mark.parametrize(
    ("data", "encoding", "name"),
    [
        (codecs.BOM_UTF16_LE + "héllo\r\n".encode("utf-16-le"), "utf-16-le", "utf-16-le with BOM"),
        (codecs.BOM_UTF8 + "héllo\n".encode(), "utf-8", "utf-8 with BOM"),
        ("中文注释：你好世界，这是一个测试文件。\n".encode("gb18030"), "gb18030", "gb18030"),
    ],
    ids=["utf16-bom", "utf8-bom", "gb18030"],
)
def test_the_files_encoding_and_bom_are_kept(data: bytes, encoding: str, name: str) -> None:
    outcome = write({"t.txt": data}, "t.txt", "新的内容：再见\n")
    after = outcome.changes[0].after
    assert after is not None
    bom = next((b for b in (codecs.BOM_UTF8, codecs.BOM_UTF16_LE) if data.startswith(b)), b"")
    assert after.startswith(bom)
    newline = "\r\n" if b"\r" in data else "\n"
    assert after[len(bom) :].decode(encoding) == f"新的内容：再见{newline}"
    assert outcome.result.encoding == name
    assert outcome.result.diff is not None and "+新的内容：再见" in outcome.result.diff


def test_a_character_the_encoding_lacks_is_refused() -> None:
    data = "café\n".encode("cp1252") + "naïve résumé déjà vu\n".encode("cp1252")
    outcome = write({"l.txt": data}, "l.txt", "emoji 🎉\n")
    assert outcome.result.status == "invalid"
    assert outcome.changes == []
    error = outcome.result.error or ""
    assert "cannot write 'l.txt'" in error and "cannot represent" in error
    assert "convert the file to UTF-8" in error


def test_invisible_characters_are_cleaned_and_reported() -> None:
    outcome = write({}, "z.py", "a\u200b = 1\u00ad\n\ufeffb = 2\n")
    assert outcome.changes[0].after == b"a = 1\nb = 2\n"
    assert outcome.result.cleaned == ["U+00AD×1", "U+200B×1", "U+FEFF×1"]


def test_a_binary_target_is_refused_with_what_to_do() -> None:
    png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
    outcome = write({"logo.png": png}, "logo.png", "text\n")
    result = outcome.result
    assert result.status == "invalid"
    assert outcome.changes == []
    assert result.error is not None
    assert "'logo.png' is a binary file" in result.error
    assert "delete it first, then write the new file" in result.error


def test_identical_bytes_are_no_change() -> None:
    outcome = write({"w.txt": CRLF_FILE}, "w.txt", "one\ntwo\nthree\n")
    assert outcome.result.status == "no_change"
    assert outcome.changes == []
    assert outcome.result.diff is None
    assert outcome.plan is not None and outcome.plan.applied == []


@pytest.mark.parametrize(
    ("files", "path", "says"),
    [
        ({"pkg/mod.py": b"x\n"}, "pkg", "'pkg' is a directory; write works on one file"),
        ({"pkg": b"x\n"}, "pkg/mod.py", "'pkg' is a file, so nothing can be inside it"),
        ({}, ".git/config", "is inside a .git directory"),
        ({}, "../up.txt", "contains '..'"),
        ({}, "/etc/passwd", "is absolute"),
    ],
)
def test_refused_paths(files: dict[str, bytes], path: str, says: str) -> None:
    outcome = write(files, path, "x\n")
    assert outcome.result.status == "invalid"
    assert says in (outcome.result.error or "")
    assert outcome.changes == []


def test_delete_removes_a_file_and_shows_its_lines_going() -> None:
    outcome = plan_file(DeleteRequest("c.txt"), MemorySnapshot({"c.txt": b"alpha\nbeta\n"}))
    assert outcome.result.status == "applied"
    [change] = outcome.changes
    assert (change.before, change.after) == (b"alpha\nbeta\n", None)
    assert outcome.result.diff == "--- a/c.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-alpha\n-beta\n"
    assert outcome.plan is not None
    assert outcome.plan.applied[0].operations == ("delete c.txt",)


def test_delete_takes_a_binary_file_without_a_diff() -> None:
    outcome = plan_file(DeleteRequest("b.bin"), MemorySnapshot({"b.bin": b"\x00\x01"}))
    assert outcome.result.status == "applied"
    assert outcome.result.diff is None
    assert outcome.changes[0].after is None


def test_delete_refuses_a_folder_and_a_missing_file() -> None:
    snapshot = MemorySnapshot({"pkg/mod.py": b"x\n"})
    folder = plan_file(DeleteRequest("pkg"), snapshot).result
    assert folder.status == "invalid"
    assert folder.error == "'pkg' is a directory; delete works on one file — name a file inside it"
    missing = plan_file(DeleteRequest("pkg/gone.py"), snapshot).result
    assert missing.status == "invalid"
    assert missing.error is not None
    assert "file 'pkg/gone.py' does not exist; nothing was deleted" in missing.error
    assert "check the spelling and the folder" in missing.error
