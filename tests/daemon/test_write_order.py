"""The order of a request's writes, as the kernel sees it (``strace`` on the real daemon).

With ``core.fsync=committed`` the promise of the README holds syscall by syscall:
the pack and its index are fsynced before they are renamed into place and
before the journal is written; the journal is fsynced before the branch moves;
each ref's new value is fsynced before it is renamed over the ref, and its
folder after; the worktree file before the journal is cleared; the cleared
journal last. Without the setting, as ``git commit`` there, nothing is fsynced,
and the renames come in the same order.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

import pytest

from gitmode_fixtures import GitMode, assert_fsck_clean

pytestmark = pytest.mark.skipif(
    shutil.which("strace") is None, reason="needs strace (apt-get install strace)"
)
TRACED = "fsync,fdatasync,rename,renameat,renameat2"
_CALL = re.compile(r"^\d+\s+(?P<call>\w+)\((?P<args>.*)\)\s+=\s+0$")
_FD = re.compile(r"^\d+<(?P<path>.*)>$")
_PATHS = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class Call:
    name: str  # fsync, fdatasync or rename (renameat and renameat2 included)
    paths: tuple[str, ...]  # the file synced, or the names renamed from and to

    def to(self, pattern: str) -> bool:
        return self.name == "rename" and re.search(pattern, self.paths[-1]) is not None

    def syncs(self, pattern: str) -> bool:
        return self.name in ("fsync", "fdatasync") and re.search(pattern, self.paths[0]) is not None


def _parse(text: str) -> list[Call]:
    calls = []
    for line in text.splitlines():
        found = _CALL.match(line)
        if found is None:  # an unfinished call, a signal, a failure: not a write that happened
            continue
        name, args = found["call"], found["args"]
        if name in ("fsync", "fdatasync"):
            fd = _FD.match(args)
            if fd is not None:
                calls.append(Call(name, (fd["path"],)))
        else:
            calls.append(Call("rename", tuple(_PATHS.findall(args))))
    return calls


def _one_request_traced(gm: GitMode) -> list[Call]:
    """Open session s, then trace the daemon through one edit (and nothing after it)."""
    gm.cli.open_session("s")
    pid = gm.cli.pid()
    assert pid is not None
    out = gm.repo.parent / "strace.out"
    tracer = subprocess.Popen(
        ["strace", "-f", "-y", "-p", str(pid), "-e", f"trace={TRACED}", "-o", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while not out.exists() or not (out.stat().st_size or _attached(tracer)):
            if tracer.poll() is not None:
                assert tracer.stderr is not None
                pytest.skip(f"strace cannot attach here: {tracer.stderr.read().decode().strip()}")
            assert time.monotonic() < deadline, "strace did not attach"
            time.sleep(0.05)
        request = {
            "tool": "edit",
            "path": "b.py",
            "old_string": "VALUE = 1",
            "new_string": "VALUE = 2",
        }
        code, answer = gm.cli.apply("s", json.dumps(request))
        assert code == 0 and answer["status"] == "applied", answer
    finally:
        tracer.send_signal(signal.SIGINT)  # detaches from the daemon, which goes on
        tracer.communicate(timeout=30)
    return _parse(out.read_text())


def _attached(tracer: subprocess.Popen[bytes]) -> bool:
    time.sleep(0.5)  # strace prints nothing once attached; give it a moment
    return tracer.poll() is None


def _index(calls: list[Call], found: list[int], what: str) -> int:
    assert found, f"no {what} in:\n" + "\n".join(map(str, calls))
    return found[0]


def test_a_request_with_core_fsync_committed_syncs_in_the_promised_order(gm: GitMode) -> None:
    gm.git("config", "core.fsync", "committed")
    calls = _one_request_traced(gm)
    at = {i: c for i, c in enumerate(calls)}

    def first(test: str, pattern: str, what: str) -> int:
        hits = [i for i, c in at.items() if getattr(c, test)(pattern)]
        return _index(calls, hits, what)

    def every(test: str, pattern: str) -> list[int]:
        return [i for i, c in at.items() if getattr(c, test)(pattern)]

    pack_synced = first("syncs", r"tmp_pack_redline_pack-\w+\.pack$", "fsync of the pack")
    pack_in = first("to", r"/objects/pack/pack-\w+\.pack$", "rename of the pack")
    index_synced = first("syncs", r"tmp_pack_redline_pack-\w+\.idx$", "fsync of the index")
    index_in = first("to", r"/objects/pack/pack-\w+\.idx$", "rename of the index")
    pack_dir = first("syncs", r"/objects/pack$", "fsync of the pack folder")
    journals = every("syncs", r"/redline/journal/s\.journal$")
    branch_synced = first(
        "syncs",
        r"/refs/heads/redline/\.s\.lock\.\w+\.redline-tmp$",
        "fsync of the branch's new value",
    )
    branch = first("to", r"/refs/heads/redline/s$", "rename of the branch")
    branch_dir = first("syncs", r"/refs/heads/redline$", "fsync of the branch's folder")
    notes = first("to", r"/refs/notes/redline$", "rename of the notes ref")
    notes_dir = first("syncs", r"/refs/notes$", "fsync of the notes folder")
    file_synced = first(
        "syncs", r"/worktrees/s/\.b\.py\.\w+\.redline-tmp$", "fsync of the worktree file"
    )
    file_in = first("to", r"/worktrees/s/b\.py$", "rename of the worktree file")

    assert len(journals) == 2, journals  # written, then cleared
    written, cleared = journals
    # Objects and pack before the ref...
    assert pack_synced < pack_in < index_synced < index_in < pack_dir < written < branch
    # ...the ref's new value before it is the ref, and the ref before the journal is cleared,
    assert branch_synced < branch < branch_dir < notes < notes_dir < cleared
    # ...with the worktree file on disk before the journal says the request is done.
    assert file_synced < file_in < cleared
    assert_fsck_clean(gm.repo, gm.env)


def test_without_core_fsync_nothing_is_synced_and_the_order_holds(gm: GitMode) -> None:
    calls = _one_request_traced(gm)
    assert [c for c in calls if c.name != "rename"] == []
    renamed = [c.paths[-1] for c in calls]
    order = [r"/objects/pack/pack-\w+\.pack$", r"/objects/pack/pack-\w+\.idx$",
             r"/refs/heads/redline/s$", r"/refs/notes/redline$", r"/worktrees/s/b\.py$"]  # fmt: skip
    positions = [next(i for i, p in enumerate(renamed) if re.search(o, p)) for o in order]
    assert positions == sorted(positions), renamed
