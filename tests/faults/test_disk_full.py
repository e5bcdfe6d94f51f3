"""A full disk at each write point, under load: answered, nothing lost, recovered by itself.

The repository lives on a small tmpfs. The daemon runs in this process; its hook
fills the disk the first time a request reaches the write point named (the
objects and their pack: full before the load starts). Three sessions send
edits at once meanwhile. Then the disk is freed and the next request of every
session must succeed on the same daemon, and the invariants of
``fault_support.check_sessions`` hold. Embedded mode gets the same treatment in
processes of its own (the real daemon with its log on the full disk: test_daemon_log.py).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fault_support import Daemon, Machine, check_sessions, fault_under_load, recovers, short_dir

from gitmode_fixtures import REDLINE, digest_tree

pytestmark = pytest.mark.slow

# Where the disk fills: the journal's fault points (gitops.publish), or before the load.
POINTS = {
    "objects-and-pack": None,
    "journal": "before-journal",
    "ref": "after-journal",
    "note": "after-branch",
    "worktree-file": "after-notes",
    "index": "after-files",
}


@pytest.fixture(scope="module")
def daemon(machine: Machine) -> Iterator[Daemon]:
    with short_dir() as sockets:
        running = Daemon(machine.repo, sockets)
        try:
            yield running
        finally:
            running.stop()


@pytest.mark.parametrize("where", list(POINTS))
def test_a_full_disk_at_each_write_point_of_the_daemon(
    machine: Machine, daemon: Daemon, where: str
) -> None:
    base, writers, refusals = fault_under_load(
        machine,
        daemon,
        POINTS[where],
        machine.disk.fill,
        machine.disk.free,
        [f"{where}-{i}" for i in range(3)],
        count=4,
    )
    assert refusals, "the full disk refused nothing"
    for error in refusals:
        assert "the disk is full (No space left on device); free space on the file system" in error
        assert error.endswith("the request was not applied: nothing was written")
    recovers(daemon, writers)
    check_sessions(machine.repo, writers, base)


PATCH = (
    "*** Begin Patch\n*** Update File: a.py\n@@\n-def greet(name):\n+def greet(who):\n"
    "*** Add File: docs/new.md\n+# New\n*** Delete File: c.txt\n*** End Patch\n"
)


def _embedded_requests() -> list[dict[str, object]]:
    big = "x = 1\n" * 200_000  # more than the disk has left
    return [
        {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"},
        {"tool": "apply_patch", "patch": PATCH},
        {"tool": "write", "path": "big.py", "content": big},
    ]


def test_a_full_disk_in_embedded_mode_under_load(
    machine: Machine, daemon: Daemon, tmp_path: Path
) -> None:
    """Three processes at once, each one request kind, on a full disk (their crash logs'
    folder is on it too): each answers `failed` with what ran out, nothing changes (not
    half a patch: its delete is taken back too); once there is room the same requests
    apply. A delete needs no room, and applies on the full disk.

    The module's daemon is stopped first: its own work after the tests above (packing
    the loose objects they left) frees room on the disk, which must stay full here."""
    daemon.stop()
    folder = machine.disk.path / "plain"
    folder.mkdir()
    for name in ("a.py", "b.py", "c.txt", "tool.sh"):
        (folder / name).write_bytes((machine.repo / name).read_bytes())
    before = digest_tree(folder)

    def run_all() -> list[dict[str, object]]:
        procs = [
            subprocess.Popen(
                [*REDLINE, "apply", "--root", str(folder), "--jsonl"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=machine.env,
            )
            for _ in _embedded_requests()
        ]
        answers = []
        for proc, request in zip(procs, _embedded_requests(), strict=True):
            out, _err = proc.communicate(json.dumps(request).encode() + b"\n", timeout=120)
            [answer] = [json.loads(x) for x in out.decode().splitlines()]
            answers.append(answer)
        return answers

    machine.disk.fill()
    try:
        refused = run_all()
        after = digest_tree(folder)
    finally:
        machine.disk.free()
    for answer in refused:
        assert answer["status"] == "failed", answer
        assert "the disk is full (No space left on device)" in str(answer["error"]), answer
    assert after == before  # nothing changed, not even half a patch
    assert [a["status"] for a in run_all()] == ["applied"] * 3
    assert (folder / "b.py").read_text() == "VALUE = 2\n"
    assert not (folder / "c.txt").exists() and (folder / "docs" / "new.md").exists()
    machine.disk.fill()
    try:
        request = json.dumps({"tool": "delete", "path": "tool.sh"})
        proc = subprocess.run(
            [*REDLINE, "apply", "--root", str(folder)],
            input=request,
            capture_output=True,
            text=True,
            env=machine.env,
            timeout=120,
        )
    finally:
        machine.disk.free()
    assert json.loads(proc.stdout)["status"] == "applied"
    assert not (folder / "tool.sh").exists()
