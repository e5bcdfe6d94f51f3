"""The CLI's one error boundary, read as the user sees it.

A RedlineError is ``redline: <message>`` and its exit code; click's own usage
errors keep click's wording; anything else is ``redline: unexpected error``
plus the path of a crash log holding the traceback — never a traceback on
the terminal. Crash logs go to ``$XDG_CACHE_HOME/redline`` (the hermetic
environment of ``tests/conftest.py`` points it away from HOME).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli_support import redline_script
from redline.cli.main import cli
from redline.engine.errors import RedlineError, RequestError
from redline.settings.policy import PolicyError

LOGGED = re.compile(
    r"^redline: the full traceback is in (?P<path>\S+\.log); this is a bug in redline: "
    r"please report it with that file and the command that caused it$",
    re.M,
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(folder))
    return folder


def _schema_raises(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    """Make ``redline schema`` raise ``exc`` (the command imports json_schema when run)."""
    import redline.tools.schema

    def boom() -> None:
        raise exc

    monkeypatch.setattr(redline.tools.schema, "json_schema", boom)


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def _no_traceback(outcome: Result | subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in outcome.stdout
    assert "Traceback" not in outcome.stderr


def test_an_unexpected_exception_is_one_line_and_a_crash_log(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _schema_raises(monkeypatch, ZeroDivisionError("division by zero"))
    outcome = _invoke("schema")
    assert outcome.exit_code == 1
    assert outcome.stdout == ""
    _no_traceback(outcome)
    first, second = outcome.stderr.splitlines()
    assert first == "redline: unexpected error: ZeroDivisionError: division by zero"
    logged = LOGGED.match(second)
    assert logged is not None, second
    log = Path(logged["path"])
    assert log.parent == cache / "redline"
    assert re.fullmatch(r"crash-\d{8}T\d{6}Z-\d+\.log", log.name)
    text = log.read_text()
    assert text.startswith("redline ")
    assert "Traceback (most recent call last):" in text
    assert "ZeroDivisionError: division by zero" in text
    assert "in boom" in text  # the frame that raised
    assert log.stat().st_mode & 0o777 == 0o600


def test_two_crashes_in_one_second_get_two_logs(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _schema_raises(monkeypatch, KeyError("lost"))
    paths = []
    for _ in range(2):
        outcome = _invoke("schema")
        assert outcome.stderr.splitlines()[0] == "redline: unexpected error: KeyError: 'lost'"
        logged = LOGGED.search(outcome.stderr)
        assert logged is not None
        paths.append(logged["path"])
    assert len(set(paths)) == 2
    assert all(Path(p).is_file() for p in paths)


def test_a_long_message_is_cut_and_an_empty_one_shows_the_type(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _schema_raises(monkeypatch, ValueError("x" * 5000))
    first = _invoke("schema").stderr.splitlines()[0]
    assert first == "redline: unexpected error: ValueError: " + "x" * 500 + "…"
    _schema_raises(monkeypatch, RuntimeError())
    assert _invoke("schema").stderr.splitlines()[0] == "redline: unexpected error: RuntimeError"


def test_when_the_cache_cannot_be_written_the_log_goes_to_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    _schema_raises(monkeypatch, OSError("disk gremlin"))
    outcome = _invoke("schema")
    assert outcome.exit_code == 1
    assert outcome.stderr.splitlines()[0] == "redline: unexpected error: OSError: disk gremlin"
    logged = LOGGED.search(outcome.stderr)
    assert logged is not None, outcome.stderr
    assert Path(logged["path"]).parent == scratch
    assert Path(logged["path"]).name.startswith("redline-crash-")


def test_when_no_log_can_be_written_the_user_is_told_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "nor-this"))
    _schema_raises(monkeypatch, ZeroDivisionError("division by zero"))
    outcome = _invoke("schema")
    assert outcome.exit_code == 1
    _no_traceback(outcome)
    second = outcome.stderr.splitlines()[1]
    assert second.startswith("redline: the traceback could not be saved (")
    assert second.endswith(
        "this is a bug in redline: please report it with the command that caused it"
    )


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (
            PolicyError(".redline.toml", "guard.action", "must be one of review, reject"),
            1,
        ),
        (RequestError("request has no 'tool'; send one of edit, apply_patch"), 2),
        (RedlineError("something redline refuses; do this instead"), 1),
    ],
    ids=["policy", "request", "base"],
)
def test_a_redline_error_is_its_message_and_its_exit_code(
    exc: RedlineError, code: int, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _schema_raises(monkeypatch, exc)
    outcome = _invoke("schema")
    assert outcome.exit_code == code
    assert outcome.stderr == f"redline: {exc}\n"
    assert not cache.exists()  # not a crash: nothing logged


def test_click_usage_errors_keep_clicks_wording() -> None:
    outcome = _invoke("apply", "--threshold", "5")
    assert outcome.exit_code == 2
    assert outcome.stderr.startswith("Usage: ")
    assert "Error: Invalid value for '--threshold'" in outcome.stderr
    outcome = _invoke("no-such-command")
    assert outcome.exit_code == 2
    assert "Error: No such command 'no-such-command'." in outcome.stderr


def test_the_real_entry_point_never_shows_a_traceback(tmp_path: Path, cache: Path) -> None:
    """``main()`` as the console script runs it, in a process of its own."""
    script = (
        "import sys, redline.tools.schema as s\n"
        "def boom():\n"
        "    raise ZeroDivisionError('division by zero')\n"
        "s.json_schema = boom\n"
        "from redline.cli.main import main\n"
        "sys.argv = ['redline', 'schema']\n"
        "main()\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 1
    _no_traceback(proc)
    assert proc.stderr.splitlines()[0] == (
        "redline: unexpected error: ZeroDivisionError: division by zero"
    )
    logged = LOGGED.search(proc.stderr)
    assert logged is not None, proc.stderr
    assert "command: redline schema" in Path(logged["path"]).read_text()


def test_a_setting_the_cli_cannot_use_is_a_usage_error(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    env = {**os.environ, "REDLINE_IDLE_TIMEOUT": "soon"}
    proc = subprocess.run(
        [redline_script(), "session", "open", "--repo", str(repo)],  # starts a daemon
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 2
    _no_traceback(proc)
    assert proc.stderr == (
        "redline: REDLINE_IDLE_TIMEOUT='soon' is not a number of seconds; set it to one "
        "(the default is 900) or unset it\n"
    )
    assert not (repo / ".git" / "redline" / "daemon.pid").exists()


def test_apply_answers_a_bug_with_a_json_result_naming_the_crash_log(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``apply`` keeps its own rule inside the boundary: every request gets a result."""
    import json

    import redline.engine.edit_plan as edit_plan

    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(edit_plan, "apply_edit", boom)
    (tmp_path / "a.py").write_text("x = 1\n")
    request = {"tool": "edit", "path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    outcome = CliRunner().invoke(cli, ["apply", "--root", str(tmp_path)], input=json.dumps(request))
    assert outcome.exit_code == 1
    assert outcome.stderr == ""
    [result] = [json.loads(text) for text in outcome.stdout.splitlines()]
    assert result["status"] == "failed"
    error = result["error"]
    assert error.startswith(
        "internal error: ZeroDivisionError: division by zero; nothing was written. "
        "This is a bug in redline, not in the request"
    )
    logged = re.search(r"the full traceback is in (\S+\.log);", error)
    assert logged is not None, error
    assert Path(logged[1]).parent == cache / "redline"
    assert "ZeroDivisionError: division by zero" in Path(logged[1]).read_text()
    assert (tmp_path / "a.py").read_text() == "x = 1\n"


def test_a_failure_of_the_machine_says_what_ran_out_and_logs_no_crash(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _schema_raises(monkeypatch, OSError(28, "No space left on device", "/r/.git/index.lock"))
    outcome = _invoke("schema")
    assert outcome.exit_code == 1
    assert outcome.stderr == (
        "redline: the disk is full (No space left on device); free space on the file system "
        "that holds /r/.git/index.lock, then retry\n"
    )
    assert not cache.exists()


def _apply_cannot_start(monkeypatch: pytest.MonkeyPatch, exc: Exception) -> None:
    import redline.cli.apply_stream

    def boom(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(redline.cli.apply_stream, "embedded_runner", boom)


def test_apply_answers_in_json_even_when_it_cannot_get_ready_nor_log_the_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk takes the cache folder and the temporary one too: the answer is still
    a JSON result on stdout, saying that the traceback could not be saved."""
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    monkeypatch.setattr(tempfile, "tempdir", str(blocker / "nor-this"))
    _apply_cannot_start(monkeypatch, ZeroDivisionError("division by zero"))
    request = '{"tool": "edit", "path": "a.py", "old_string": "a", "new_string": "b"}\n'
    outcome = CliRunner().invoke(
        cli, ["apply", "--root", str(tmp_path), "--jsonl"], input=request * 2
    )
    assert outcome.exit_code == 1
    _no_traceback(outcome)
    answers = [json.loads(line) for line in outcome.stdout.splitlines()]
    assert [a["status"] for a in answers] == ["failed", "failed"]
    assert [a["path"] for a in answers] == ["a.py", "a.py"]
    error = answers[0]["error"]
    assert error.startswith("internal error: ZeroDivisionError: division by zero; nothing was ")
    assert "the traceback could not be saved (" in error


def test_apply_that_the_machine_keeps_from_starting_says_what_ran_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _apply_cannot_start(monkeypatch, OSError(24, "Too many open files"))
    request = '{"tool": "read", "path": "a.py"}'
    outcome = CliRunner().invoke(cli, ["apply", "--root", str(tmp_path)], input=request)
    assert outcome.exit_code == 1
    [answer] = [json.loads(line) for line in outcome.stdout.splitlines()]
    assert answer["status"] == "failed"
    assert answer["error"].startswith(
        "cannot carry out the request: the process has too many files open (Too many open "
        "files); raise the open-file limit (`ulimit -n`; it is "
    )
    assert answer["error"].endswith("then retry — nothing was applied")
