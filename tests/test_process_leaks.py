"""The run fails when a test leaves a daemon or ``redline mcp`` running (support.leaks).

Each case runs a small test file in a pytest of its own (pytester, in a
subprocess) with the leak check loaded, and a real daemon started by a real
``redline daemon start``: one test stops its daemon, one forgets to.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from gitmode_fixtures import alive

pytestmark = pytest.mark.e2e  # real daemon processes, and a pytest of their own

TESTS = Path(__file__).resolve().parent

INNER = """
import subprocess, sys
from pathlib import Path

def start(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(
        [sys.executable, "-m", "redline", "daemon", "start", "--repo", str(repo)],
        check=True, capture_output=True, text=True,
    )
    pid = int((repo / ".git" / "redline" / "daemon.pid").read_text())
    print(f"daemon pid {pid}")
    return repo

def test_a_daemon(tmp_path):
    repo = start(tmp_path)
    if STOP:
        subprocess.run(
            [sys.executable, "-m", "redline", "daemon", "stop", "--repo", str(repo)], check=True
        )
"""


def run_inner(pytester: pytest.Pytester, stop: bool) -> tuple[pytest.RunResult, int]:
    # A daemon left running is waited for GRACE seconds before it counts as left
    # behind; the inner run waits less, as what is proved does not depend on it.
    pytester.makeconftest(
        'import support.leaks\nsupport.leaks.GRACE = 0.3\npytest_plugins = ["support.leaks"]\n'
    )
    pytester.makepyfile(test_inner=f"STOP = {stop}\n" + INNER)
    home = pytester.path / "home"
    home.mkdir()
    env = {
        "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        "HOME": str(home),
        "REDLINE_IDLE_TIMEOUT": "60",
    }
    for name, value in env.items():
        pytester._monkeypatch.setenv(name, value)
    result = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    [pid] = [int(m) for m in re.findall(r"daemon pid (\d+)", result.stdout.str())]
    return result, pid


def test_a_daemon_left_running_fails_the_run_and_is_stopped(pytester: pytest.Pytester) -> None:
    result, pid = run_inner(pytester, stop=False)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*processes left behind*",
            "these were started by tests and still alive when the run ended (now killed)*",
            f"  pid {pid}: {sys.executable} -m redline daemon run --repo *",
        ]
    )
    result.assert_outcomes(passed=1)  # the test itself passed; the run did not
    deadline = time.monotonic() + 10
    while alive(pid):
        assert time.monotonic() < deadline, f"the leaked daemon {pid} was not stopped"
        time.sleep(0.05)


def test_a_run_whose_tests_stop_their_daemons_passes(pytester: pytest.Pytester) -> None:
    result, pid = run_inner(pytester, stop=True)
    assert result.ret == pytest.ExitCode.OK
    assert "processes left behind" not in result.stdout.str()
    assert not alive(pid)
