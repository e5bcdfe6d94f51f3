"""``redline demo``: an exact and a tolerant edit on a throwaway project."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from cli_support import redline_script
from support.env import hermetic

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


@pytest.fixture(scope="module")
def ran(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], list[Path]]:
    """One run of ``redline demo`` for the tests that read what it printed and left: its
    outcome, and what it left in its temporary folder."""
    base = tmp_path_factory.mktemp("demo")
    scratch = base / "tmp"
    scratch.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        hermetic(tmp_path_factory, patch)
        proc = _demo(base, scratch)
    return proc, list(scratch.iterdir())


# The demo runs redline's commands as real processes, as a user would, and the real
# redline script runs it.
@pytest.mark.e2e
def test_demo_shows_each_request_beside_what_redline_did(
    ran: tuple[subprocess.CompletedProcess[str], list[Path]],
) -> None:
    proc, _ = ran
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    out = proc.stdout
    assert "== Request 1: the agent sends an edit of app/greet.py" in out
    assert "== Request 2: the agent sends an edit of app/greet.py" in out
    assert "\n$ redline session open --name demo\nsession:  demo\nbranch:   redline/demo\n" in out
    outcomes = re.findall(
        r"^redline: applied, match_type (\w+), confidence ([\d.]+)$", out, re.MULTILINE
    )
    assert len(outcomes) == 2
    (exact, exact_confidence), (tolerant, tolerant_confidence) = outcomes
    assert (exact, float(exact_confidence)) == ("exact", 1.0)
    assert tolerant in TOLERANT_TYPES
    assert 0.0 < float(tolerant_confidence) < 1.0
    # the request beside the file's text, indentation made visible, the difference named
    assert "redline found in the file (lines 14-15)" in out
    assert "redline found in the file (lines 8-11)" in out
    beside = re.search(r'^····# Say "hello" to the user by name\. +\| (.*)$', out, re.M)
    assert beside is not None
    assert beside.group(1) == "→   # Say \u201chello\u201d to the user by name."
    assert "tolerated: nothing (an exact match)" in out
    assert (
        "tolerated: indentation differed on 3 lines (lines 9-11): 4 spaces sent where the file "
        "has a tab; the file's indentation kept" in out
    )
    assert (
        "tolerated: marks differed on line 9: straight quotes sent where the file has "
        "\u201c \u201d; the file's marks kept where the edit leaves the text alone" in out
    )
    assert "+def farewell(name, polite=True):" in out
    assert "+\tlog.info('greeted %s', name)" in out  # written in the file's tab style
    assert len(re.findall(r"^commit [0-9a-f]{12} \(edit [0-9a-f]{12}, agent\)$", out, re.M)) == 2
    assert "flagged for review: match_type fuzzy is not one of: exact" in out


@pytest.mark.e2e
def test_demo_shows_what_a_team_sees_through_git(
    ran: tuple[subprocess.CompletedProcess[str], list[Path]],
) -> None:
    proc, _ = ran
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    steps = [
        "$ redline hooks install\npre-commit: installed",
        "== Plain git on a branch of your own, through the installed hooks",
        '$ git commit -m "Greeting tweaks"',
        "redline guard: refused — 1 flagged edit not yet approved by a person:",
        "(git exit status 1: nothing was committed)",
        "== The evidence: git log --notes=redline -1 redline/demo",
        "Notes (redline):",
        '"match_type": "fuzzy"',
        "$ redline review\nedit ",
        "+\tlog.info('greeted %s', name)",
        "$ redline approve ",
        "[try ",
        "(git exit status 0)",
        "$ git switch -q main\n$ redline land demo --squash -m 'Greeting tweaks'\n",
        "landed session demo on main (squash): 2 commit(s), edits ",
        "the squash commit's note carries each edit's evidence",
        "$ git notes --ref=redline show main",
    ]
    at = 0
    for step in steps:
        found = out.find(step, at)
        assert found >= 0, f"{step!r} missing after position {at}:\n{out}"
        at = found + len(step)
    [approved] = re.findall(r"^\$ redline approve ([0-9a-f]{12})$", out, re.M)
    assert f"`redline approve {approved}` and commit again" in out
    assert f"approved edit {approved} (1 note(s)) as redline demo <demo@redline.invalid>" in out
    trailers = re.findall(r"^\s*Redline-Edit: ([0-9a-f]{12})$", out, re.M)
    assert len(trailers) == 3  # one in the note's commit shown, two in the squash
    assert approved in trailers
    # the squash note, read back with git: each edit, the flagged one with its approval
    carried = re.findall(r"^edit ([0-9a-f]{12}): app/greet.py lines (\d+)-(\d+), (.*)$", out, re.M)
    assert [c[0] for c in carried] == trailers[1:]
    assert carried[0][1:] == ("14", "15", "exact 1.0, pass")
    assert carried[1][0] == approved
    assert carried[1][3].endswith(", flagged, approved by redline demo <demo@redline.invalid>")
    after = out[out.index(f"edit {approved}: app/greet.py lines 8-11") :].splitlines()
    assert after[1].startswith("  tolerated: indentation differed on 3 lines (lines 9-11)")


def test_the_demo_files_are_valid_code() -> None:
    from redline.cli.demo import EXACT, FILES, TOLERANT
    from redline.engine.edit import EditItem, EditRequest, apply_edit
    from redline.settings.policy import parse_policy

    compile(FILES["app/greet.py"], "app/greet.py", "exec")
    assert parse_policy(FILES[".redline.toml"], ".redline.toml").rules
    text = FILES["app/greet.py"].encode()
    for request in (EXACT, TOLERANT):
        done = apply_edit(
            text,
            EditRequest("app/greet.py", (EditItem(request["old_string"], request["new_string"]),)),
        )
        assert done.data is not None
        text = done.data
        compile(text, "app/greet.py", "exec")  # still valid after each edit


@pytest.mark.e2e
def test_demo_cleans_up_after_itself(
    ran: tuple[subprocess.CompletedProcess[str], list[Path]],
) -> None:
    proc, left = ran
    assert proc.returncode == 0, proc.stderr
    assert left == []


@pytest.mark.e2e
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
    # landed on main as one squash commit whose note carries both edits
    assert (repo / "app" / "greet.py").read_text(encoding="utf-8") == text
    compile(text, "app/greet.py", "exec")
    note = json.loads(
        subprocess.run(
            ["git", "-C", str(repo), "notes", "--ref=redline", "show", "main"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )
    assert note["tool"] == "squash"
    assert len(note["squashed"]) == 2
    # The demo stops the daemon it started.
    assert not (repo / ".git" / "redline" / "daemon.pid").exists()
