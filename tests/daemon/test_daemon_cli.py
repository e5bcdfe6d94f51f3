"""The daemon through the real CLI: ``redline session|apply|log|daemon`` as processes.

A real daemon runs on a real Unix socket; every test stops it afterwards (the
``gm`` fixture), and the daemon's own files are checked on disk.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from gitmode_fixtures import (
    FILES,
    REDLINE,
    GitMode,
    alive,
    assert_fsck_clean,
    branch_commits,
    git,
    git_mode,
    note_of,
    porcelain,
    rev,
    wait_dead,
)
from redline.daemon.client import Client
from redline.gitops import spares
from redline.gitops.packs import CONSOLIDATE_AFTER
from support.daemon import PROCESS_SPARES
from support.requests import edit, patch


def state_dir(gm: GitMode) -> Path:
    return gm.repo / ".git" / "redline"


def expected_socket(gm: GitMode) -> Path:
    """Where the socket must be: in the common dir, or under the runtime dir when too long."""
    common = (gm.repo / ".git").resolve()
    natural = common / "redline" / "daemon.sock"
    if len(str(natural).encode()) <= 100:
        return natural
    digest = hashlib.sha256(str(common).encode()).hexdigest()[:16]
    return gm.runtime / "redline" / f"{digest}.sock"


# --- sessions, apply, log ----------------------------------------------------------------


def test_session_open_starts_the_daemon_on_demand(gm: GitMode) -> None:
    before = gm.cli.status()
    assert before == {
        "running": False,
        "pid": None,
        "socket": str(expected_socket(gm)),
        "repo": str((gm.repo / ".git").resolve()),
    }

    opened = gm.cli.open_session("work")

    assert opened["name"] == "work"
    assert opened["branch"] == "redline/work"
    worktree = Path(opened["worktree"])
    assert worktree.is_dir() and (worktree / "a.py").read_bytes() == (gm.repo / "a.py").read_bytes()
    assert git(gm.repo, "worktree", "list", "--porcelain").count(f"worktree {worktree}\n") == 1
    after = gm.cli.status()
    assert after["running"] is True
    assert isinstance(after["pid"], int) and alive(after["pid"])
    assert after["pid"] == gm.cli.pid()
    assert after["socket"] == str(expected_socket(gm))
    assert stat.S_ISSOCK(Path(after["socket"]).stat().st_mode)


def test_session_open_text_output_and_default_name(gm: GitMode) -> None:
    out = gm.cli.ok("session", "open", "--repo", str(gm.repo))
    lines = dict(line.split(":", 1) for line in out.splitlines())
    name = lines["session"].strip()
    assert name.startswith("s-")
    assert lines["branch"].strip() == f"redline/{name}"
    assert Path(lines["worktree"].strip()).is_dir()


def test_session_list_and_close(gm: GitMode) -> None:
    gm.cli.open_session("one")
    gm.cli.open_session("two")
    listed = gm.cli.json("session", "list", "--json", "--repo", str(gm.repo))
    assert [s["name"] for s in listed] == ["one", "two"]
    base = rev(gm.repo, "HEAD")
    assert all(s["base"] == s["tip"] == base and s["edits"] == 0 for s in listed)

    text = gm.cli.ok("session", "list", "--repo", str(gm.repo))
    assert text.splitlines()[0].split("\t")[:3] == ["one", "redline/one", "0 commit(s)"]

    out = gm.cli.ok("session", "close", "two", "--repo", str(gm.repo))
    assert out == (
        "closed session two (branch redline/two kept: `redline log two` shows its history, "
        "`redline session open --name two` resumes it)\n"
    )
    assert [s["name"] for s in gm.cli.json("session", "list", "--json")] == ["one"]
    assert "redline/two" in git(gm.repo, "branch", "--list", "redline/*")


def test_a_duplicate_session_and_an_unknown_session_are_clear_errors(gm: GitMode) -> None:
    gm.cli.open_session("dup")
    proc = gm.cli.run("session", "open", "--name", "dup", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert "session 'dup' is already open" in proc.stderr

    proc = gm.cli.run("session", "open", "--name", "../bad", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert "invalid session name" in proc.stderr

    proc = gm.cli.run(
        "apply",
        "--session",
        "nope",
        "--repo",
        str(gm.repo),
        input=json.dumps(edit("a.py", "a", "b")),
    )
    assert proc.returncode == 2  # an invalid request: stdout still answers
    assert "no session named 'nope'" in json.loads(proc.stdout)["error"]


def test_apply_through_the_daemon_with_exit_codes(gm: GitMode) -> None:
    opened = gm.cli.open_session("s")
    wt = Path(opened["worktree"])
    base = rev(gm.repo, "HEAD")

    code, applied = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))
    assert code == 0
    assert applied["status"] == "applied"
    assert applied["session"] == "s"
    [first] = applied["commits"]
    assert first["paths"] == ["b.py"] and first["source"] == "agent"

    code, missed = gm.cli.apply("s", edit("b.py", "no such text", "x"))
    assert code == 1
    assert missed["status"] == "no_match", missed["error"]
    assert missed["session"] == "s" and missed.get("commits", []) == []

    code, bad = gm.cli.apply("s", {"tool": "edit", "path": "b.py"})
    assert code == 2
    assert bad["status"] == "invalid" and bad["session"] == "s"

    code, garbage = gm.cli.apply("s", "{not json")
    assert code == 2
    assert garbage["status"] == "invalid" and "not valid JSON" in garbage["error"]

    code, partial = gm.cli.apply(
        "s",
        patch(
            "*** Update File: c.txt\n@@\n-beta\n+BETA\n"
            "*** Update File: a.py\n@@\n-this line is not there\n+x\n"
        ),
    )
    assert code == 3
    assert partial["status"] == "partially_applied"
    [second] = partial["commits"]
    assert second["paths"] == ["c.txt"]

    code, added = gm.cli.apply("s", patch("*** Add File: new/file.txt\n+hello\n"))
    assert code == 0
    [third] = added["commits"]

    assert branch_commits(gm.repo, "redline/s", base) == [
        first["commit"],
        second["commit"],
        third["commit"],
    ]
    assert (wt / "b.py").read_text() == "VALUE = 2\n"
    assert (wt / "c.txt").read_text() == "alpha\nBETA\ngamma\n"
    assert (wt / "new" / "file.txt").read_text() == "hello\n"
    assert porcelain(wt) == ""
    assert note_of(gm.repo, third["commit"])["tool"] == "apply_patch"
    assert_fsck_clean(gm.repo)


def test_apply_jsonl_keeps_order_and_reports_the_worst_exit_code(gm: GitMode) -> None:
    gm.cli.open_session("s")
    lines = "\n".join(
        json.dumps(r)
        for r in (
            edit("b.py", "VALUE = 1", "VALUE = 2"),
            edit("b.py", "missing", "x"),
            edit("b.py", "VALUE = 2", "VALUE = 3"),
        )
    )
    proc = gm.cli.run("apply", "--jsonl", "--session", "s", "--repo", str(gm.repo), input=lines)
    assert proc.returncode == 1
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["status"] for r in results] == ["applied", "no_match", "applied"]
    assert [len(r.get("commits", [])) for r in results] == [1, 0, 1]


def test_a_request_writes_its_objects_as_one_pack_before_it_answers(gm: GitMode) -> None:
    gm.cli.open_session("s")
    objects = gm.repo / ".git" / "objects"

    def loose() -> set[str]:
        return {
            f"{d.name}/{f.name}" for d in objects.iterdir() if len(d.name) == 2 for f in d.iterdir()
        }

    def packs() -> set[str]:
        return {p.name for p in (objects / "pack").glob("*.idx")}

    loose_before, packs_before = loose(), packs()
    code, result = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))

    assert code == 0, result
    assert loose() == loose_before
    assert len(packs() - packs_before) == 1  # blob, trees, commit, note and notes commit
    [commit] = result["commits"]
    assert git(gm.repo, "show", f"{commit['commit']}:b.py") == "VALUE = 2\n"
    assert note_of(gm.repo, commit["commit"])["edit"] == commit["edit"]
    assert_fsck_clean(gm.repo)


def test_the_files_a_request_creates_take_the_inodes_of_spares(
    gm: GitMode, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The pool users' daemons keep (a daemon on a thread keeps fewer: support.daemon).
    monkeypatch.setattr(spares, "KEEP", PROCESS_SPARES)
    worktree = Path(gm.cli.open_session("s")["worktree"])
    pool = state_dir(gm) / "spares"
    deadline = time.monotonic() + 20
    while len(spare := {p.stat().st_ino for p in pool.rglob("*") if p.is_file()}) < spares.KEEP:
        assert time.monotonic() < deadline, (
            f"the daemon made {len(spare)} spares, not {spares.KEEP}"
        )
        time.sleep(0.02)

    code, result = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))

    assert code == 0, result
    pack_dir = gm.repo / ".git" / "objects" / "pack"
    newest = max(pack_dir.glob("pack-*.idx"), key=lambda p: p.stat().st_mtime_ns)
    made = {
        "pack index": newest,
        "pack": newest.with_suffix(".pack"),
        "branch ref": gm.repo / ".git/refs/heads/redline/s",
        "notes ref": gm.repo / ".git/refs/notes/redline",
        "worktree file": worktree / "b.py",
    }
    assert {what: p.stat().st_ino in spare for what, p in made.items()} == dict.fromkeys(made, True)
    assert (worktree / "b.py").read_text() == "VALUE = 2\n"
    assert stat.S_IMODE(newest.stat().st_mode) == 0o444
    assert porcelain(worktree) == ""
    assert_fsck_clean(gm.repo)


def test_the_packs_of_many_requests_are_rolled_up_as_they_go(gm: GitMode) -> None:
    gm.cli.open_session("s")
    pack_dir = gm.repo / ".git" / "objects" / "pack"
    before = len(list(pack_dir.glob("*.idx")))
    edits = CONSOLIDATE_AFTER + 8
    with Client(gm.socket()) as conn:
        for i in range(edits):
            old, new = f"VALUE = {i + 1}", f"VALUE = {i + 2}"
            result = conn.call("apply", {"session": "s", "request": edit("b.py", old, new)})
            assert result["status"] == "applied", result

    # The roll-up runs beside the requests (never inside one): wait for it to land.
    deadline = time.monotonic() + 30
    while len(list(pack_dir.glob("*.idx"))) - before >= edits // 2:
        assert time.monotonic() < deadline, "the packs were not rolled up"
        time.sleep(0.05)
    assert len(branch_commits(gm.repo, "redline/s", "main")) == edits
    assert git(gm.repo, "show", "redline/s:b.py") == f"VALUE = {edits + 1}\n"
    assert_fsck_clean(gm.repo)


def test_log_lists_the_commits_with_their_evidence(gm: GitMode) -> None:
    opened = gm.cli.open_session("s")
    _, one = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))
    # Changed while no daemon watches, so that the next request finds it for certain (its
    # daemon walks the worktree): a running daemon's watcher reports a change a moment
    # after it is made, and a request sent at once may come before the report.
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    (Path(opened["worktree"]) / "c.txt").write_text("changed outside\n")
    _, two = gm.cli.apply("s", edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))
    assert [c["source"] for c in two["commits"]] == ["external", "agent"]

    entries = gm.cli.json("log", "s", "--json", "--repo", str(gm.repo))
    newest_first = [*reversed(two["commits"]), *one["commits"]]
    assert [e["commit"] for e in entries] == [c["commit"] for c in newest_first]
    assert [e["edit"] for e in entries] == [c["edit"] for c in newest_first]
    assert [e["source"] for e in entries] == ["agent", "external", "agent"]
    assert [e["tool"] for e in entries] == ["edit", "external", "edit"]
    op = entries[0]["operations"][0]
    assert op["path"] == "a.py" and op["match_type"] == "exact" and op["start_line"] == 2
    assert entries[0]["summary"] == "redline: edit a.py (exact 1.0)"

    text = gm.cli.ok("log", "--repo", str(gm.repo))  # the one open session
    assert text.splitlines()[0].startswith(entries[0]["commit"][:12])
    assert "edit a.py lines 2-2 exact 1.0" in text

    listed = gm.cli.json("session", "list", "--json")
    assert listed[0]["edits"] == 3
    assert listed[0]["tip"] == entries[0]["commit"]


# --- daemon start, stop, status ------------------------------------------------------------


def test_status_start_stop(gm: GitMode) -> None:
    out = gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    status = gm.cli.status()
    assert set(status) == {"running", "pid", "socket", "repo"}
    assert status["running"] is True
    assert f"pid {status['pid']}" in out and status["socket"] in out
    pid = status["pid"]
    assert alive(pid)
    assert gm.cli.pid_file.read_text().strip() == str(pid)

    again = gm.cli.run("daemon", "start", "--repo", str(gm.repo))
    assert again.returncode != 0
    assert "already running" in again.stderr
    assert gm.cli.status()["pid"] == pid

    text = gm.cli.ok("daemon", "status", "--repo", str(gm.repo))
    assert text.startswith(f"running (pid {pid})")

    assert gm.cli.ok("daemon", "stop", "--repo", str(gm.repo)).strip() == "redline daemon stopped"
    wait_dead(pid)
    assert gm.cli.status() == {**status, "running": False, "pid": None}
    assert not Path(status["socket"]).exists()
    assert not gm.cli.pid_file.exists()
    assert "not running" in gm.cli.ok("daemon", "status", "--repo", str(gm.repo))
    out = gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    assert out.strip() == "no redline daemon was running"


def test_a_second_daemon_run_refuses_to_start(gm: GitMode) -> None:
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    pid = gm.cli.status()["pid"]
    proc = gm.cli.run("daemon", "run", "--repo", str(gm.repo), timeout=30)
    assert proc.returncode == 1
    assert "already running" in proc.stderr and f"pid {pid}" in proc.stderr
    assert gm.cli.status()["pid"] == pid  # the first one is unharmed


def test_the_daemon_exits_when_idle(gm: GitMode) -> None:
    gm.cli.ok("daemon", "start", "--idle-timeout", "1", "--repo", str(gm.repo))
    pid = gm.cli.pid()
    assert pid is not None and alive(pid)
    # Not polled through the socket: every connection would count as activity.
    wait_dead(pid, timeout=15)
    status = gm.cli.status()
    assert status["running"] is False and status["pid"] is None
    assert "idle for" in (state_dir(gm) / "daemon.log").read_text()
    assert not gm.cli.pid_file.exists()


@pytest.mark.daemon_process
def test_a_killed_daemon_is_replaced_on_demand(gm: GitMode) -> None:
    gm.cli.open_session("s")
    old = gm.cli.status()
    os.kill(old["pid"], signal.SIGKILL)
    wait_dead(old["pid"])
    socket = Path(old["socket"])
    assert socket.exists()  # stale: nobody listens
    assert gm.cli.pid_file.exists()  # stale too
    assert gm.cli.status()["running"] is False

    listed = gm.cli.json("session", "list", "--json", "--repo", str(gm.repo))
    assert [s["name"] for s in listed] == ["s"]  # read without a daemon
    assert gm.cli.status()["running"] is False

    code, result = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))
    assert code == 0 and result["status"] == "applied"
    new = gm.cli.status()
    assert new["running"] is True
    assert new["pid"] != old["pid"] and alive(new["pid"])
    assert new["socket"] == old["socket"]
    assert stat.S_ISSOCK(socket.stat().st_mode)


def test_the_daemon_writes_a_log(gm: GitMode) -> None:
    gm.cli.open_session("s")
    pid = gm.cli.status()["pid"]
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    log = (state_dir(gm) / "daemon.log").read_text()
    assert f"{pid} INFO starting for {(gm.repo / '.git').resolve()}" in log
    assert "listening on" in log
    assert "stopped" in log


def test_socket_is_private(gm: GitMode) -> None:
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    socket = Path(gm.cli.status()["socket"])
    assert stat.S_ISSOCK(socket.lstat().st_mode)
    assert stat.S_IMODE(socket.lstat().st_mode) == 0o600
    assert stat.S_IMODE(socket.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(state_dir(gm).stat().st_mode) == 0o700
    assert stat.S_IMODE((state_dir(gm) / "journal").stat().st_mode) == 0o700


def test_a_long_socket_path_falls_back_to_the_runtime_dir(
    tmp_path: Path, hermetic_environment: Path
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    with git_mode(deep, hermetic_environment, FILES) as gm:
        natural = (gm.repo / ".git").resolve() / "redline" / "daemon.sock"
        assert len(str(natural).encode()) > 100
        opened = gm.cli.open_session("s")

        status = gm.cli.status()
        digest = hashlib.sha256(str((gm.repo / ".git").resolve()).encode()).hexdigest()[:16]
        socket = gm.runtime / "redline" / f"{digest}.sock"
        assert status["socket"] == str(socket)
        assert status["running"] is True
        assert stat.S_IMODE(socket.lstat().st_mode) == 0o600
        assert stat.S_IMODE(socket.parent.stat().st_mode) == 0o700
        assert not natural.exists()
        code, result = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))
        assert code == 0 and result["session"] == "s"
        assert (Path(opened["worktree"]) / "b.py").read_text() == "VALUE = 2\n"

        gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
        assert not socket.exists()


def test_commands_outside_a_repository_say_so(gm: GitMode, tmp_path: Path) -> None:
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    proc = gm.cli.run("session", "list", "--repo", str(elsewhere))
    assert proc.returncode == 1
    assert "is not inside a git repository" in proc.stderr
    assert not list(elsewhere.iterdir())


def test_closing_a_session_with_uncommitted_changes_needs_force(gm: GitMode) -> None:
    opened = gm.cli.open_session("s")
    (Path(opened["worktree"]) / "c.txt").write_text("dirty\n")
    proc = gm.cli.run("session", "close", "s", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert "uncommitted change" in proc.stderr and "--force" in proc.stderr
    gm.cli.ok("session", "close", "s", "--force", "--delete-branch", "--repo", str(gm.repo))
    assert "redline/s" not in git(gm.repo, "branch", "--list", "redline/*")
    assert not Path(opened["worktree"]).exists()


def test_the_daemon_does_not_block_a_quick_restart(gm: GitMode) -> None:
    """stop then start at once: the lock and the socket of the old one are gone."""
    for _ in range(2):
        gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
        gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    start = time.monotonic()
    gm.cli.open_session("s")
    assert time.monotonic() - start < 15


def test_a_result_larger_than_the_request_limit_reaches_the_caller(gm: GitMode) -> None:
    """Requests are bounded (8 MiB); the result of an applied edit never is cut."""
    text = "".join(f"line {i} with some padding text\n" for i in range(80_000))
    (gm.repo / "big.txt").write_text(text)
    gm.git("add", "big.txt")
    gm.git("commit", "-q", "-m", "big")
    opened = gm.cli.open_session("s")
    new = text.replace("padding", "PADDING")

    code, result = gm.cli.apply("s", edit("big.txt", text, new), "--full")  # the diff too

    assert code == 0, result
    assert result["status"] == "applied"
    assert result["matched_text"] == text
    assert len(json.dumps(result).encode()) > 8 * 1024 * 1024
    [info] = result["commits"]
    assert (Path(opened["worktree"]) / "big.txt").read_text() == new
    assert gm.git("show", f"{info['commit']}:big.txt") == new


def test_commands_started_at_once_share_one_daemon(gm: GitMode) -> None:
    procs = [
        subprocess.Popen(
            [*REDLINE, "session", "open", "--json", "--name", f"s{i}", "--repo", str(gm.repo)],
            env=gm.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for i in range(4)
    ]
    outcomes = [(p.wait(timeout=60), *p.communicate()) for p in procs]
    for i, (code, out, err) in enumerate(outcomes):
        assert code == 0, err.decode()
        assert json.loads(out)["name"] == f"s{i}"
    status = gm.cli.status()
    assert status["running"] is True
    # A losing daemon process may still be starting (its command connected to the
    # winner and returned): it exits at the lock the winner holds. Once the test
    # stopped the winner first, such a late one took the lock and became a second
    # daemon, which the stop then waited out (15 s).
    deadline = time.monotonic() + 30
    while losers := [p for p in daemon_processes(gm.repo) if p != status["pid"]]:
        assert time.monotonic() < deadline, f"losing daemons still alive: {losers}"
        time.sleep(0.02)
    assert gm.cli.status()["pid"] == status["pid"]
    log = (state_dir(gm) / "daemon.log").read_text()
    assert log.count("listening on") == 1, log  # the losers never got past the lock


def daemon_processes(repo: Path) -> list[int]:
    """The live ``redline daemon run`` processes for ``repo``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if (
            b"daemon" in argv
            and b"run" in argv
            and str(repo).encode() in argv
            and alive(int(entry.name))
        ):
            found.append(int(entry.name))
    return found


@pytest.mark.daemon_process
def test_sigterm_stops_the_daemon_cleanly(gm: GitMode) -> None:
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    status = gm.cli.status()
    os.kill(status["pid"], signal.SIGTERM)
    wait_dead(status["pid"])
    assert not Path(status["socket"]).exists()
    assert not gm.cli.pid_file.exists()
    assert gm.cli.status()["running"] is False
    assert "stopped" in (state_dir(gm) / "daemon.log").read_text()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_daemon_run_in_the_foreground_stops_quietly_on_a_signal(gm: GitMode, signum: int) -> None:
    """`redline daemon run` under a supervisor or a terminal: a stop it was asked for,
    exit 0, nothing said (its log says it stopped)."""
    proc = subprocess.Popen(
        [*REDLINE, "daemon", "run", "--repo", str(gm.repo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=gm.env,
        cwd=gm.repo,
    )
    try:
        deadline = time.monotonic() + 30
        while not gm.cli.status()["running"]:
            assert time.monotonic() < deadline, "the daemon did not start"
            time.sleep(0.05)
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, out, err) == (0, b"", b"")
    assert (state_dir(gm) / "daemon.log").read_text().rstrip().endswith("INFO stopped")


# --- a clean stop ----------------------------------------------------------------------------


def test_stop_logs_no_error_even_with_clients_connected(gm: GitMode) -> None:
    gm.cli.open_session("s")
    code, _ = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))
    assert code == 0
    pid = gm.cli.pid()
    assert pid is not None
    idle = Client(gm.socket())  # connected, between requests, when the stop comes
    try:
        assert gm.cli.ok("daemon", "stop", "--repo", str(gm.repo)) == "redline daemon stopped\n"
        wait_dead(pid)
        assert idle._reader.readline() == b""  # its connection was ended, not cut mid-answer
    finally:
        idle.close()

    log = (state_dir(gm) / "daemon.log").read_text()
    assert "ERROR" not in log, log
    assert "Traceback" not in log, log
    assert "CancelledError" not in log, log
    assert log.rstrip().endswith("INFO stopped")


# --- reading starts no daemon -----------------------------------------------------------------


def no_daemon(gm: GitMode) -> None:
    """No daemon runs for the repository: no socket, no pid file, status says so."""
    assert not expected_socket(gm).exists()
    assert not gm.cli.pid_file.exists()
    assert gm.cli.status() == {
        "running": False,
        "pid": None,
        "socket": str(expected_socket(gm)),
        "repo": str((gm.repo / ".git").resolve()),
    }


def test_log_and_session_list_read_the_repository_without_a_daemon(gm: GitMode) -> None:
    assert gm.cli.ok("session", "list", "--repo", str(gm.repo)) == (
        "no open sessions; `redline session open` creates one\n"
    )
    assert gm.cli.json("session", "list", "--json", "--repo", str(gm.repo)) == []
    proc = gm.cli.run("log", "s", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert proc.stderr == (
        "redline: no session named 's': none is open and there is no branch redline/s; "
        "`redline session list` shows the open sessions, `git branch --list 'redline/*'` "
        "the branches of closed ones\n"
    )
    no_daemon(gm)
    assert not state_dir(gm).exists()  # reading wrote nothing either

    opened = gm.cli.open_session("s")
    _, applied = gm.cli.apply("s", edit("b.py", "VALUE = 1", "VALUE = 2"))
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    pids = set(gm.cli.started)

    entries = gm.cli.json("log", "s", "--json", "--repo", str(gm.repo))
    text = gm.cli.ok("log", "--repo", str(gm.repo))
    listed = gm.cli.json("session", "list", "--json", "--repo", str(gm.repo))

    [commit] = applied["commits"]
    assert [e["commit"] for e in entries] == [commit["commit"]]
    assert text.startswith(f"{commit['commit'][:12]} redline: edit b.py (exact 1.0)")
    assert listed == [
        {
            "name": "s",
            "branch": "redline/s",
            "worktree": opened["worktree"],
            "base": rev(gm.repo, "main"),
            "tip": commit["commit"],
            "edits": 1,
        }
    ]
    no_daemon(gm)
    assert all(not alive(pid) for pid in pids)
    assert gm.cli.started == pids  # no new daemon was ever seen


# --- a failed session open leaves no daemon behind -------------------------------------


def test_an_invalid_name_is_refused_before_any_daemon_starts(gm: GitMode) -> None:
    proc = gm.cli.run("session", "open", "--name", "../bad", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert proc.stderr == (
        "redline: invalid session name '../bad': use letters, digits, '.', '_' and '-' "
        "(up to 63 characters, starting with a letter or digit)\n"
    )
    no_daemon(gm)
    assert not state_dir(gm).exists()


def test_a_daemon_started_for_an_open_that_fails_is_stopped(gm: GitMode) -> None:
    gm.cli.open_session("taken")
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))

    proc = gm.cli.run("session", "open", "--name", "taken", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert proc.stderr == (
        "redline: session 'taken' is already open; use it, or close it first "
        "(`redline session close taken`)\n"
    )
    proc = gm.cli.run("session", "open", "--base", "nope", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert "cannot resolve 'nope' to a commit; give --base a branch, tag or commit" in proc.stderr

    no_daemon(gm)
    log = (state_dir(gm) / "daemon.log").read_text()
    # Each failed command started a daemon for its request, and stopped it again.
    assert log.count(" INFO starting for ") == 3, log
    assert log.count(" INFO stopped\n") == 3, log
    assert "ERROR" not in log and "Traceback" not in log, log


def test_a_failed_open_leaves_a_daemon_it_did_not_start_running(gm: GitMode) -> None:
    gm.cli.open_session("taken")
    pid = gm.cli.pid()
    proc = gm.cli.run("session", "open", "--name", "taken", "--repo", str(gm.repo))
    assert proc.returncode == 1
    assert gm.cli.status()["pid"] == pid
    assert pid is not None and alive(pid)


def test_a_daemon_another_client_uses_is_not_stopped_by_a_failed_open(gm: GitMode) -> None:
    """``shutdown`` with ``unless_in_use``, as a failed open sends it."""
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    pid = gm.cli.pid()
    with Client(gm.socket()) as user, Client(gm.socket()) as opener:
        assert opener.call("shutdown", {"unless_in_use": True}) == {"stopping": False}
        assert user.call("hello", {"protocol": 1})["server"] == "redline"
    with Client(gm.socket()) as alone:
        assert alone.call("shutdown", {"unless_in_use": True}) == {"stopping": True}
    assert pid is not None
    wait_dead(pid)
