"""The real daemon, its log on the full disk too (a tmpfs of this module's own: no other
daemon may free space on it meanwhile).

Requests are answered all the same while nothing can be written, the log's lines
included; once there is room the same daemon (same pid) applies the next one and
logs again.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from fault_support import Machine

from gitmode_fixtures import REDLINE

pytestmark = pytest.mark.slow


def test_a_full_disk_under_the_real_daemon_and_its_log(machine: Machine, tmp_path: Path) -> None:
    """The daemon's own log is on the full disk too: requests are answered all the same,
    and once there is room again the same daemon goes on (and logs again)."""
    env = machine.env
    repo = machine.repo

    def cli(*args: str, payload: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*REDLINE, *args, "--repo", str(repo)],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            cwd=repo,
            timeout=120,
        )

    opened = cli("session", "open", "--name", "logged", "--json")
    assert opened.returncode == 0, opened.stderr
    worktree = Path(json.loads(opened.stdout)["worktree"])
    pid = (repo / ".git" / "redline" / "daemon.pid").read_text().strip()
    log = repo / ".git" / "redline" / "daemon.log"
    value = 1
    machine.disk.fill()
    try:
        for _ in range(8):
            edit = {
                "tool": "edit",
                "path": "b.py",
                "old_string": f"VALUE = {value}",
                "new_string": f"VALUE = {value + 1}",
            }
            proc = cli("apply", "--session", "logged", payload=json.dumps(edit))
            answer = json.loads(proc.stdout)
            assert answer["status"] == "failed", answer
            assert "the disk is full" in answer["error"], answer
    finally:
        machine.disk.free()
    size = log.stat().st_size
    edit = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
    proc = cli("apply", "--session", "logged", payload=json.dumps(edit))
    assert json.loads(proc.stdout)["status"] == "applied", proc.stdout
    assert (repo / ".git" / "redline" / "daemon.pid").read_text().strip() == pid
    assert (worktree / "b.py").read_text() == "VALUE = 2\n"
    deadline = time.monotonic() + 10
    while log.stat().st_size == size:  # the log is written again ("... written again")
        assert time.monotonic() < deadline, log.read_text()[-2000:]
        time.sleep(0.1)
    assert cli("daemon", "stop").returncode == 0
