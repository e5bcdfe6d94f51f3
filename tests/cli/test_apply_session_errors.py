"""``redline apply --session``: every way the daemon path can fail still answers on stdout.

An agent reads stdout. Whatever goes wrong between the CLI and the session —
no such session, a daemon that cannot start, one that refuses the call or dies
while answering — each request gets a JSON result (``invalid`` when the same
call would fail again, ``failed`` otherwise) whose error says what to do, and
the process exits with the status's code. No traceback, anywhere.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import GitMode, gm, rev, wait_dead

__all__ = ["gm"]

EDIT = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
OTHER = {"tool": "edit", "path": "c.txt", "old_string": "beta", "new_string": "BETA"}
NO_SESSION = (
    "no session named 'nope'; `redline session list` shows the open ones, "
    "`redline session open --name nope` creates it"
)


def apply(
    gm: GitMode, session: str, *requests: dict[str, Any], env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    """Run ``redline apply --session`` (``--jsonl`` for several requests); the results."""
    jsonl = len(requests) != 1
    payload = "".join(json.dumps(r) + "\n" for r in requests)
    args = ["apply", "--session", session, "--repo", str(gm.repo), *(["--jsonl"] if jsonl else [])]
    proc = gm.cli.run(*args, input=payload, env=env)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(results) == len(requests), proc.stdout
    assert all(isinstance(r, dict) and "status" in r and "path" in r for r in results)
    return proc, results


def test_an_unknown_session_is_an_invalid_result(gm: GitMode) -> None:
    proc, [result] = apply(gm, "nope", EDIT)
    assert proc.returncode == 2
    assert result["status"] == "invalid"
    assert result["error"] == NO_SESSION
    assert result["session"] == "nope"
    assert result["path"] == "b.py"
    assert proc.stderr == ""
    assert gm.cli.status()["running"] is False  # the daemon started for it was stopped again


def test_an_unknown_session_answers_every_line_of_a_stream(gm: GitMode) -> None:
    proc, results = apply(gm, "nope", EDIT, OTHER, EDIT)
    assert proc.returncode == 2
    assert [r["status"] for r in results] == ["invalid"] * 3
    assert [r["path"] for r in results] == ["b.py", "c.txt", "b.py"]
    assert all(r["error"] == NO_SESSION for r in results)
    assert gm.cli.status()["running"] is False


def test_an_invalid_session_name_is_an_invalid_result(gm: GitMode) -> None:
    proc, [result] = apply(gm, "../up", EDIT)
    assert proc.returncode == 2
    assert result["status"] == "invalid"
    assert result["error"].startswith("invalid session name '../up': use letters, digits")


def test_parameters_the_daemon_refuses_are_an_invalid_result(gm: GitMode) -> None:
    proc, [result] = apply(gm, "", EDIT)
    assert proc.returncode == 2
    assert result["status"] == "invalid"
    assert result["error"] == "'session' must be a non-empty string"


def test_outside_a_repository_every_request_is_invalid(gm: GitMode, tmp_path: Path) -> None:
    elsewhere = tmp_path / "not-a-repo"
    elsewhere.mkdir()
    proc = gm.cli.run(
        "apply",
        "--session",
        "s",
        "--repo",
        str(elsewhere),
        "--jsonl",
        input=json.dumps(EDIT) + "\n" + json.dumps(OTHER) + "\n",
    )
    assert proc.returncode == 2
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["status"] for r in results] == ["invalid", "invalid"]
    assert results[0]["error"] == (
        f"{elsewhere} is not inside a git repository; run redline from a repository or pass --repo"
    )
    assert not list(elsewhere.iterdir())


def test_a_bad_idle_timeout_setting_is_an_invalid_result(gm: GitMode) -> None:
    proc, [result] = apply(gm, "s", EDIT, env={**gm.env, "REDLINE_IDLE_TIMEOUT": "soon"})
    assert proc.returncode == 2
    assert result["status"] == "invalid"
    assert result["error"] == (
        "REDLINE_IDLE_TIMEOUT='soon' is not a number of seconds; set it to one "
        "(the default is 900) or unset it"
    )
    assert gm.cli.pid() is None  # no daemon was started


def test_a_daemon_that_cannot_start_fails_every_request_and_says_where_to_look(
    gm: GitMode,
) -> None:
    state = gm.repo / ".git" / "redline"
    (state / "daemon.lock").mkdir(parents=True)  # the daemon cannot take its lock
    proc, results = apply(gm, "s", EDIT, OTHER)
    assert proc.returncode == 1
    assert [r["status"] for r in results] == ["failed", "failed"]
    error = results[0]["error"]
    assert error.startswith("the daemon exited at start (code ")
    assert f"see {state / 'daemon.log'}" in error
    assert error.endswith("; nothing was sent to the daemon, so nothing was applied")
    assert "Traceback" not in error
    assert results[1]["error"] == error


def test_a_daemon_that_dies_while_answering_leaves_the_agent_a_way_to_check(
    gm: GitMode,
) -> None:
    gm.cli.open_session("s")
    gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
    faulty = {**gm.env, "REDLINE_FAULT": "after-journal"}  # the daemon kills itself (-9) there
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo), env=faulty)
    pid = gm.cli.pid()
    assert pid is not None
    proc, [result] = apply(gm, "s", EDIT)
    wait_dead(pid)
    assert proc.returncode == 1
    assert result["status"] == "failed"
    assert result["session"] == "s"
    assert result["error"] == (
        "the daemon closed the connection before answering; the daemon may or may not have "
        "committed it: run `redline daemon start` (a daemon first finishes a request it was "
        "interrupted in), then `redline log s` shows the session's commits; check there "
        "(or re-read the file) before sending it again"
    )
    # ...and the advice works: the restarted daemon finished the journalled edit.
    gm.cli.ok("daemon", "start", "--repo", str(gm.repo))
    log = gm.cli.json("log", "s", "--json", "--repo", str(gm.repo))
    assert [entry["operations"][0]["path"] for entry in log] == ["b.py"]


@pytest.mark.parametrize("jsonl", [False, True], ids=["single", "jsonl"])
def test_a_session_that_exists_still_applies(gm: GitMode, jsonl: bool) -> None:
    """The contrast: the same path with an open session."""
    base = rev(gm.repo, "HEAD")
    gm.cli.open_session("s")
    requests = (EDIT, OTHER) if jsonl else (EDIT,)
    proc, results = apply(gm, "s", *requests)
    assert proc.returncode == 0, results
    assert {r["status"] for r in results} == {"applied"}
    assert rev(gm.repo, "redline/s") != base
