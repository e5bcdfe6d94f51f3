"""Objects serialised by redline must be the ones libgit2 and git would write."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import FILES, assert_fsck_clean, git, make_repo
from redline.gitops import refs
from redline.gitops.objects import write_blob, write_commit
from redline.gitops.packs import StagedObjects
from redline.gitops.writer import PLAIN, Writer


@pytest.fixture(params=["libgit2", "staged"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[pygit2.Repository, Writer]:
    repo = pygit2.Repository(str(make_repo(tmp_path / "repo", FILES)))
    if request.param == "staged":
        return repo, Writer(staged=StagedObjects.attach(repo))
    return repo, PLAIN


@pytest.fixture
def handle(store: tuple[pygit2.Repository, Writer]) -> pygit2.Repository:
    return store[0]


@pytest.fixture
def writer(store: tuple[pygit2.Repository, Writer]) -> Writer:
    return store[1]


def test_blobs_have_git_ids(handle: pygit2.Repository, writer: Writer) -> None:
    assert write_blob(handle, b"x\n", writer) == pygit2.hash(b"x\n")
    assert handle[pygit2.hash(b"x\n")].data == b"x\n"


def test_commits_encode_as_libgit2_does(handle: pygit2.Repository, writer: Writer) -> None:
    head = handle.head.peel(pygit2.Commit)
    for offset in (0, 330, -480):
        author = pygit2.Signature("Zoë Agent", "zoe@example.com", 1_700_000_123, offset)
        committer = pygit2.Signature("redline", "redline@localhost", 1_700_000_456, -offset)
        message = "redline: edit a.py\n\nBody ✓\n\nRedline-Edit: abc\n"
        ours = write_commit(handle, head.tree.id, [head.id], author, committer, message, writer)
        theirs = handle.create_commit(None, author, committer, message, head.tree.id, [head.id])
        assert ours == theirs


def test_git_reads_what_was_written(handle: pygit2.Repository, writer: Writer) -> None:
    head = handle.head.peel(pygit2.Commit)
    blob = write_blob(handle, b"new file\n", writer)
    builder = handle.TreeBuilder(head.tree)
    builder.insert("new.txt", blob, pygit2.enums.FileMode.BLOB)
    tree = builder.write()
    sig = pygit2.Signature("T", "t@example.com", 1_700_000_000, 60)
    commit = write_commit(handle, tree, [head.id], sig, sig, "add new.txt\n", writer)
    refs.update(handle, "refs/heads/written", None, commit, "test", writer=writer)  # flushes

    root = Path(handle.workdir)
    assert git(root, "show", "written:new.txt") == "new file\n"
    assert git(root, "log", "-1", "--format=%an %ae %ad", "--date=raw", "written") == (
        "T t@example.com 1700000000 +0100\n"
    )
    assert_fsck_clean(root)
