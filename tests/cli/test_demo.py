"""``redline demo``: an exact and a tolerant edit on a throwaway project."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from cli_support import redline_script

TOLERANT_TYPES = {"trailing_newline", "punctuation", "whitespace", "fuzzy", "line_fuzzy"}


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    return scratch


def _demo(tmp_path: Path, scratch: Path, *args: str) -> subprocess.CompletedProcess[str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(HOME=str(home), TMPDIR=str(scratch), NO_COLOR="1")
    proc = subprocess.run(
        [redline_script(), "demo", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert list(home.iterdir()) == []
    return proc


def test_demo_shows_an_exact_and_a_tolerant_edit(tmp_path: Path, scratch: Path) -> None:
    proc = _demo(tmp_path, scratch)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert "== Exact edit: applied" in out
    assert "== Tolerant edit: applied" in out
    match_types = re.findall(r"^match_type=(\w+) confidence=([\d.]+)$", out, re.MULTILINE)
    assert len(match_types) == 2
    (exact, exact_confidence), (tolerant, tolerant_confidence) = match_types
    assert (exact, float(exact_confidence)) == ("exact", 1.0)
    assert tolerant in TOLERANT_TYPES
    assert 0.0 < float(tolerant_confidence) < 1.0
    # The evidence: line numbers, the file's own text, and a diff.
    assert "lines 14-15, matched_text:" in out
    assert "+def farewell(name, polite=True):" in out
    assert "+\tlog.info('greeted %s', name)" in out  # written in the file's tab style
    assert "\t# Say \u201chello\u201d to the user by name." in out  # its curly quotes kept
    # Git mode: each edit is a commit; the guard refuses the tolerant one until approved.
    assert len(re.findall(r"^commit [0-9a-f]{12} \(edit [0-9a-f]{12}, agent\)$", out, re.M)) == 2
    assert "flagged for review: match_type fuzzy is not one of: exact" in out
    assert "redline guard: refused — 1 flagged edit not yet approved by a person:" in out
    assert "passes: every flagged edit is approved" in out


def test_demo_cleans_up_after_itself(tmp_path: Path, scratch: Path) -> None:
    proc = _demo(tmp_path, scratch)
    assert proc.returncode == 0, proc.stderr
    assert list(scratch.iterdir()) == []


def test_demo_keep_leaves_the_repository(tmp_path: Path, scratch: Path) -> None:
    proc = _demo(tmp_path, scratch, "--keep")
    assert proc.returncode == 0, proc.stderr
    [kept] = list(scratch.iterdir())
    repo = kept / "repo"
    assert f"Kept {repo}" in proc.stdout
    worktree = repo / ".git" / "redline" / "worktrees" / "demo"
    text = (worktree / "app" / "greet.py").read_text(encoding="utf-8")
    assert "def farewell(name, polite=True):" in text
    assert "\tlog.info('greeted %s', name)\n" in text
    log = subprocess.run(
        ["git", "-C", str(repo), "log", "--format=%s", "main..redline/demo"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert log == [
        "redline: edit app/greet.py (fuzzy 0.9073)",
        "redline: edit app/greet.py (exact 1.0)",
    ]
    # The demo stops the daemon it started.
    assert not (repo / ".git" / "redline" / "daemon.pid").exists()
