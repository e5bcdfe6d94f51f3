"""Paths git refuses, sent by an agent or left in a session's worktree by another tool.

Sent in a request, ``sub/.git/config``, a 4,200-character name or a path over
4,096 bytes is a clean ``invalid`` result. Made in the worktree by another
tool — a ``sub/.git`` file, a nested ``.git`` folder, a name of 255 bytes, a
folder nested past libgit2's 100 levels, a path over 4,096 bytes — it is
committed as an external change when git could store it and skipped when not,
and it never makes a later request fail: every edit after it applies, and
later external changes are still committed, also after a restart of the daemon
(whose first snapshot walks the whole worktree).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode, git, git_mode

SESSION = "s"
# Seconds for the file watcher to report what another tool changed: watchdog takes
# a while to catch up after another tool made a thousand nested folders at once.
WATCH_LATENCY = 15.0


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitMode]:
    home = tmp_path_factory.mktemp("external-home")
    with git_mode(tmp_path_factory.mktemp("external"), home) as mode:
        mode.cli.ok("daemon", "start", "--repo", str(mode.repo))
        mode.cli.open_session(SESSION)
        yield mode


def worktree(mode: GitMode) -> Path:
    return mode.repo / ".git" / "redline" / "worktrees" / SESSION


def call(mode: GitMode, request: dict[str, Any]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(120)
        sock.connect(str(mode.socket()))
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "apply",
            "params": {"session": SESSION, "request": request},
        }
        sock.sendall(json.dumps(message).encode() + b"\n")
        with sock.makefile("rb") as reader:
            answer = json.loads(reader.readline())
    assert "result" in answer, answer  # never a JSON-RPC error (-32603)
    result = answer["result"]
    assert isinstance(result, dict)
    return result


def committed(mode: GitMode) -> list[str]:
    return git(mode.repo, "ls-tree", "-r", "--name-only", f"redline/{SESSION}").split()


def edit_then_external_change(mode: GitMode, elsewhere: bool = True) -> None:
    """An edit applies, and what another tool changed beside it is committed first.

    The edited file's own change is always seen; a change ``elsewhere`` (b.py)
    once the file watcher has reported it, or by a full scan: see
    :func:`all_changes_committed`.
    """
    root = worktree(mode)
    if elsewhere:
        value = int((root / "b.py").read_text().split("=")[1])
        (root / "b.py").write_text(f"VALUE = {value + 1}\n")
    with open(root / "c.txt", "a") as handle:
        handle.write("another tool\n")
    text = (root / "c.txt").read_text()
    result = call(
        mode,
        {"tool": "edit", "path": "c.txt", "old_string": text, "new_string": text + "edit\n"},
    )
    assert result["status"] == "applied", result
    external, agent = result["commits"]
    assert external["source"] == "external" and "c.txt" in external["paths"]
    assert agent["source"] == "agent" and agent["paths"] == ["c.txt"]


def all_changes_committed(mode: GitMode) -> None:
    """Every change another tool made is committed, once the watcher has reported it."""
    on_disk = (worktree(mode) / "b.py").read_text()
    deadline = time.monotonic() + WATCH_LATENCY
    while True:
        edit_then_external_change(mode, elsewhere=False)
        if git(mode.repo, "show", f"redline/{SESSION}:b.py") == on_disk:
            return
        assert time.monotonic() < deadline, "a change another tool made was never committed"
        time.sleep(0.2)


def restart(mode: GitMode) -> None:
    mode.cli.ok("daemon", "stop", "--repo", str(mode.repo))
    mode.cli.ok("daemon", "start", "--repo", str(mode.repo))


def no_internal_error(mode: GitMode) -> None:
    log = (mode.repo / ".git" / "redline" / "daemon.log").read_text()
    assert "internal error" not in log
    assert "cannot load it" not in log


# --- in requests -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("request_", "error"),
    [
        (
            {"tool": "edit", "path": "sub/.git/config", "old_string": "a", "new_string": "b"},
            "path 'sub/.git/config' is inside a .git directory, which redline never edits",
        ),
        (
            {"tool": "apply_patch", "patch": "*** Add File: sub/.git/config\n+x\n"},
            "apply_patch: path 'sub/.git/config' is inside a .git directory",
        ),
        (
            {"tool": "apply_patch", "patch": f"*** Add File: {'n' * 4200}\n+x\n"},
            "apply_patch: name too long: ",
        ),
        (
            {"tool": "apply_patch", "patch": f"*** Add File: {'d/' * 2100}f\n+x\n"},
            "apply_patch: name too long: path ",
        ),
        (
            {"tool": "edit", "path": "n" * 4200, "old_string": "a", "new_string": "b"},
            "name too long: ",
        ),
    ],
    ids=["edit-nested-git", "add-nested-git", "add-4200-name", "add-4201-path", "edit-4200-name"],
)
def test_a_path_git_refuses_is_an_invalid_result(
    daemon: GitMode, request_: dict[str, Any], error: str
) -> None:
    all_changes_committed(daemon)
    tip = committed(daemon)
    result = call(daemon, request_)
    assert result["status"] == "invalid", result
    assert result["error"].startswith(error), result["error"]
    assert result.get("commits", []) == []
    assert committed(daemon) == tip
    edit_then_external_change(daemon)


# --- in the worktree ---------------------------------------------------------------------------


def test_a_dot_git_file_another_tool_made_is_skipped(daemon: GitMode) -> None:
    root = worktree(daemon)
    (root / "sub").mkdir()
    (root / "sub" / ".git").write_text("gitdir: /nowhere\n")
    (root / "sub" / "kept.txt").write_text("kept\n")
    (root / "nested" / ".git").mkdir(parents=True)
    (root / "nested" / ".git" / "config").write_text("[core]\n")
    (root / "odd" / ".GIT").mkdir(parents=True)
    (root / "odd" / ".GIT" / "HEAD").write_text("ref: refs/heads/main\n")
    edit_then_external_change(daemon)
    all_changes_committed(daemon)
    restart(daemon)
    edit_then_external_change(daemon)
    all_changes_committed(daemon)
    files = committed(daemon)
    assert "sub/kept.txt" in files
    assert [f for f in files if ".git" in f.lower() and f != ".gitignore"] == []
    no_internal_error(daemon)


def test_a_name_of_255_bytes_is_committed(daemon: GitMode) -> None:
    name = "é" * 127 + "x"  # 255 bytes in UTF-8
    (worktree(daemon) / name).write_text("long\n")
    all_changes_committed(daemon)
    listed = git(daemon.repo, "ls-tree", "--name-only", "-z", f"redline/{SESSION}")
    assert name in listed.split("\0")
    restart(daemon)
    edit_then_external_change(daemon)
    no_internal_error(daemon)


def nest(root: Path, depth: int, leaf: str) -> str:
    """A file ``leaf`` ``depth`` folders named ``d`` below ``root``; its relative path."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open(leaf, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"deep\n")
        os.close(out)
    finally:
        os.close(fd)
    return "d/" * depth + leaf


def remove_nest(folder: Path) -> None:
    """Remove what :func:`nest` made (shutil.rmtree recurses, and would overflow)."""
    subprocess.run(["rm", "-rf", str(folder)], check=True)


@pytest.mark.parametrize("depth", [101, 1000])
def test_folders_nested_deep_are_committed(daemon: GitMode, depth: int) -> None:
    # Past libgit2's status walk (100 levels); past Python's recursion limit (1000).
    root = worktree(daemon)
    (root / "deep").mkdir()
    try:
        if depth < 500:
            path = "deep/" + nest(root / "deep", depth, "leaf.txt")
            edit_then_external_change(daemon)
        else:
            # Made while no daemon runs: watchdog needs many seconds to take in a
            # thousand folders made at once, and reports nothing else meanwhile.
            daemon.cli.ok("daemon", "stop", "--repo", str(daemon.repo))
            path = "deep/" + nest(root / "deep", depth, "leaf.txt")
        restart(daemon)  # its first snapshot is a full walk
        edit_then_external_change(daemon)
        all_changes_committed(daemon)
        assert path in committed(daemon)
    finally:
        remove_nest(root / "deep")
    all_changes_committed(daemon)
    assert path not in committed(daemon)  # its removal is an external change too
    no_internal_error(daemon)


def test_a_path_too_long_to_name_is_skipped(daemon: GitMode) -> None:
    root = worktree(daemon)
    (root / "long").mkdir()
    try:
        path = "long/" + nest(root / "long", 2100, "leaf.txt")
        assert len(path) > 4096
        edit_then_external_change(daemon)
        edit_then_external_change(daemon)
        # Restarted, the daemon cannot watch a path that long: it scans instead.
        restart(daemon)
        edit_then_external_change(daemon)
        all_changes_committed(daemon)
    finally:
        remove_nest(root / "long")
    all_changes_committed(daemon)
    assert [f for f in committed(daemon) if f.startswith("long/")] == []
    no_internal_error(daemon)
    log = (daemon.repo / ".git" / "redline" / "daemon.log").read_text()
    if "Exception in thread" in log:  # watchdog's own walk overflowed (Python < 3.12)
        assert "file watching stopped (RecursionError" in log
        assert "cannot watch" in log  # the restarted daemon did not try to watch on
