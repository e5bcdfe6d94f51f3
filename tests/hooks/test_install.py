"""``redline hooks install|uninstall``: plain git hooks, the way pre-commit installs them.

Three executable scripts carrying an ID marker; a foreign hook is kept as
``<hook>.legacy`` and still runs first; re-installing recognises our own
scripts; ``core.hooksPath`` is refused unless asked for; the hooks go into the
common git directory so that every worktree is guarded.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
from guard_fixtures import (
    MIGRATION,
    Flagged,
    flagged_edit,
    head,
    install_hooks,
    redline,
    refusal,
    run_git,
    user_repo,
)

from gitmode_fixtures import git, make_repo
from redline.hooks.install import GUARD_HOOKS, HOOKS, MARKER, NOTES_HOOK


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"a.txt": "a\n"})


def hooks(repo: Path) -> Path:
    return repo / ".git" / "hooks"


def is_executable(path: Path) -> bool:
    return bool(path.stat().st_mode & stat.S_IXUSR) and os.access(path, os.X_OK)


def commit_something(repo: Path, name: str = "b.txt") -> None:
    (repo / name).write_text(name + "\n")
    git(repo, "add", name)


def foreign_hook(path: Path, body: str) -> str:
    text = f"#!/bin/sh\n{body}\n"
    path.write_text(text)
    path.chmod(0o755)
    return text


# --- install -----------------------------------------------------------------------------------


def test_install_writes_executable_hooks_with_the_marker(repo: Path) -> None:
    out = install_hooks(repo)
    assert GUARD_HOOKS == ("pre-commit", "pre-merge-commit", "pre-push")
    assert (*GUARD_HOOKS, NOTES_HOOK) == HOOKS
    notes = hooks(repo) / NOTES_HOOK
    assert MARKER in notes.read_text()
    assert "notes import --quiet" in notes.read_text()
    assert is_executable(notes)
    assert f"{NOTES_HOOK}: installed ({notes})" in out
    for hook in GUARD_HOOKS:
        path = hooks(repo) / hook
        text = path.read_text()
        assert text.startswith("#!/bin/sh\n")
        assert MARKER in text
        assert 'guard --stage "$hook"' in text
        assert f"hook={hook}\n" in text
        assert is_executable(path)
        assert f"{hook}: installed ({path})" in out
    assert not list(hooks(repo).glob("*.legacy"))


@pytest.mark.e2e  # the interpreter a real hook starts: this very one
def test_the_hook_runs_the_guard_of_the_installing_python(repo: Path) -> None:
    install_hooks(repo)
    text = (hooks(repo) / "pre-commit").read_text()
    assert f"python='{sys.executable}'" in text


def test_a_foreign_hook_is_kept_as_legacy_and_still_runs(repo: Path, tmp_path: Path) -> None:
    marker = tmp_path / "legacy-ran"
    legacy = foreign_hook(hooks(repo) / "pre-commit", f'echo "$0" >> "{marker}"')
    out = install_hooks(repo)
    assert "pre-commit: installed; the existing hook runs first as pre-commit.legacy" in out
    assert (hooks(repo) / "pre-commit.legacy").read_text() == legacy
    assert MARKER in (hooks(repo) / "pre-commit").read_text()
    assert not (hooks(repo) / "pre-push.legacy").exists()

    commit_something(repo)
    git(repo, "commit", "-m", "b")
    assert marker.read_text().strip().endswith("pre-commit.legacy")


def test_a_failing_legacy_hook_blocks_the_commit(repo: Path) -> None:
    foreign_hook(hooks(repo) / "pre-commit", 'echo "lint failed" >&2\nexit 3')
    install_hooks(repo)
    before = head(repo)
    commit_something(repo)
    proc = run_git(repo, "commit", "-m", "b")
    assert proc.returncode != 0
    assert "lint failed" in proc.stderr
    assert head(repo) == before


def test_a_legacy_hook_that_passes_still_leaves_the_guard_to_refuse(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    marker = tmp_path / "legacy-ran"
    foreign_hook(hooks(repo) / "pre-commit", f'touch "{marker}"')
    install_hooks(repo)
    f = flagged_edit(repo)
    git(repo, "merge", "--squash", f.branch)
    refusal(run_git(repo, "commit", "-m", "squash"))
    assert marker.exists()


def test_a_legacy_pre_push_hook_gets_the_refs_on_stdin(repo: Path, tmp_path: Path) -> None:
    seen = tmp_path / "pushed"
    foreign_hook(hooks(repo) / "pre-push", f'echo "$1 $2" > "{seen}"\ncat >> "{seen}"')
    install_hooks(repo)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    first, refs = seen.read_text().splitlines()[:2]
    assert first == f"origin {remote}"
    assert refs == f"refs/heads/main {head(repo)} refs/heads/main {'0' * 40}"


def test_reinstalling_recognises_its_own_hooks(repo: Path) -> None:
    install_hooks(repo)
    first = {hook: (hooks(repo) / hook).read_text() for hook in HOOKS}
    out = install_hooks(repo)
    for hook in HOOKS:
        assert f"{hook}: updated" in out
        assert (hooks(repo) / hook).read_text() == first[hook]
    assert not list(hooks(repo).glob("*.legacy"))


def test_reinstalling_over_a_kept_legacy_hook_keeps_it(repo: Path) -> None:
    legacy = foreign_hook(hooks(repo) / "pre-commit", "exit 0")
    install_hooks(repo)
    install_hooks(repo)
    assert (hooks(repo) / "pre-commit.legacy").read_text() == legacy
    assert MARKER in (hooks(repo) / "pre-commit").read_text()


def test_a_foreign_hook_with_a_legacy_already_there_is_not_overwritten(repo: Path) -> None:
    foreign_hook(hooks(repo) / "pre-commit", "echo mine")
    foreign_hook(hooks(repo) / "pre-commit.legacy", "echo older")
    proc = redline(repo, "hooks", "install", "--repo", str(repo))
    assert proc.returncode == 1
    assert "pre-commit.legacy already exists; merge them by hand" in proc.stderr
    assert (hooks(repo) / "pre-commit").read_text() == "#!/bin/sh\necho mine\n"
    assert (hooks(repo) / "pre-commit.legacy").read_text() == "#!/bin/sh\necho older\n"


def test_install_outside_a_repository_says_so(tmp_path: Path) -> None:
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    proc = redline(elsewhere, "hooks", "install", "--repo", str(elsewhere))
    assert proc.returncode == 1
    assert "is not inside a git repository" in proc.stderr


# --- core.hooksPath ----------------------------------------------------------------------------


def test_core_hooks_path_is_refused_with_a_clear_message(repo: Path) -> None:
    git(repo, "config", "core.hooksPath", ".githooks")
    proc = redline(repo, "hooks", "install", "--repo", str(repo))
    assert proc.returncode == 1
    assert "core.hooksPath is set (.githooks)" in proc.stderr
    assert "Re-run with --hooks-path" in proc.stderr
    assert "unset core.hooksPath" in proc.stderr
    assert not any((hooks(repo) / hook).exists() for hook in HOOKS)
    assert not (repo / ".githooks").exists()


def test_hooks_path_flag_installs_where_git_looks(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    git(repo, "config", "core.hooksPath", ".githooks")
    out = install_hooks(repo, "--hooks-path")
    for hook in HOOKS:
        path = repo / ".githooks" / hook
        assert MARKER in path.read_text()
        assert is_executable(path)
        assert str(path) in out
    assert not any((hooks(repo) / hook).exists() for hook in HOOKS)
    # git runs them from there
    f = flagged_edit(repo)
    git(repo, "merge", "--squash", f.branch)
    refusal(run_git(repo, "commit", "-m", "squash"))
    redline(repo, "hooks", "uninstall", "--repo", str(repo), "--hooks-path", check=True)
    assert not any((repo / ".githooks" / hook).exists() for hook in HOOKS)


def test_an_absolute_hooks_path(repo: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared-hooks"
    git(repo, "config", "core.hooksPath", str(shared))
    install_hooks(repo, "--hooks-path")
    assert all(MARKER in (shared / hook).read_text() for hook in HOOKS)


# --- worktrees ---------------------------------------------------------------------------------


def test_install_from_a_linked_worktree_guards_every_worktree(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    out = install_hooks(linked)
    for hook in HOOKS:
        assert MARKER in (hooks(repo) / hook).read_text()
        assert f"({hooks(repo) / hook})" in out
    assert not (repo / ".git" / "worktrees" / "linked" / "hooks").exists()

    f: Flagged = flagged_edit(repo)
    before = head(linked)
    git(linked, "merge", "--squash", f.branch)
    message = refusal(run_git(linked, "commit", "-m", "squash in the worktree"))
    assert f"edit {f.edit}" in message
    assert MIGRATION in message
    assert head(linked) == before
    redline(linked, "approve", f.edit, check=True)
    git(linked, "commit", "-m", "squash in the worktree")
    assert head(linked) != before
    assert head(repo, "main") == f.base  # the main worktree is untouched


def test_a_commit_with_paths_in_a_linked_worktree_is_checked(tmp_path: Path) -> None:
    # git commits a temporary index (GIT_INDEX_FILE) for `commit <paths>` and `commit -a`
    repo = user_repo(tmp_path / "repo")
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(linked))
    install_hooks(repo)
    f = flagged_edit(repo)
    git(linked, "merge", "--squash", f.branch)
    git(linked, "reset", "-q")
    refusal(run_git(linked, "commit", "-m", "paths", "--", MIGRATION))
    refusal(run_git(linked, "commit", "-a", "-m", "all"))


# --- uninstall ---------------------------------------------------------------------------------


def test_uninstall_restores_the_legacy_hook(repo: Path) -> None:
    legacy = foreign_hook(hooks(repo) / "pre-commit", "exit 0")
    install_hooks(repo)
    out = redline(repo, "hooks", "uninstall", "--repo", str(repo), check=True).stdout
    assert "pre-commit: removed; the previous hook is restored" in out
    assert "pre-push: removed" in out
    assert (hooks(repo) / "pre-commit").read_text() == legacy
    assert is_executable(hooks(repo) / "pre-commit")
    assert not (hooks(repo) / "pre-commit.legacy").exists()
    assert not (hooks(repo) / "pre-push").exists()
    assert not (hooks(repo) / "pre-merge-commit").exists()


def test_uninstall_leaves_foreign_hooks_alone(repo: Path) -> None:
    mine = foreign_hook(hooks(repo) / "pre-push", "exit 0")
    out = redline(repo, "hooks", "uninstall", "--repo", str(repo), check=True).stdout
    assert out.strip() == "no redline hooks were installed"
    assert (hooks(repo) / "pre-push").read_text() == mine


def test_after_uninstall_nothing_is_guarded(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    redline(repo, "hooks", "uninstall", "--repo", str(repo), check=True)
    f = flagged_edit(repo)
    git(repo, "merge", "--squash", f.branch)
    git(repo, "commit", "-m", "unguarded")
