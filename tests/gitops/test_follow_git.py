"""gitops.follow: edits followed through real commits made with git, read with pygit2.

Whether a version of a file holds an edit is checked against ``git merge-file``
itself (what taking the edit back, or making it again, would change); the
statistics' survival follows inserted lines forward through later commits.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pygit2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmode_fixtures import git, make_repo, rev
from redline.engine.follow import Hunk, Span
from redline.gitops.follow import Edit, Follower, Found, Survival, descendants_graph

TEN = "".join(f"line {i}\n" for i in range(1, 11))


def commit_file(repo: Path, path: str, text: str, message: str) -> str:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return rev(repo, "HEAD")


def follower(repo: Path, *tips: str, window: int = 10, wanted: str | None = None) -> Survival:
    handle = pygit2.Repository(str(repo))
    tip_ids = [pygit2.Oid(hex=rev(repo, t)) for t in tips or ("HEAD",)]
    start = pygit2.Oid(hex=rev(repo, wanted)) if wanted else tip_ids[0]
    children, seen = descendants_graph(handle, tip_ids, [start])
    assert start in seen
    return Survival(handle, children, window)


def inserted(f: Survival, commit: str, path: str) -> list[int]:
    obj = f.repo[pygit2.Oid(hex=commit)]
    assert isinstance(obj, pygit2.Commit)
    return [line for group in f.inserted(obj, path).lines for line in group]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", {"f.txt": TEN})


def test_inserted_lines_of_a_commit(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 3\n", "THREE\nthree b\n"), "edit")
    f = follower(repo)
    assert inserted(f, edit, "f.txt") == [2, 3]  # lines 3 and 4, counted from 0
    obj = f.repo[pygit2.Oid(hex=edit)]
    assert isinstance(obj, pygit2.Commit)
    assert f.inserted(obj, "f.txt").hunks == [Hunk(2, 1, 2, 2)]
    assert inserted(f, edit, "missing.txt") == []


def test_lines_move_with_later_changes_and_count_when_rewritten(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\nfive b\n"), "edit")
    text = (repo / "f.txt").read_text()
    commit_file(repo, "f.txt", "top\n" + text, "insert above: the lines move to 6, 7")
    commit_file(repo, "other.txt", "x\n", "another file")
    text = (repo / "f.txt").read_text()
    commit_file(repo, "f.txt", text.replace("five b\n", "five B\n"), "rewrite the second")
    f = follower(repo, wanted=edit)
    assert inserted(f, edit, "f.txt") == [4, 5]
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [4, 5]) == {5}
    f3 = follower(repo, wanted=edit, window=3)
    assert f3.changed(pygit2.Oid(hex=edit), "f.txt", [4, 5]) == {5}
    f2 = follower(repo, wanted=edit, window=2)  # the rewrite is the third commit after
    assert f2.changed(pygit2.Oid(hex=edit), "f.txt", [4, 5]) == set()


def test_a_rename_is_followed_and_a_deletion_removes_everything(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "mv", "f.txt", "g.txt")
    git(repo, "commit", "-q", "-m", "rename")
    text = (repo / "g.txt").read_text()
    commit_file(repo, "g.txt", text.replace("line 1\n", "LINE 1\n"), "elsewhere in it")
    f = follower(repo, wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [4]) == set()
    commit_file(repo, "g.txt", text.replace("FIVE\n", "five\n"), "rewrite after the rename")
    f = follower(repo, wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [4]) == {4}

    gone = commit_file(repo, "h.txt", "one\ntwo\n", "add h")
    git(repo, "rm", "-q", "h.txt")
    git(repo, "commit", "-q", "-m", "delete h")
    f = follower(repo, wanted=gone)
    assert f.changed(pygit2.Oid(hex=gone), "h.txt", [0, 1]) == {0, 1}


def test_every_branch_that_took_the_edit_counts(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "switch", "-q", "-c", "side")
    commit_file(repo, "f.txt", TEN.replace("line 5\n", "five (side)\n"), "side rewrites it")
    git(repo, "switch", "-q", "main")
    commit_file(repo, "other.txt", "x\n", "main goes on")
    main_only = follower(repo, "main", wanted=edit)
    assert main_only.changed(pygit2.Oid(hex=edit), "f.txt", [4]) == set()
    both = follower(repo, "main", "side", wanted=edit)
    assert both.changed(pygit2.Oid(hex=edit), "f.txt", [4]) == {4}


def test_a_merge_is_compared_with_the_parent_the_edit_came_through(repo: Path) -> None:
    git(repo, "switch", "-q", "-c", "session")
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "switch", "-q", "main")
    commit_file(repo, "f.txt", TEN.replace("line 9\n", "NINE\n"), "main changes another line")
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "session")
    f = follower(repo, "main", wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [4]) == set()  # the merge kept it
    text = (repo / "f.txt").read_text()
    commit_file(repo, "f.txt", text.replace("FIVE\n", "5\n"), "after the merge")
    f = follower(repo, "main", wanted=edit)
    assert f.changed(pygit2.Oid(hex=edit), "f.txt", [4]) == {4}
    f1 = follower(repo, "main", wanted=edit, window=1)  # the merge is the first after it
    assert f1.changed(pygit2.Oid(hex=edit), "f.txt", [4]) == set()


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


# --- an edit followed into trees: renames, copies, other histories ------------------------------


def commit_of(repo: Path, rev_: str) -> pygit2.Commit:
    obj = pygit2.Repository(str(repo)).revparse_single(rev_).peel(pygit2.Commit)
    assert isinstance(obj, pygit2.Commit)
    return obj


def tree_of(repo: Path, rev_: str) -> pygit2.Tree:
    return commit_of(repo, rev_).tree


def test_an_edit_that_moved_its_file_is_followed_to_the_new_name(repo: Path) -> None:
    git(repo, "mv", "f.txt", "g.txt")
    (repo / "g.txt").write_text(TEN.replace("line 5\n", "FIVE\n"))
    git(repo, "commit", "-qam", "move and edit")
    f = Follower(pygit2.Repository(str(repo)))
    moved = f.edit(commit_of(repo, "HEAD"), "f.txt")
    assert (moved.path, moved.source) == ("g.txt", "f.txt")
    assert f.holds(moved, tree_of(repo, "HEAD")) == Found("g.txt", (Span(4, 5),))
    deleted = f.edit(commit_of(repo, "HEAD"), "f.txt", moved=False)  # the removal itself
    assert (deleted.path, deleted.after) == ("f.txt", None)
    assert f.state(deleted, None) == ("intact", ())


def test_names_follow_renames_and_copies_made_after_the_edit(repo: Path) -> None:
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "mv", "f.txt", "g.txt")
    git(repo, "commit", "-qm", "rename")
    commit_file(repo, "h.txt", (repo / "g.txt").read_text() + "more\n", "copy")
    commit_file(repo, "other.txt", "unrelated\ntext\n", "unrelated")
    handle = pygit2.Repository(str(repo))
    walker = handle.walk(handle.head.target, pygit2.enums.SortMode.TOPOLOGICAL)
    commits = list(walker)[::-1]
    f = Follower(handle)
    followed = f.edit(commit_of(repo, edit), "f.txt")
    assert f.names(followed, commits) == ["f.txt", "g.txt", "h.txt"]
    # a copy made before the edit is not one of its names
    early = commit_file(repo, "early.txt", TEN, "copied before the next edit")
    later = commit_file(repo, "f2.txt", TEN.replace("line 2\n", "TWO\n"), "an edit of f2")
    commits = list(handle.walk(handle.head.target, pygit2.enums.SortMode.TOPOLOGICAL))[::-1]
    assert early != later
    assert "early.txt" not in f.names(f.edit(commit_of(repo, later), "f2.txt"), commits)


def test_a_change_carries_an_edit_its_parent_lacks(repo: Path) -> None:
    """A squash of a session (another history than the edit's): brought where the
    parent has the text from before the edit, not where it has the edit already."""
    git(repo, "switch", "-q", "-c", "session")
    edit = commit_file(repo, "f.txt", TEN.replace("line 5\n", "FIVE\n"), "edit")
    git(repo, "switch", "-q", "main")
    f = Follower(pygit2.Repository(str(repo)))
    followed = f.edit(commit_of(repo, edit), "f.txt")
    assert f.brought(followed, tree_of(repo, "main"), tree_of(repo, "session")) == Found(
        "f.txt", (Span(4, 5),)
    )
    assert f.brought(followed, tree_of(repo, "session"), tree_of(repo, "session")) is None
    assert f.brought(followed, tree_of(repo, "session"), tree_of(repo, "main")) is None  # undone


def test_lines_added_beside_an_edit_already_there_do_not_bring_it(repo: Path) -> None:
    commit_file(repo, "f.txt", TEN.replace("line 5\n", "line 5\nX\n"), "an earlier edit")
    edit = commit_file(repo, "f.txt", (repo / "f.txt").read_text().replace("X\n", "X\nE\n"), "e")
    base = commit_file(repo, "f.txt", (repo / "f.txt").read_text().replace("E\n", "E\nY\n"), "y")
    commit_file(repo, "f.txt", (repo / "f.txt").read_text().replace("Y\n", "Y\nZ\n"), "z")
    f = Follower(pygit2.Repository(str(repo)))
    followed = f.edit(commit_of(repo, edit), "f.txt")
    parent = tree_of(repo, base)  # E with a line beside it since: not intact, but kept
    assert f.state(followed, parent.__getitem__("f.txt").id)[0] == "other"
    assert f.brought(followed, parent, tree_of(repo, "HEAD")) is None


def test_a_file_of_another_history_without_the_edits_context_does_not_hide_it(
    repo: Path,
) -> None:
    """The session wrote X, then the flagged E beside it; main has neither. git
    merge-file would call E 'there' in main (taking it back conflicts with X's
    absence); the change from main to the session still carries E."""
    git(repo, "switch", "-q", "-c", "session")
    commit_file(repo, "f.txt", TEN.replace("line 5\n", "line 5\nX\n"), "X")
    edit = commit_file(repo, "f.txt", (repo / "f.txt").read_text().replace("X\n", "X\nE\n"), "E")
    git(repo, "switch", "-q", "main")
    f = Follower(pygit2.Repository(str(repo)))
    followed = f.edit(commit_of(repo, edit), "f.txt")
    main = tree_of(repo, "main")
    assert f.state(followed, main["f.txt"].id)[0] == "other"
    assert f.brought(followed, main, tree_of(repo, "session")) == Found("f.txt", (Span(6, 7),))


# --- whether a version of a file holds an edit, as git merge-file says ---------------------

LINE = st.sampled_from(["a\n", "b\n", "c\n", "    a\n", "\ta\n", "return True\n", "return False\n"])
TEXT = st.lists(LINE, max_size=8)


@st.composite
def changed(draw: st.DrawFn, text: list[str]) -> list[str]:
    """``text`` with a few lines replaced, inserted or deleted."""
    out = list(text)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(out)))
        kind = draw(st.sampled_from(["insert", "delete", "replace"]))
        if kind == "insert" or at == len(out):
            out.insert(at, draw(LINE))
        elif kind == "delete":
            del out[at]
        else:
            out[at] = draw(LINE)
    return out


def merge_file(tmp: Path, now: str, base: str, goal: str) -> str:
    """``git merge-file -p now base goal``: ``now`` with the change base → goal merged in."""
    for name, text in (("now", now), ("base", base), ("goal", goal)):
        (tmp / name).write_text(text)
    done = subprocess.run(
        ["git", "merge-file", "-p", "now", "base", "goal"],
        cwd=tmp,
        capture_output=True,
        check=False,
    )
    assert done.returncode >= 0, done.stderr
    return done.stdout.decode()


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> tuple[pygit2.Repository, Path]:
    root = tmp_path_factory.mktemp("merge")
    return pygit2.init_repository(str(root / "repo"), bare=True), root


@settings(max_examples=80)  # a git process per example: agreed on 1,500 in a longer run
@given(data=st.data())
def test_a_version_holds_an_edit_exactly_as_git_merge_file_says(
    scratch: tuple[pygit2.Repository, Path], data: st.DataObject
) -> None:
    repo, tmp = scratch
    before = data.draw(TEXT)
    after = data.draw(changed(before))
    now = data.draw(st.one_of(changed(after), changed(before), st.just(after), st.just(before)))
    b0, b1, t = ("".join(lines) for lines in (before, after, now))
    follower = Follower(repo)
    edit = Edit("0" * 40, "f", repo.create_blob(b0.encode()), repo.create_blob(b1.encode()), "f")
    state, spans = follower.state(edit, repo.create_blob(t.encode()))
    undone = merge_file(tmp, t, b1, b0) == t  # taking the edit back changes nothing
    intact = merge_file(tmp, t, b0, b1) == t  # making it again changes nothing
    assert (state == "undone") == undone
    if not undone:
        assert (state == "intact") == intact
        assert spans
