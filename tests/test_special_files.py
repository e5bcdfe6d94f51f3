"""Files that are not regular files: refused before they are read, in every mode.

A FIFO blocks a reader until someone writes to it, and a character device such
as /dev/zero never ends: an edit of one, or an ``*** Add File:`` over an
untracked one in a session worktree, must answer at once with a refusal — and
the daemon must go on serving everyone else.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cli_support import redline_script
from gitmode_fixtures import GitMode, git_mode
from redline.fsops.atomic import NotRegular, read_regular

REFUSAL = "is not a regular file (a FIFO, socket or device); redline edits regular files only"


def edit(path: str) -> dict[str, Any]:
    return {"tool": "edit", "path": path, "old_string": "a", "new_string": "b"}


def patch(body: str) -> dict[str, Any]:
    return {"tool": "apply_patch", "patch": f"*** Begin Patch\n{body}*** End Patch\n"}


def make_device(path: Path) -> None:
    """A character device like /dev/zero, where this platform lets the tests make one."""
    try:
        os.mknod(path, 0o644 | stat.S_IFCHR, os.makedev(1, 5))
    except (PermissionError, AttributeError):
        pytest.skip("making a device node needs privileges this run does not have")


SPECIAL = {"fifo": os.mkfifo, "device": make_device}


def test_read_regular_refuses_a_fifo_at_once_even_when_nobody_writes(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = threading.Event()
    errors: list[BaseException] = []

    def read() -> None:
        try:
            read_regular(fifo)
        except BaseException as exc:
            errors.append(exc)
        done.set()

    threading.Thread(target=read, daemon=True).start()
    assert done.wait(5), "reading a FIFO blocked"
    assert [type(e) for e in errors] == [NotRegular]


@pytest.mark.parametrize("kind", sorted(SPECIAL))
@pytest.mark.parametrize(
    "request_for",
    [
        lambda name: edit(name),
        lambda name: patch(f"*** Update File: {name}\n@@\n-a\n+b\n"),
        lambda name: patch(f"*** Add File: {name}\n+b\n"),
        lambda name: patch(f"*** Delete File: {name}\n"),
    ],
    ids=["edit", "update", "add", "delete"],
)
def test_embedded_mode_refuses_special_files_without_reading_them(
    tmp_path: Path, kind: str, request_for: Any
) -> None:
    SPECIAL[kind](tmp_path / "special")
    proc = subprocess.run(
        [redline_script(), "apply", "--root", str(tmp_path)],
        input=json.dumps(request_for("special")).encode(),
        capture_output=True,
        timeout=20,
    )
    result = json.loads(proc.stdout)
    assert proc.returncode == 2 and result["status"] == "invalid", result
    assert f"'special' {REFUSAL}" in result["error"]
    assert "name a regular file, or remove that one first" in result["error"]
    assert not stat.S_ISREG(os.lstat(tmp_path / "special").st_mode)  # left as it was


@pytest.fixture
def gm(tmp_path: Path, hermetic_environment: Path) -> Iterator[GitMode]:
    with git_mode(tmp_path, hermetic_environment) as mode:
        yield mode


@pytest.mark.parametrize("kind", sorted(SPECIAL))
def test_git_mode_refuses_special_files_and_keeps_serving(gm: GitMode, kind: str) -> None:
    wt = Path(gm.cli.open_session("s")["worktree"])
    SPECIAL[kind](wt / "new.txt")  # untracked, where an agent adds a file
    os.unlink(wt / "b.py")
    SPECIAL[kind](wt / "b.py")  # a tracked file replaced by one

    for request in (
        patch("*** Add File: new.txt\n+hello\n"),
        edit("b.py"),
        patch("*** Update File: b.py\n@@\n-VALUE = 1\n+VALUE = 2\n"),
    ):
        code, result = gm.cli.apply("s", request)
        assert code == 2 and result["status"] == "invalid", result
        assert REFUSAL in json.dumps(result)

    # The daemon was not blocked: another edit in the same session goes through.
    code, result = gm.cli.apply(
        "s",
        {"tool": "edit", "path": "a.py", "old_string": "'Hello, '", "new_string": "'Hi, '"},
    )
    assert code == 0 and result["status"] == "applied", result
    assert "new.txt" not in json.dumps(result["commits"])
