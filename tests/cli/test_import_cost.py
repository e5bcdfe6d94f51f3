"""Start-up cost: the client paths of the CLI must not import the heavy packages.

pygit2, watchdog and pydantic cost about 0.4 s together (STYLE 14); ``--help``
of every command and the command group itself load none of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import redline_script

HEAVY = ("pygit2", "watchdog", "pydantic")
HELP_ARGS = [
    ["--help"],
    ["-h"],
    ["--version"],
    ["apply", "--help"],
    ["schema", "--help"],
    ["demo", "--help"],
    ["stats", "--help"],
    ["tools", "--help"],
    ["mcp", "--help"],
    ["notes", "--help"],
    ["land", "--help"],
    ["undo", "--help"],
]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PYTHON"))}
    clean.update(HOME=str(home), TMPDIR=str(tmp_path))
    return clean


def _imported_packages(importtime_log: str) -> set[str]:
    """Top-level package names in ``-X importtime`` output."""
    names = set()
    for entry in importtime_log.splitlines():
        if entry.startswith("import time:") and "|" in entry:
            name = entry.rsplit("|", 1)[1].strip()
            names.add(name.split(".")[0])
    return names


@pytest.mark.parametrize("args", HELP_ARGS, ids=" ".join)
def test_entry_point_help_imports_nothing_heavy(
    args: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    proc = subprocess.run(
        [redline_script(), *args],
        capture_output=True,
        text=True,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    imported = _imported_packages(proc.stderr)
    assert "redline" in imported  # the log is real, not empty
    assert "click" in imported
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))


CHECK_MODULES = """
import json, sys
from click.testing import CliRunner
from redline.cli.main import cli
codes = [CliRunner().invoke(cli, args).exit_code for args in json.loads(sys.argv[1])]
print(json.dumps({"codes": codes, "heavy": [m for m in sys.argv[2:] if m in sys.modules]}))
"""


def test_in_process_help_leaves_sys_modules_light(env: dict[str, str], tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", CHECK_MODULES, json.dumps(HELP_ARGS), *HEAVY],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["codes"] == [0] * len(HELP_ARGS)
    assert report["heavy"] == []


def test_applying_an_edit_loads_no_git_or_watcher(env: dict[str, str], tmp_path: Path) -> None:
    """The embedded edit path never needs pygit2 or watchdog; a well-formed request is
    read without pydantic (tools.request reads the format by hand);
    an exact edit loads none of the tolerant tiers' numeric libraries."""
    (tmp_path / "a.py").write_text("x = 1\n")
    request = {"tool": "edit", "path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
    proc = _apply_with_import_times(request, env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["status"] == "applied"
    imported = _imported_packages(proc.stderr)
    assert "redline" in imported
    heavy = {"pygit2", "watchdog", "pydantic", "charset_normalizer", "numpy", "rapidfuzz"}
    assert imported.isdisjoint(heavy)


def test_a_malformed_request_is_explained_without_pydantic(
    env: dict[str, str], tmp_path: Path
) -> None:
    """The format's own words for what is wrong, from the one reader of requests."""
    request = {"tool": "edit", "path": "a.py", "old_string": 1, "new_string": "x = 2"}
    proc = _apply_with_import_times(request, env, tmp_path)
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"].startswith("invalid request: old_string: ")
    assert "redline" in _imported_packages(proc.stderr)
    assert "pydantic" not in _imported_packages(proc.stderr)


def _apply_with_import_times(
    request: dict[str, object], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    """``redline apply`` on one request, with Python's import times on stderr."""
    return subprocess.run(
        [redline_script(), "apply"],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env={**env, "PYTHONPROFILEIMPORTTIME": "1"},
        cwd=cwd,
        timeout=60,
    )
