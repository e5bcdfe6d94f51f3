"""daemon.settings: a session's policy and permissions come from one reading of the main
line's committed settings, read again only when their blobs change."""

from __future__ import annotations

from pathlib import Path

import pygit2

from gitmode_fixtures import git
from redline.daemon.settings import CommittedSettings
from redline.gitops.repo import main_repository
from redline.gitops.session import Session, open_session
from redline.hooks import ledger
from redline.hooks.mainline import Mainline
from support.repos import make_repo

STRICT = (
    '[[guard.protect]]\npaths = ["src/**"]\nrequire = "exact"\n'
    '[permission]\nedit = {"secret/**" = "deny"}\n'
)
LOOSE = '[[guard.protect]]\npaths = ["src/**"]\nmin_confidence = 0.5\n'


def opened(
    tmp_path: Path, policy: str, user: str | None = None
) -> tuple[Path, pygit2.Repository, Session, CommittedSettings]:
    repo = make_repo(tmp_path / "repo", {"src/a.py": "x = 1\n", ".redline.toml": policy})
    user_file = tmp_path / "user.toml"
    if user is not None:
        user_file.write_text(user)
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    return repo, git_repo, session, CommittedSettings(git_repo, user_file)


def test_policy_and_permissions_come_from_the_same_committed_files(tmp_path: Path) -> None:
    repo, git_repo, session, settings = opened(tmp_path, STRICT)
    mainline = Mainline(git_repo, session, ledger.load, settings.policy)
    assert mainline().check("src/a.py", "fuzzy", 0.99)
    assert settings.permissions(session).decide("edit", "secret/k.txt").action == "deny"
    # a person loosens main: both follow, from the one new reading
    (repo / ".redline.toml").write_text(LOOSE)
    git(repo, "commit", "-qam", "looser")
    assert settings.permissions(session).decide("edit", "secret/k.txt").action == "allow"
    tip = git_repo.revparse_single("refs/heads/main").peel(pygit2.Commit).tree
    assert not settings.policy(tip).check("src/a.py", "fuzzy", 0.99)


def test_a_main_line_commit_that_leaves_the_settings_alone_is_not_read_again(
    tmp_path: Path,
) -> None:
    repo, git_repo, session, settings = opened(tmp_path, STRICT)
    tip = git_repo.revparse_single("refs/heads/main").peel(pygit2.Commit).tree
    policy, permissions = settings.policy(tip), settings.permissions(session)
    (repo / "other.txt").write_text("x\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "-qm", "unrelated")
    moved = git_repo.revparse_single("refs/heads/main").peel(pygit2.Commit).tree
    assert moved.id != tip.id
    assert settings.blobs(moved) == settings.blobs(tip)
    assert settings.policy(moved) is policy
    assert settings.permissions(session) is permissions


def test_the_session_worktree_never_governs(tmp_path: Path) -> None:
    _, _, session, settings = opened(tmp_path, STRICT)
    (Path(session.worktree) / ".redline.toml").write_text(LOOSE)  # the agent's own change
    assert settings.permissions(session).decide("edit", "secret/k.txt").action == "deny"


def test_the_repository_file_never_lifts_a_users_deny(tmp_path: Path) -> None:
    allow = '[permission]\nedit = {"docs/**" = "allow"}\n'
    _, _, session, settings = opened(
        tmp_path, allow, user='[permission]\nedit = {"docs/**" = "deny"}\n'
    )
    assert settings.permissions(session).decide("edit", "docs/a.md").action == "deny"
    assert settings.permissions(session).decide("edit", "src/a.py").action == "allow"


def test_a_changed_user_file_is_read_again(tmp_path: Path) -> None:
    _, _, session, settings = opened(tmp_path, STRICT, user="")
    assert settings.permissions(session).decide("edit", "docs/a.md").action == "allow"
    settings.user_file.write_text('[permission]\nedit = {"docs/**" = "deny"}\n# longer\n')
    assert settings.permissions(session).decide("edit", "docs/a.md").action == "deny"
