"""gitops.committed: the settings files as the main line has them, read with the git binary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitmode_fixtures import git, make_repo, rev
from redline.gitops.committed import committed_files, mainline_rev, resolve
from redline.gitops.errors import GitModeError


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {".redline.toml": "# on main\n", "a.txt": "a\n"})


def record(repo: Path, name: str, **fields: object) -> None:
    folder = repo / ".git" / "redline" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.json").write_text(json.dumps(fields))


def test_the_files_as_a_revision_holds_them_not_as_the_worktree_has_them(repo: Path) -> None:
    (repo / ".redline.toml").write_text("# edited, not committed\n")
    (repo / "pyproject.toml").write_text("[tool.redline]\n")
    found = committed_files(repo / ".git", "main", [".redline.toml", "pyproject.toml"])
    assert found == {".redline.toml": b"# on main\n", "pyproject.toml": None}


def test_binary_content_and_several_files_are_read_whole(repo: Path) -> None:
    data = bytes(range(256)) * 3 + b"\n\n"
    (repo / "b.bin").write_bytes(data)
    git(repo, "add", "b.bin")
    git(repo, "commit", "-q", "-m", "binary")
    found = committed_files(repo / ".git", "HEAD", ["b.bin", "missing", "a.txt"])
    assert found == {"b.bin": data, "missing": None, "a.txt": b"a\n"}


def test_a_revision_that_names_no_commit_holds_no_files(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    assert committed_files(empty / ".git", "HEAD", [".redline.toml"]) == {".redline.toml": None}


def test_the_main_line_of_a_session(repo: Path) -> None:
    common = repo / ".git"
    head = rev(repo, "HEAD")
    record(repo, "s", origin="refs/heads/release", base=head)
    assert mainline_rev(common, "s") == ("refs/heads/release", "on release")
    record(repo, "t", origin=None, base=head)
    assert mainline_rev(common, "t") == (head, f"at commit {head[:12]}")
    assert mainline_rev(common, "unknown") == ("HEAD", "in HEAD")
    assert mainline_rev(common, None) == ("HEAD", "in HEAD")


def test_without_git_it_says_what_to_do(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "nowhere"))
    with pytest.raises(GitModeError) as info:
        committed_files(repo / ".git", "HEAD", [".redline.toml"])
    assert "is git installed and on the PATH?" in str(info.value)


def test_a_commit_read_once_is_read_again_without_git(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    common = repo / ".git"
    first = committed_files(common, "HEAD", [".redline.toml", "pyproject.toml"])
    monkeypatch.setenv("PATH", str(repo / "nowhere"))  # no git from here on
    assert committed_files(common, "HEAD", [".redline.toml", "pyproject.toml"]) == first
    assert committed_files(common, "refs/heads/main", [".redline.toml"]) == {
        ".redline.toml": b"# on main\n"
    }


def test_a_branch_that_moved_is_read_anew(repo: Path) -> None:
    common = repo / ".git"
    assert committed_files(common, "HEAD", [".redline.toml"]) == {".redline.toml": b"# on main\n"}
    (repo / ".redline.toml").write_text("# moved on\n")
    git(repo, "commit", "-qam", "moved")
    git(repo, "pack-refs", "--all")  # refs packed: still resolved without git
    assert resolve(common, "refs/heads/main") == rev(repo, "main")
    assert committed_files(common, "HEAD", [".redline.toml"]) == {".redline.toml": b"# moved on\n"}
