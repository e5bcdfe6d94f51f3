"""A repository whose file system turns read-only (``mount -o remount,ro``), under load.

Before the load, and at each write point of a request (the daemon's hook remounts
as a request reaches it): every request is answered, the branch holds what the
answers say, and once the file system is writable again the next request of
every session succeeds on the same daemon. (As root, ``chmod`` refuses nothing:
the remount is the read-only repository root sees.)
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from fault_support import Daemon, Machine, check_sessions, fault_under_load, recovers, short_dir

from gitmode_fixtures import REDLINE, digest_tree

pytestmark = pytest.mark.slow

POINTS = {
    "before-the-load": None,
    "ref": "after-journal",
    "note": "after-branch",
    "worktree-file": "after-notes",
}


@pytest.fixture(scope="module")
def daemon(machine: Machine) -> Iterator[Daemon]:
    with short_dir() as sockets:
        running = Daemon(machine.repo, sockets)
        try:
            yield running
        finally:
            machine.disk.writable()
            running.stop()


@pytest.mark.parametrize("where", list(POINTS))
def test_a_read_only_repository_at_each_write_point(
    machine: Machine, daemon: Daemon, where: str
) -> None:
    base, writers, refusals = fault_under_load(
        machine,
        daemon,
        POINTS[where],
        machine.disk.read_only,
        machine.disk.writable,
        [f"ro-{where}-{i}" for i in range(3)],
        count=3,
    )
    assert refusals
    for error in refusals:
        assert "the file system is read-only (Read-only file system); make " in error, error
        assert "remount its file system read-write), then retry" in error, error
    recovers(daemon, writers)
    check_sessions(machine.repo, writers, base)


def test_a_read_only_folder_in_embedded_mode(machine: Machine) -> None:
    folder = machine.disk.path / "plain"
    folder.mkdir()
    (folder / "a.py").write_text("x = 1\n")
    (folder / "b.py").write_text("y = 1\n")
    requests = [
        {"tool": "edit", "path": "a.py", "old_string": "x = 1", "new_string": "x = 2"},
        {
            "tool": "apply_patch",
            "patch": "*** Begin Patch\n*** Add File: c.py\n+z\n*** End Patch\n",
        },
        {"tool": "write", "path": "b.py", "content": "y = 2\n"},
        {"tool": "delete", "path": "b.py"},
    ]

    def run() -> list[dict[str, object]]:
        payload = "".join(json.dumps(r) + "\n" for r in requests)
        proc = subprocess.run(
            [*REDLINE, "apply", "--root", str(folder), "--jsonl"],
            input=payload,
            capture_output=True,
            text=True,
            env=machine.env,
            timeout=120,
        )
        return [json.loads(x) for x in proc.stdout.splitlines()]

    before = digest_tree(folder)
    machine.disk.read_only()
    try:
        refused = run()
    finally:
        machine.disk.writable()
    assert [a["status"] for a in refused] == ["failed"] * 4, refused
    for answer in refused:
        assert "the file system is read-only" in str(answer["error"]), answer
    assert digest_tree(folder) == before
    assert [a["status"] for a in run()] == ["applied"] * 4
    assert (folder / "a.py").read_text() == "x = 2\n" and not (folder / "b.py").exists()
