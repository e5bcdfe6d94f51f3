"""Following inserted lines forward: real commits made with git, read with pygit2."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from gitmode_fixtures import git, make_repo, rev
from redline.gitops.survival import Follower, carry, descendants_graph

TEN = "".join(f"line {i}\n" for i in range(1, 11))


def commit_file(repo: Path, path: str, text: str, message: str) -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return rev(repo, "HEAD")


def follower(repo: Path, *tips: str, window: int = 10, wanted: str | None = None) -> Follower:
    handle = pygit2.Repository(str(repo))
    tip_ids = [pygit2.Oid(hex=rev(repo, t)) for t in tips or ("HEAD",)]
    start = pygit2.Oid(hex=rev(repo, wanted)) if wanted else tip_ids[0]
    children, seen = descendants_graph(handle, tip_ids, [start])
    assert start in seen
    return Follower(handle, children, window)


def inserted(f: Follower, commit: str, path: str) -> list[int]:
    obj = f.repo[pygit2.Oid(hex=commit)]
    assert isinstance(obj, pygit2.Commit)
    return [line for group in f.inserted(obj, path).lines for line in group]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"f.txt": TEN})


def test_carry_through_insertions_deletions_and_rewrites() -> None:
    live = {n: n for n in range(1, 11)}
    # @@ -0,0 +1,2 @@ (two lines on top), @@ -4,2 +6,1 @@ (lines 4-5 become one),
    # @@ -8,0 +10,3 @@ (three lines after line 8).
    kept, removed = carry(live, [(0, 0, 1, 2), (4, 2, 6, 1), (8, 0, 10, 3)])
    assert sorted(removed) == [4, 5]
    assert kept == {3: 1, 4: 2, 5: 3, 7: 6, 8: 7, 9: 8, 13: 9, 14: 10}
    kept, removed = carry({3: 30}, [(3, 0, 4, 1)])  # an insertion right after the line
    assert (kept, removed) == ({3: 30}, [])
    kept, removed = carry({3: 30, 4: 40}, [(3, 1, 2, 0)])  # a deletion
    assert (kept, removed) == ({3: 40}, [30])


def test_inserted_lines_of_a_commit(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 3\n", "THREE\nthree b\n"), "edit")
    f = follower(repo)
    assert inserted(f, edit, "f.txt") == [3, 4]
    obj = f.repo[pygit2.Oid(hex=edit)]
    assert isinstance(obj, pygit2.Commit)
    assert f.inserted(obj, "f.txt").hunks == [(3, 1, 3, 2)]
    assert inserted(f, edit, "missing.txt") == []


def test_lines_move_with_later_changes_and_count_when_rewritten(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\nfive b\n"), "edit")
    text = (repo / "f.txt").read_text()
    commit_file(repo, "f.txt", "top\n" + text, "insert above: the lines move to 6, 7")
    commit_file(repo, "other.txt", "x\n", "another file")
    text = (repo / "f.txt").read_text()
    commit_file(repo, "f.txt", text.replace("five b\n", "five B\n"), "rewrite the second")
    f = follower(repo, wanted=edit)
    assert inserted(f, edit, "f.txt") == [5, 6]
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [5, 6]) == {6}
    f3 = follower(repo, wanted=edit, window=3)
    assert f3.changed(pygit2.Oid(hex=edit), "f.txt", [5, 6]) == {6}
    f2 = follower(repo, wanted=edit, window=2)  # the rewrite is the third commit after
    assert f2.changed(pygit2.Oid(hex=edit), "f.txt", [5, 6]) == set()


def test_a_rename_is_followed_and_a_deletion_removes_everything(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "mv", "f.txt", "g.txt")
    git(repo, "commit", "-q", "-m", "rename")
    text = (repo / "g.txt").read_text()
    commit_file(repo, "g.txt", text.replace("line 1\n", "LINE 1\n"), "elsewhere in it")
    f = follower(repo, wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [5]) == set()
    commit_file(repo, "g.txt", text.replace("FIVE\n", "five\n"), "rewrite after the rename")
    f = follower(repo, wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [5]) == {5}

    gone = commit_file(repo, "h.txt", "one\ntwo\n", "add h")
    git(repo, "rm", "-q", "h.txt")
    git(repo, "commit", "-q", "-m", "delete h")
    f = follower(repo, wanted=gone)
    assert f.changed(pygit2.Oid(hex=gone), "h.txt", [1, 2]) == {1, 2}


def test_every_branch_that_took_the_edit_counts(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "switch", "-q", "-c", "side")
    commit_file(repo, "f.txt", TEN.replace("line 5\n", "five (side)\n"), "side rewrites it")
    git(repo, "switch", "-q", "main")
    commit_file(repo, "other.txt", "x\n", "main goes on")
    main_only = follower(repo, "main", wanted=edit)
    assert main_only.changed(pygit2.Oid(hex=edit), "f.txt", [5]) == set()
    both = follower(repo, "main", "side", wanted=edit)
    assert both.changed(pygit2.Oid(hex=edit), "f.txt", [5]) == {5}


def test_a_merge_is_compared_with_the_parent_the_edit_came_through(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "session")
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "switch", "-q", "main")
    commit_file(repo, "f.txt", TEN.replace("line 9\n", "NINE\n"), "main changes another line")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "session")
    f = follower(repo, "main", wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [5]) == set()  # the merge kept it
    text = (repo / "f.txt").read_text()
    commit_file(repo, "f.txt", text.replace("FIVE\n", "5\n"), "after the merge")
    f = follower(repo, "main", wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [5]) == {5}
    f1 = follower(repo, "main", wanted=edit, window=1)  # the merge is the first after it
    assert f1.changed(pygit2.Oid(hex=edit), "f.txt", [5]) == set()


def test_the_graph_walk_stops_once_every_wanted_commit_is_seen(repo: Path) -> None:
    first = commit_file(repo, "f.txt", "a\n", "first")
    second = commit_file(repo, "f.txt", "b\n", "second")
    third = commit_file(repo, "f.txt", "c\n", "third")
    handle = pygit2.Repository(str(repo))
    children, seen = descendants_graph(
        handle, [pygit2.Oid(hex=third)], [pygit2.Oid(hex=second), pygit2.Oid(hex="1" * 40)]
    )
    assert seen == {pygit2.Oid(hex=second)}  # the unknown commit is not reachable
    assert children[pygit2.Oid(hex=second)] == [pygit2.Oid(hex=third)]
    assert children[pygit2.Oid(hex=first)] == [pygit2.Oid(hex=second)]
    children, seen = descendants_graph(handle, [pygit2.Oid(hex=third)], [pygit2.Oid(hex=third)])
    assert seen == {pygit2.Oid(hex=third)}
    assert pygit2.Oid(hex=first) not in children  # stopped before reading further
