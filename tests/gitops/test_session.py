"""gitops.session on real repositories: branches, scratch worktrees, closing.

What pygit2 did is checked with the git binary (``git worktree list``,
``git branch``, ``git config``).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import git, rev, write
from redline.gitops import journal
from redline.gitops.errors import SessionError
from redline.gitops.repo import Layout, main_repository
from redline.gitops.session import Session, all_sessions, close_session, load, open_session


@pytest.fixture
def opened(repo: Path) -> tuple[pygit2.Repository, Layout]:
    return main_repository(repo)


def worktrees(repo: Path) -> dict[str, str]:
    """``git worktree list --porcelain`` as {path: branch ref}."""
    out: dict[str, str] = {}
    path = ""
    for line in git(repo, "worktree", "list", "--porcelain").splitlines():
        if line.startswith("worktree "):
            path = line.removeprefix("worktree ")
            out[path] = ""
        elif line.startswith("branch "):
            out[path] = line.removeprefix("branch ")
    return out


def branches(repo: Path) -> list[str]:
    return git(repo, "branch", "--list", "--format=%(refname:short)").split()


def commit_in(worktree: Path, name: str, content: str) -> str:
    write(worktree / name, content)
    git(worktree, "add", name)
    git(worktree, "commit", "-q", "-m", f"change {name}")
    return rev(worktree, "HEAD")


# --- opening ---------------------------------------------------------------------------


def test_open_creates_the_branch_and_a_worktree_git_lists(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, "feature-1", None)

    assert session.name == "feature-1"
    assert session.branch == "refs/heads/redline/feature-1"
    assert session.short_branch == "redline/feature-1"
    assert "redline/feature-1" in branches(repo)
    assert rev(repo, "redline/feature-1") == rev(repo, "HEAD") == session.base
    listed = worktrees(repo)
    assert listed[session.worktree] == "refs/heads/redline/feature-1"
    assert listed[str(repo)] == "refs/heads/main"
    wt = Path(session.worktree)
    assert (wt / "a.py").read_bytes() == (repo / "a.py").read_bytes()
    assert git(wt, "rev-parse", "--abbrev-ref", "HEAD").strip() == "redline/feature-1"
    assert git(wt, "status", "--porcelain") == ""
    # the user's own checkout is untouched
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main"
    assert git(repo, "status", "--porcelain") == ""
    assert load(opened[1], "feature-1") == session
    assert [s.name for s in all_sessions(opened[1])] == ["feature-1"]


def test_default_name_is_date_and_time(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, None, None)
    assert re.fullmatch(r"s-\d{8}-\d{6}", session.name), session.name
    assert f"redline/{session.name}" in branches(repo)
    assert session.worktree in worktrees(repo)


def test_default_names_opened_back_to_back_do_not_collide(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    """An agent may open two unnamed sessions within one second."""
    first = open_session(*opened, None, None)
    second = open_session(*opened, None, None)
    third = open_session(*opened, None, None)
    names = {first.name, second.name, third.name}
    assert len(names) == 3
    for name in names:
        assert re.fullmatch(r"s-\d{8}-\d{6}(-\d+)?", name), name
        assert f"redline/{name}" in branches(repo)


@pytest.mark.parametrize(
    "name",
    [
        "../escape",
        "a/b",
        "-dash",
        ".hidden",
        "two..dots",
        "name.lock",
        "trailing.",
        "with space",
        "tab\tname",
        "x" * 64,
        "ünïcode",
        "semi;colon",
    ],
)
def test_invalid_names_are_refused_with_a_clear_message(
    repo: Path, opened: tuple[pygit2.Repository, Layout], name: str
) -> None:
    with pytest.raises(SessionError, match="invalid session name") as info:
        open_session(*opened, name, None)
    assert "letters, digits" in str(info.value)
    assert [b for b in branches(repo) if b.startswith("redline/")] == []
    assert list(worktrees(repo)) == [str(repo)]


def test_longest_valid_name_is_accepted(opened: tuple[pygit2.Repository, Layout]) -> None:
    session = open_session(*opened, "n" * 63, None)
    assert session.short_branch == "redline/" + "n" * 63


def test_a_duplicate_session_is_refused(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    first = open_session(*opened, "dup", None)
    with pytest.raises(SessionError, match="'dup' is already open"):
        open_session(*opened, "dup", None)
    assert worktrees(repo)[first.worktree] == "refs/heads/redline/dup"
    assert len(worktrees(repo)) == 2


def test_base_may_be_a_tag_or_a_commit(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    first = rev(repo, "HEAD")
    git(repo, "tag", "-a", "v1", "-m", "release 1")  # annotated: must be peeled
    write(repo / "b.py", "VALUE = 2\n")
    git(repo, "commit", "-q", "-am", "second")
    second = rev(repo, "HEAD")

    from_tag = open_session(*opened, "from-tag", "v1")
    from_commit = open_session(*opened, "from-commit", first[:10])
    from_head = open_session(*opened, "from-head", None)

    assert rev(repo, "redline/from-tag") == first == from_tag.base
    assert rev(repo, "redline/from-commit") == first == from_commit.base
    assert rev(repo, "redline/from-head") == second == from_head.base
    assert (Path(from_tag.worktree) / "b.py").read_text() == "VALUE = 1\n"
    assert (Path(from_head.worktree) / "b.py").read_text() == "VALUE = 2\n"


def test_an_unknown_base_is_refused(repo: Path, opened: tuple[pygit2.Repository, Layout]) -> None:
    with pytest.raises(SessionError, match="cannot resolve 'no-such-ref' to a commit"):
        open_session(*opened, "s", "no-such-ref")
    assert "redline/s" not in branches(repo)
    assert list(worktrees(repo)) == [str(repo)]


def test_open_sets_notes_rewrite_ref_once_and_keeps_other_values(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    git(repo, "config", "--add", "notes.rewriteRef", "refs/notes/commits")
    open_session(*opened, "one", None)
    open_session(*opened, "two", None)
    values = git(repo, "config", "--get-all", "notes.rewriteRef").split()
    assert sorted(values) == ["refs/notes/commits", "refs/notes/redline"]


def test_notes_rewrite_ref_in_a_fresh_repository(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    open_session(*opened, "one", None)
    assert git(repo, "config", "--get-all", "notes.rewriteRef").split() == ["refs/notes/redline"]


# --- resuming --------------------------------------------------------------------------


def add_note(repo: Path, commit: str, note: dict[str, object]) -> None:
    git(repo, "notes", "--ref=redline", "add", "-m", json.dumps(note), commit)


def test_a_closed_session_resumes_on_its_branch(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    first = open_session(*opened, "s", None)
    tip = commit_in(Path(first.worktree), "new.txt", "new\n")
    close_session(*opened, first, delete_branch=False, force=False)
    assert (opened[1].closed / "s.json").is_file()

    again = open_session(*opened, "s", None)

    assert again.resumed is True
    assert again.base == first.base  # its history starts where the first one's did
    assert rev(repo, "redline/s") == tip  # the branch did not move
    assert worktrees(repo)[again.worktree] == "refs/heads/redline/s"
    assert (Path(again.worktree) / "new.txt").read_text() == "new\n"
    assert git(Path(again.worktree), "status", "--porcelain") == ""
    assert [s.name for s in all_sessions(opened[1])] == ["s"]
    assert load(opened[1], "s") == again
    assert not (opened[1].closed / "s.json").exists()


def test_a_branch_without_a_record_resumes_below_the_commits_its_notes_name(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    """A session branch fetched from elsewhere: the notes say which commits are the session's."""
    main = rev(repo, "HEAD")
    git(repo, "switch", "-q", "-c", "redline/theirs")
    mine = [commit_in(repo, f"f{i}.txt", f"{i}\n") for i in range(2)]
    for commit in mine:
        add_note(repo, commit, {"session": "theirs", "edit": commit[:12]})
    git(repo, "switch", "-q", "main")

    session = open_session(*opened, "theirs", None)

    assert session.resumed is True
    assert session.base == main
    assert rev(repo, "redline/theirs") == mine[-1]


def test_a_plain_branch_of_that_name_resumes_with_an_empty_history(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    git(repo, "branch", "redline/taken")
    session = open_session(*opened, "taken", None)
    assert session.resumed is True
    assert session.base == rev(repo, "redline/taken") == rev(repo, "HEAD")
    assert worktrees(repo)[session.worktree] == "refs/heads/redline/taken"


def test_a_record_the_branch_no_longer_descends_from_is_not_trusted(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    first = open_session(*opened, "s", None)
    close_session(*opened, first, delete_branch=False, force=False)
    # Someone rebuilt the branch from an unrelated root since.
    git(repo, "switch", "-q", "--orphan", "scratch")
    git(repo, "commit", "-q", "--allow-empty", "-m", "unrelated")
    git(repo, "branch", "-f", "redline/s", "scratch")
    git(repo, "switch", "-q", "main")

    again = open_session(*opened, "s", None)

    assert again.base == rev(repo, "redline/s")


def test_resuming_refuses_a_base(repo: Path, opened: tuple[pygit2.Repository, Layout]) -> None:
    git(repo, "branch", "redline/s")
    with pytest.raises(SessionError) as info:
        open_session(*opened, "s", "main")
    assert str(info.value) == (
        "branch redline/s already exists, so session 's' would resume from its tip and "
        "--base main cannot apply; drop --base to resume it, or pick another session name "
        "to start from main"
    )
    assert list(worktrees(repo)) == [str(repo)]


def test_a_branch_checked_out_in_the_users_worktree_is_refused(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    git(repo, "switch", "-q", "-c", "redline/mine")
    with pytest.raises(SessionError) as info:
        open_session(*opened, "mine", None)
    assert str(info.value) == (
        f"branch redline/mine is checked out in your own worktree ({repo}), so the session "
        "cannot resume in a worktree of its own; switch that worktree to another branch "
        "(`git switch -`), or pick another session name"
    )
    assert list(worktrees(repo)) == [str(repo)]
    assert all_sessions(opened[1]) == []


def test_a_branch_checked_out_in_another_worktree_is_refused(
    repo: Path, tmp_path: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "redline/busy", str(other))
    with pytest.raises(SessionError) as info:
        open_session(*opened, "busy", None)
    assert str(info.value) == (
        f"branch redline/busy is checked out in the worktree {other}; remove that worktree "
        f"(`git worktree remove {other}`) or switch it to another branch, then open the "
        "session again — or pick another session name"
    )
    git(repo, "worktree", "remove", str(other))
    assert open_session(*opened, "busy", None).resumed is True


def test_a_branch_registered_to_a_missing_worktree_is_refused_until_pruned(
    repo: Path, tmp_path: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    other = tmp_path / "gone"
    git(repo, "worktree", "add", "-q", "-b", "redline/stale", str(other))
    shutil.rmtree(other)
    with pytest.raises(SessionError) as info:
        open_session(*opened, "stale", None)
    assert str(info.value) == (
        f"branch redline/stale is still registered to the worktree {other}, which no longer "
        "exists; run `git worktree prune` to forget it, then open the session again"
    )
    git(repo, "worktree", "prune")
    assert open_session(*opened, "stale", None).resumed is True


# --- closing ---------------------------------------------------------------------------


def test_close_removes_the_worktree_and_keeps_the_branch(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, "s", None)
    tip = commit_in(Path(session.worktree), "new.txt", "new\n")
    journal_file = journal.path_for(opened[1].journal, "s")
    journal_file.write_bytes(b"")  # as the session's first request leaves it

    close_session(*opened, session, delete_branch=False, force=False)

    assert not journal_file.exists()
    assert session.worktree not in worktrees(repo)
    assert not Path(session.worktree).exists()
    assert git(repo, "worktree", "prune", "--dry-run", "-v") == ""
    assert rev(repo, "redline/s") == tip
    assert all_sessions(opened[1]) == []
    with pytest.raises(SessionError, match="no session named 's'"):
        load(opened[1], "s")


def test_the_name_can_be_reused_after_close_with_delete_branch(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, "again", None)
    close_session(*opened, session, delete_branch=True, force=False)
    assert "redline/again" not in branches(repo)
    assert not (opened[1].closed / "again.json").exists()
    reopened = open_session(*opened, "again", None)
    assert reopened.worktree in worktrees(repo)
    assert reopened.resumed is False


def test_delete_branch_is_refused_when_unmerged_unless_forced(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, "s", None)
    tip = commit_in(Path(session.worktree), "new.txt", "new\n")

    with pytest.raises(SessionError, match="not merged into HEAD") as info:
        close_session(*opened, session, delete_branch=True, force=False)
    assert "--force" in str(info.value)
    assert rev(repo, "redline/s") == tip
    assert session.worktree in worktrees(repo)  # nothing was removed

    close_session(*opened, session, delete_branch=True, force=True)
    assert "redline/s" not in branches(repo)
    assert session.worktree not in worktrees(repo)
    # the commit itself is still in the object database (recoverable from the reflog)
    assert git(repo, "cat-file", "-t", tip).strip() == "commit"


def test_delete_branch_of_merged_work_needs_no_force(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, "s", None)
    commit_in(Path(session.worktree), "new.txt", "new\n")
    git(repo, "merge", "-q", "--ff-only", "redline/s")

    close_session(*opened, session, delete_branch=True, force=False)
    assert "redline/s" not in branches(repo)
    assert (repo / "new.txt").read_text() == "new\n"


@pytest.mark.parametrize("change", ["modified", "untracked", "deleted", "staged"])
def test_close_is_refused_with_uncommitted_changes_unless_forced(
    repo: Path, opened: tuple[pygit2.Repository, Layout], change: str
) -> None:
    session = open_session(*opened, "s", None)
    wt = Path(session.worktree)
    if change == "modified":
        write(wt / "a.py", "changed\n")
    elif change == "untracked":
        write(wt / "pkg" / "new.py", "new\n")
    elif change == "deleted":
        (wt / "c.txt").unlink()
    else:
        write(wt / "b.py", "VALUE = 3\n")
        git(wt, "add", "b.py")

    with pytest.raises(SessionError, match="uncommitted change") as info:
        close_session(*opened, session, delete_branch=False, force=False)
    assert "--force" in str(info.value)
    assert wt.is_dir()
    assert session.worktree in worktrees(repo)

    close_session(*opened, session, delete_branch=False, force=True)
    assert not wt.exists()
    assert session.worktree not in worktrees(repo)
    assert "redline/s" in branches(repo)


def test_ignored_files_do_not_block_close(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, "s", None)
    write(Path(session.worktree) / "debug.log", "noise\n")  # *.log is in .gitignore
    close_session(*opened, session, delete_branch=False, force=False)
    assert session.worktree not in worktrees(repo)


def test_close_when_the_worktree_was_removed_by_hand(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session: Session = open_session(*opened, "s", None)
    git(repo, "worktree", "remove", "--force", session.worktree)
    close_session(*opened, session, delete_branch=False, force=False)
    assert session.worktree not in worktrees(repo)
    assert all_sessions(opened[1]) == []


# --- the main line a session came from --------------------------------------------------


def test_a_session_records_the_branch_it_was_opened_from(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    git(repo, "branch", "release")
    assert open_session(*opened, "from-head", None).origin == "refs/heads/main"
    assert open_session(*opened, "from-release", "release").origin == "refs/heads/release"
    assert open_session(*opened, "from-commit", rev(repo, "HEAD")).origin is None
    assert open_session(*opened, "from-session", "redline/from-head").origin is None
    git(repo, "checkout", "-q", "--detach")
    assert open_session(*opened, "detached", None).origin is None
    # the record keeps it, as the CLI reads it without pygit2
    record = json.loads((opened[1].sessions / "from-release.json").read_text())
    assert record["origin"] == "refs/heads/release"


def test_a_resumed_session_keeps_its_origin(
    repo: Path, opened: tuple[pygit2.Repository, Layout]
) -> None:
    session = open_session(*opened, "s", None)
    close_session(*opened, session, delete_branch=False, force=False)
    assert open_session(*opened, "s", None).origin == "refs/heads/main"
