"""Evidence redline cannot read: the guard refuses, and every command says how to repair it.

``refs/notes/redline`` damaged as a ref (pointing at a blob, a tree, an ordinary
commit, a missing object, or a file git itself cannot read) makes ``redline
guard``, ``review``, ``approve`` and ``log`` fail with one message naming the
ref, what it points at and git's commands to repair it — the guard fails closed
(it used to pass). One unreadable note blocks what its commit touched, named by
commit. Each test reads the text the user sees, from real processes.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from guard_fixtures import (
    Flagged,
    flagged_edit,
    install_hooks,
    redline,
    run_git,
    user_repo,
)

from gitmode_fixtures import GitMode, git, gm

__all__ = ["gm"]

REF = "refs/notes/redline"
REMEDY = (
    f"so redline cannot read the edit evidence (the guard refuses commits and pushes until "
    f"it can). Restore it with `git update-ref {REF} <good commit>` (`git reflog {REF}` lists "
    f"its earlier values), fetch it again with `git fetch <remote> +{REF}:{REF}`, or remove "
    f"it with `git update-ref -d {REF}` (which forgets every recorded edit and approval)"
)


@pytest.fixture
def flagged(tmp_path: Path) -> Flagged:
    """A guarded repository whose session ``s`` has one flagged edit of the migration,
    squashed into the index: ``git commit`` would carry it."""
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    found = flagged_edit(repo)
    git(repo, "merge", "--squash", found.branch)
    return found


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def _object(repo: Path, *args: str, input: str = "") -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, input=input, capture_output=True, text=True, check=True
    ).stdout.strip()


def _blob(repo: Path) -> str:
    return _object(repo, "hash-object", "-w", "--stdin", input="not a notes commit\n")


def _point_at_blob(repo: Path) -> str:
    blob = _blob(repo)
    git(repo, "update-ref", REF, blob)
    return f"{REF} does not point at a notes commit (it points at a blob, {blob[:12]}), "


def _point_at_tree(repo: Path) -> str:
    tree = _object(repo, "rev-parse", "HEAD^{tree}")
    git(repo, "update-ref", REF, tree)
    return f"{REF} does not point at a notes commit (it points at a tree, {tree[:12]}), "


def _point_at_missing_object(repo: Path) -> str:
    missing = "1234567890abcdef1234567890abcdef12345678"
    (repo / ".git" / REF).write_text(missing + "\n")
    return f"{REF} points at {missing}, an object missing from the repository, "


def _point_at_an_ordinary_commit(repo: Path) -> str:
    commit = _object(repo, "rev-parse", "HEAD")
    git(repo, "update-ref", REF, commit)
    return (
        f"{REF} points at commit {commit[:12]}, whose tree holds '.redline.toml', which is "
        "not a note (is it an ordinary commit rather than a notes commit?), "
    )


def _point_at_a_commit_whose_tree_is_gone(repo: Path) -> str:
    blob = _blob(repo)
    tree = _object(repo, "mktree", input=f"100644 blob {blob}\t{'ab' * 20}\n")
    commit = _object(repo, "commit-tree", tree, "-m", "notes")
    git(repo, "update-ref", REF, commit)
    (repo / ".git" / "objects" / tree[:2] / tree[2:]).unlink()
    return (
        f"{REF} points at commit {commit[:12]}, whose tree {tree} is missing from the repository, "
    )


CORRUPTIONS: dict[str, Callable[[Path], str]] = {
    "blob": _point_at_blob,
    "tree": _point_at_tree,
    "missing-object": _point_at_missing_object,
    "ordinary-commit": _point_at_an_ordinary_commit,
    "tree-gone": _point_at_a_commit_whose_tree_is_gone,
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_a_corrupt_notes_ref_makes_the_guard_refuse_and_say_how_to_repair_it(
    flagged: Flagged, corrupt: Callable[[Path], str]
) -> None:
    repo = flagged.repo
    good = git(repo, "rev-parse", REF).strip()
    expected = "redline: " + corrupt(repo) + REMEDY + "\n"

    # git runs the guard from the pre-commit hook: refused, fail closed
    proc = run_git(repo, "commit", "-m", "squash")
    assert proc.returncode != 0
    _no_traceback(proc)
    assert expected in proc.stderr
    assert git(repo, "rev-parse", "HEAD").strip() == flagged.base

    # every command reading the evidence says the same, exit 1
    for args in (
        ["guard"],
        ["review", "--repo", str(repo)],
        ["review", "--repo", str(repo), "--json"],
        ["approve", "--repo", str(repo), flagged.edit],
    ):
        direct = redline(repo, *args)
        assert direct.returncode == 1, args
        _no_traceback(direct)
        assert direct.stderr == expected, args
        assert direct.stdout == "", args

    # the advice works: restoring the ref restores the guard's ordinary verdict
    subprocess.run(["git", "update-ref", REF, good], cwd=repo, check=True)
    again = redline(repo, "guard")
    assert again.returncode == 1
    assert "redline guard: refused — 1 flagged edit not yet approved" in again.stderr


def test_a_notes_ref_git_cannot_read_is_removed_by_hand(flagged: Flagged) -> None:
    repo = flagged.repo
    broken = repo / ".git" / REF
    broken.write_text("not a reference\n")
    proc = redline(repo, "guard")
    assert proc.returncode == 1
    _no_traceback(proc)
    assert proc.stderr.startswith(f"redline: {REF} cannot be read as a reference (")
    assert proc.stderr.endswith(
        f"Remove the broken file {broken}, then restore the ref with `git update-ref {REF} "
        f"<good commit>` or fetch it again with `git fetch <remote> +{REF}:{REF}`\n"
    )


def test_removing_a_corrupt_notes_ref_as_advised_lets_commands_run_again(
    flagged: Flagged,
) -> None:
    repo = flagged.repo
    _point_at_missing_object(repo)
    assert redline(repo, "review", "--repo", str(repo)).returncode == 1
    subprocess.run(["git", "update-ref", "-d", REF], cwd=repo, check=True)
    proc = redline(repo, "review", "--repo", str(repo))
    assert proc.returncode == 0, proc.stderr
    # ...and, the evidence gone with the ref, the edit commit waits for a person again
    assert proc.stdout.startswith(
        f"edit {flagged.edit} (commit {flagged.commit[:12]}): migrations/001_users.sql "
        "evidence missing\n  rule evidence missing: no note in refs/notes/redline records "
        "this edit"
    )


# --- one note that cannot be read -------------------------------------------------------


def _replace_note(repo: Path, commit: str, text: str) -> None:
    git(repo, "notes", "--ref=redline", "add", "-f", "-m", text, commit)


UNREADABLE = {
    "not-json": ("garbage", "the note is not a JSON object"),
    "truncated-tolerant": (
        '{"schema": "redline.note/1", "operations": [{"match_type": "fuzzy", ',
        "the note is not valid JSON (Expecting property name enclosed in double quotes "
        "at line 2 column 1)",  # git notes ends the text with a newline
    ),
    "foreign-json": ('{"reviewed": true}', "the note does not name the redline.note schema"),
    "wrong-shape": (
        '{"schema": "redline.note/1", "operations": [{"match_type": "fuzzy", '
        '"confidence": "high"}]}',
        "the note has an operation whose confidence is not a number ('high')",
    ),
}


@pytest.mark.parametrize(("text", "reason"), UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_note_blocks_what_its_commit_touched_naming_the_commit(
    flagged: Flagged, text: str, reason: str
) -> None:
    repo = flagged.repo
    original = git(repo, "notes", "--ref=redline", "show", flagged.commit)
    _replace_note(repo, flagged.commit, text)
    short = flagged.commit[:12]
    expected = (
        "redline guard: refused — the evidence note of 1 commit in refs/notes/redline cannot "
        "be read, so redline cannot tell whether it records a flagged edit:\n"
        f"  commit {short}: {reason}\n"
        f"Repair the note (`git notes --ref=redline edit {short}`, or restore "
        "refs/notes/redline from a good copy), or, once a person has reviewed the commit's "
        f"diff, remove it (`git notes --ref=redline remove {short}`); then try again.\n"
    )
    proc = run_git(repo, "commit", "-m", "squash")
    assert proc.returncode != 0
    _no_traceback(proc)
    assert expected in proc.stderr
    direct = redline(repo, "guard")
    assert direct.returncode == 1
    assert direct.stderr == expected

    # review lists what it can and names what it cannot read; approve refuses the commit
    review = redline(repo, "review", "--repo", str(repo), "--json")
    assert review.returncode == 1
    assert json.loads(review.stdout) == []
    assert review.stderr == expected.replace("redline guard: refused — ", "redline review: ")
    approve = redline(repo, "approve", "--repo", str(repo), flagged.commit)
    assert approve.returncode == 1
    _no_traceback(approve)
    assert approve.stderr == (
        f"redline: the evidence note of commit {short} cannot be read ({reason}), so there "
        f"is no edit to approve; repair it (`git notes --ref=redline edit {short}`) or "
        "restore refs/notes/redline from a good copy, then approve again\n"
    )

    # repairing the note restores the ordinary refusal, which an approval then clears
    _replace_note(repo, flagged.commit, original)
    again = redline(repo, "guard")
    assert again.returncode == 1
    assert f"edit {flagged.edit} (commit {short})" in again.stderr
    redline(repo, "approve", "--repo", str(repo), flagged.edit, check=True)
    assert run_git(repo, "commit", "-m", "squash").returncode == 0


def test_an_unreadable_note_does_not_block_a_change_elsewhere(flagged: Flagged) -> None:
    repo = flagged.repo
    git(repo, "reset", "-q", "--hard")
    _replace_note(repo, flagged.commit, "garbage")
    (repo / "CHANGES.md").write_text("unrelated\n")
    git(repo, "add", "CHANGES.md")
    proc = run_git(repo, "commit", "-m", "unrelated")
    assert proc.returncode == 0, proc.stderr


def test_a_note_whose_blob_is_missing_is_named(flagged: Flagged) -> None:
    repo = flagged.repo
    _replace_note(repo, flagged.commit, "soon gone")
    blob = git(repo, "notes", "--ref=redline", "list", flagged.commit).strip()
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    proc = redline(repo, "guard")
    assert proc.returncode == 1
    _no_traceback(proc)
    assert (
        f"  commit {flagged.commit[:12]}: the note ({blob}) is missing from the repository\n"
        in proc.stderr
    )


# --- redline log, through the daemon ------------------------------------------------------


def test_redline_log_names_the_corrupt_notes_ref(gm: GitMode) -> None:
    gm.cli.open_session("s")
    code, result = gm.cli.apply(
        "s", {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "V = 2"}
    )
    assert code == 0, result
    expected = _point_at_blob(gm.repo) + REMEDY
    proc = gm.cli.run("log", "s", "--repo", str(gm.repo))
    assert proc.returncode == 1
    _no_traceback(proc)
    assert expected in proc.stderr
    assert proc.stdout == ""


def test_an_edit_cannot_add_its_note_to_a_corrupt_notes_ref_and_says_why(gm: GitMode) -> None:
    gm.cli.open_session("s")
    tip = git(gm.repo, "rev-parse", "redline/s").strip()
    expected = _point_at_blob(gm.repo) + REMEDY
    proc = gm.cli.run(
        "apply",
        "--session",
        "s",
        "--repo",
        str(gm.repo),
        input=json.dumps(
            {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "V = 2"}
        ),
    )
    assert proc.returncode == 1
    _no_traceback(proc)
    result = json.loads(proc.stdout)
    assert result["status"] == "failed"
    assert result["error"] == expected
    assert git(gm.repo, "rev-parse", "redline/s").strip() == tip  # nothing committed
