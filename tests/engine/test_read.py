"""engine.read: numbered lines, in the numbering the edit errors use."""

from __future__ import annotations

import codecs

import pytest

from redline.engine.edit import EditItem, EditRequest, apply_edit
from redline.engine.errors import RequestError
from redline.engine.plan import MemorySnapshot
from redline.engine.read import (
    ReadRequest,
    is_a_directory,
    no_such_file,
    numbered,
    plan_read,
    read_text,
)
from redline.engine.result import Result

TEXT = b"".join(f"line {n}\n".encode() for n in range(1, 11))


def read(data: bytes, offset: int = 1, limit: int = 2000) -> Result:
    return read_text(data, ReadRequest("f.txt", offset, limit), "f.txt")


def test_the_whole_file_numbered() -> None:
    result = read(b"alpha\n\tbeta\n\ngamma")
    assert result.status == "read"
    assert result.content == "     1\talpha\n     2\t\tbeta\n     3\t\n     4\tgamma"
    assert (result.start_line, result.end_line, result.total_lines) == (1, 4, 4)
    assert result.truncated is False
    assert (result.encoding, result.line_ending) == ("utf-8", "lf")
    assert result.hint is None
    assert result.exit_code == 0 and result.ok


def test_offset_and_limit_pick_lines_and_say_what_follows() -> None:
    result = read(TEXT, offset=4, limit=3)
    assert result.content == numbered(["line 4", "line 5", "line 6"], 4)
    assert (result.start_line, result.end_line, result.total_lines) == (4, 6, 10)
    assert result.truncated is True
    assert result.hint is not None and "offset=7" in result.hint
    last = read(TEXT, offset=9, limit=5)
    assert (last.start_line, last.end_line, last.truncated) == (9, 10, False)


def test_an_offset_past_the_end_is_refused_with_the_range() -> None:
    result = read(TEXT, offset=11)
    assert result.status == "invalid"
    assert result.error == (
        "offset 11 is past the end of 'f.txt', which has 10 lines; read from an offset "
        "between 1 and 10"
    )
    assert result.content is None


def test_an_empty_file_has_no_lines() -> None:
    result = read(b"")
    assert result.status == "read"
    assert (result.content, result.total_lines, result.start_line, result.end_line) == ("", 0, 1, 0)
    assert read(b"", offset=2).status == "invalid"


def test_a_binary_file_is_refused() -> None:
    result = read(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert result.status == "invalid"
    assert result.error is not None and "'f.txt' is a binary file" in result.error
    assert "read shows text files only" in result.error


@pytest.mark.parametrize(
    ("data", "encoding", "ending"),
    [
        (b"a\r\nb\r\n", "utf-8", "crlf"),
        (b"a\rb\r", "utf-8", "cr"),
        (b"a\r\nb\n", "utf-8", "mixed"),
        (codecs.BOM_UTF8 + b"a\nb", "utf-8 with BOM", "lf"),
        (codecs.BOM_UTF16_LE + "a\r\nb\r\n".encode("utf-16-le"), "utf-16-le with BOM", "crlf"),
        ("第一行：你好\n第二行：世界，测试文件\n".encode("gb18030"), "gb18030", "lf"),
    ],
    ids=["crlf", "cr", "mixed", "utf8-bom", "utf16", "gb18030"],
)
def test_encoding_and_line_endings_are_reported(data: bytes, encoding: str, ending: str) -> None:
    result = read(data)
    assert (result.encoding, result.line_ending) == (encoding, ending)
    assert result.content is not None and "\r" not in result.content
    assert result.total_lines == 2


def test_numbers_are_the_ones_edit_errors_give() -> None:
    """An ambiguous edit names the lines of its matches; read shows that text there."""
    data = b"x = 1\ndef f():\n    return 1\n\ndef g():\n    return 1\n"
    outcome = apply_edit(data, EditRequest("f.txt", (EditItem("return 1", "return 2"),)))
    lines = [m.start_line for m in outcome.result.matches]
    assert lines == [3, 6]
    content = read(data).content or ""
    shown = dict(line.split("\t", 1) for line in content.split("\n"))
    for n in lines:
        assert shown[f"{n:>6}"] == "    return 1"


# -- the read planned against a snapshot, as every tool is --------------------------------


def test_a_read_is_planned_against_a_snapshot() -> None:
    files = MemorySnapshot({"src/a.py": b"x = 1\ny = 2\n"})
    result = plan_read(ReadRequest("./src/a.py", 2, 1), files)
    assert (result.status, result.path, result.content) == ("read", "src/a.py", "     2\ty = 2")


def test_a_folder_or_a_missing_file_is_worded_as_every_tool_words_it() -> None:
    files = MemorySnapshot({"src/a.py": b"x\n"})
    folder = plan_read(ReadRequest("src"), files)
    assert (folder.status, folder.error) == ("invalid", is_a_directory("src", "read"))
    missing = plan_read(ReadRequest("src/b.py"), files)
    assert (missing.status, missing.error) == ("invalid", no_such_file("src/b.py", "read"))


@pytest.mark.parametrize("path", ["../outside.txt", ".git/config", "/etc/passwd"])
def test_the_path_policy_refuses_before_anything_is_read(path: str) -> None:
    class Untouchable(MemorySnapshot):
        def read(self, path: str) -> bytes | None:
            raise AssertionError(f"read {path!r}")

    result = plan_read(ReadRequest(path), Untouchable({}))
    assert result.status == "invalid" and result.error


def test_a_file_the_snapshot_cannot_read_is_refused_with_its_reason() -> None:
    class Refusing(MemorySnapshot):
        def read(self, path: str) -> bytes | None:
            raise RequestError(f"cannot read {path!r}: Permission denied", "path")

    result = plan_read(ReadRequest("a.txt"), Refusing({}))
    assert (result.status, result.error) == ("invalid", "cannot read 'a.txt': Permission denied")
