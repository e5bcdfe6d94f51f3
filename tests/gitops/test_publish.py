"""gitops.publish: the answer always matches the branch, whatever fails after the journal.

An exception injected at each point between the journal write and the answer
(and another process moving the notes ref or the branch meanwhile) must leave
the repository in a state the answer describes: ``applied`` means the commit
is on the branch with its note and the worktree holds it; anything else means
the branch is where it was. In every case the journal is empty afterwards,
the worktree equals the tip and ``git fsck --strict`` is clean. Kills (-9) at
the same points are in tests/daemon/test_crash_recovery.py.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pygit2
import pytest

from gitmode_fixtures import assert_fsck_clean, commit_records, git, porcelain, rev
from redline.engine.policy import Policy, Rule, default_rules
from redline.engine.result import Result
from redline.gitops import journal, refs
from redline.gitops.apply import SessionApplier
from redline.gitops.publish import FAULT_POINTS
from redline.gitops.repo import main_repository
from redline.gitops.session import Session, open_session
from redline.hooks.approve import approve
from redline.tools.request import parse_request
from support.requests import edit

BRANCH = "redline/s"
# Before the branch moves, a failure means nothing happened; after it, the request rolls forward
# (a failure while adding the notes moves the branch back instead: nothing happened).
LANDS = {
    "before-journal": False,
    "after-journal": False,
    "after-branch": False,
    "after-notes": True,
    "after-files": True,
    "after-clear": True,
}


class Injected(RuntimeError):
    pass


def once_at(point: str, action: Callable[[], None] | None = None) -> Callable[[str], None]:
    """A fault hook that acts (by default: raises) the first time ``point`` is reached."""
    fired = False

    def fault(reached: str) -> None:
        nonlocal fired
        if reached == point and not fired:
            fired = True
            if action is None:
                raise Injected(f"injected at {point}")
            action()

    return fault


def open_applier(repo: Path, fault: Callable[[str], None] | None = None) -> SessionApplier:
    git_repo, layout = main_repository(repo)
    session = open_session(git_repo, layout, "s", None)
    return SessionApplier(git_repo, layout, session, fault=fault)


def run(applier: SessionApplier, obj: dict[str, Any]) -> Result | Exception:
    request, _ = parse_request(obj)
    try:
        return applier.apply(request)
    except Exception as exc:  # the daemon answers this as an error: nothing was applied
        return exc


def assert_consistent(repo: Path, session: Session, base: str) -> None:
    """Every commit has its note, the worktree is the tip, no journal, git finds no fault."""
    wt = Path(session.worktree)
    for record in commit_records(repo, BRANCH, base):
        assert record.note is not None, f"{record.commit} has no note"
        assert record.trailers == [record.note["edit"]]
    for path in ("a.py", "b.py", "c.txt"):
        assert (wt / path).read_text() == git(repo, "show", f"{BRANCH}:{path}")
    assert porcelain(wt) == ""
    _, layout = main_repository(repo)
    assert journal.read(layout.journal, "s") is None
    assert_fsck_clean(repo)


@pytest.mark.parametrize("point", FAULT_POINTS)
def test_an_exception_at_each_point_leaves_the_answer_equal_to_the_branch(
    repo: Path, point: str
) -> None:
    applier = open_applier(repo, once_at(point))
    base = rev(repo, BRANCH)

    answer = run(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))

    records = commit_records(repo, BRANCH, base)
    if LANDS[point]:
        assert isinstance(answer, Result) and answer.status == "applied", answer
        [record] = records
        assert [c.commit for c in answer.commits] == [record.commit]
        assert (Path(applier.session.worktree) / "b.py").read_text() == "VALUE = 2\n"
    else:
        assert isinstance(answer, Exception), answer
        assert records == [] and rev(repo, BRANCH) == base
        assert (Path(applier.session.worktree) / "b.py").read_text() == "VALUE = 1\n"
        if point == "after-branch":
            assert "not applied" in str(answer) and "nothing was written" in str(answer)
    assert_consistent(repo, applier.session, base)

    # The next request starts from a worktree equal to the tip: no stray "external" commit.
    again = run(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))
    assert isinstance(again, Result) and again.status == "applied", again
    assert [c.source for c in again.commits] == ["agent"]
    assert_consistent(repo, applier.session, base)


def test_notes_moved_by_another_process_mid_request_are_kept_and_so_is_ours(repo: Path) -> None:
    head = rev(repo, "HEAD")

    def someone_adds_a_note() -> None:
        git(repo, "notes", "--ref=redline", "add", "-m", '{"by": "someone else"}', head)

    applier = open_applier(repo, once_at("after-branch", someone_adds_a_note))
    base = rev(repo, BRANCH)

    answer = run(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))

    assert isinstance(answer, Result) and answer.status == "applied", answer
    assert git(repo, "notes", "--ref=redline", "show", head) == '{"by": "someone else"}\n'
    [record] = commit_records(repo, BRANCH, base)
    assert record.note is not None and record.note["edit"] == answer.commits[0].edit
    assert_consistent(repo, applier.session, base)


def test_an_approval_recorded_mid_request_is_not_lost(repo: Path) -> None:
    git_repo, layout = main_repository(repo)
    review_b = Rule("b.py needs a person", ("b.py",), review_all=True)
    applier = SessionApplier(
        git_repo,
        layout,
        open_session(git_repo, layout, "s", None),
        policy_for=lambda tree: Policy(rules=(*default_rules(), review_b)),
    )  # b.py's edits are flagged: an approval of one is recorded
    base = rev(repo, BRANCH)
    first = run(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))
    assert isinstance(first, Result) and first.status == "applied"
    first_commit = first.commits[0].commit
    git_repo = pygit2.Repository(str(repo))
    applier.publisher._fault = once_at("after-branch", lambda: approve(git_repo, [first_commit]))

    second = run(applier, edit("c.txt", "beta", "BETA"))

    assert isinstance(second, Result) and second.status == "applied", second
    records = {r.commit: r for r in commit_records(repo, BRANCH, base)}
    approved = records[first_commit].note
    assert approved is not None and len(approved["approvals"]) == 1
    assert records[second.commits[0].commit].note is not None
    assert_consistent(repo, applier.session, base)


def test_a_notes_lock_held_by_another_process_takes_the_edit_back(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Held for good: the wait for it (tests/gitops/test_refs.py) is not what is proved.
    monkeypatch.setattr(refs, "LOCK_WAIT", 0.05)
    lock = repo / ".git" / "refs" / "notes" / "redline.lock"

    def git_holds_the_notes_lock() -> None:
        lock.parent.mkdir(parents=True, exist_ok=True)
        lock.write_bytes(b"")

    applier = open_applier(repo, once_at("after-branch", git_holds_the_notes_lock))
    base = rev(repo, BRANCH)

    answer = run(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))

    assert isinstance(answer, Exception)
    message = str(answer)
    assert f"unable to create '{lock}': file exists" in message
    assert "the edit was not applied: nothing was written" in message
    assert "retry" not in message.split("(the edit")[0]
    assert lock.exists()  # never removed: it may be git's
    assert rev(repo, BRANCH) == base and commit_records(repo, BRANCH, base) == []
    lock.unlink()
    assert_consistent(repo, applier.session, base)


def test_a_worktree_that_cannot_be_written_is_finished_by_the_next_request(repo: Path) -> None:
    applier = open_applier(repo)
    base = rev(repo, BRANCH)
    wt = Path(applier.session.worktree)
    failures = iter([OSError(13, "Permission denied"), OSError(13, "Permission denied")])

    def worktree_refuses() -> None:
        raise next(failures)

    applier.publisher._fault = lambda point: worktree_refuses() if point == "after-notes" else None

    answer = run(applier, edit("b.py", "VALUE = 1", "VALUE = 2"))

    # It is on the branch, so the answer says applied, and what is left to do.
    assert isinstance(answer, Result) and answer.status == "applied", answer
    assert answer.hint is not None and "committed" in answer.hint and "next request" in answer.hint
    [record] = commit_records(repo, BRANCH, base)
    assert record.note is not None
    assert (wt / "b.py").read_text() == "VALUE = 1\n"  # not yet

    applier.publisher._fault = lambda point: None
    again = run(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))

    assert isinstance(again, Result) and again.status == "applied", again
    assert [c.source for c in again.commits] == ["agent"]  # no revert recorded as "external"
    assert (wt / "b.py").read_text() == "VALUE = 2\n"
    assert_consistent(repo, applier.session, base)


def test_concurrent_notes_and_commits_by_git_lose_no_note_and_revert_nothing(repo: Path) -> None:
    applier = open_applier(repo)
    base = rev(repo, BRANCH)
    wt = Path(applier.session.worktree)
    lines = 40
    (wt / "items.txt").write_text("".join(f"item {i}: todo\n" for i in range(lines)))
    head = rev(repo, "HEAD")
    stop = threading.Event()
    outside: list[str] = []

    def other_writer() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            # Plain git, as a person or another tool would: a note elsewhere, and a commit
            # of another file in the session worktree.
            subprocess.run(
                ["git", "notes", "--ref=redline", "add", "-f", "-m", f'{{"n": {n}}}', head],
                cwd=repo, capture_output=True, check=False,
            )  # fmt: skip
            (wt / "other.txt").write_text(f"outside {n}\n")
            done = subprocess.run(
                ["git", "commit", "-q", "-m", f"outside {n}", "--", "other.txt"],
                cwd=wt, capture_output=True, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                subprocess.run(["git", "add", "other.txt"], cwd=wt, capture_output=True)
            else:
                outside.append(str(n))

    thread = threading.Thread(target=other_writer)
    thread.start()
    applied: dict[int, Result] = {}
    try:
        for i in range(lines):
            for _attempt in range(20):
                answer = run(applier, edit("items.txt", f"item {i}: todo\n", f"item {i}: done\n"))
                if isinstance(answer, Result) and answer.status == "applied":
                    applied[i] = answer
                    break
                # Refused because git moved the branch or held a lock: nothing was applied.
                assert isinstance(answer, Exception) or answer.status != "applied"
    finally:
        stop.set()
        thread.join()

    assert len(applied) == lines, sorted(set(range(lines)) - set(applied))
    final = run(applier, edit("items.txt", "item 0: done\n", "item 0: DONE\n"))
    assert isinstance(final, Result) and final.status == "applied", final
    tip_text = git(repo, "show", f"{BRANCH}:items.txt")
    assert tip_text.startswith("item 0: DONE\n")
    assert all(f"item {i}: done\n" in tip_text for i in range(1, lines))  # nothing reverted
    records = {r.commit: r for r in commit_records(repo, BRANCH, base)}
    for answer in applied.values():
        for commit in answer.commits:
            record = records[commit.commit]  # on the branch, as answered
            assert record.note is not None and record.note["edit"] == commit.edit
    assert git(repo, "notes", "--ref=redline", "show", head).startswith('{"n": ')
    assert outside, "the other writer never committed: the test did not test"
    assert (wt / "items.txt").read_text() == tip_text
    assert_fsck_clean(repo)


def _count_lookups(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many notes each publication looks up (notes.missing), in order."""
    from redline.gitops import notes

    sizes: list[int] = []
    real = notes.missing

    def counted(repo: Any, blobs: Any, at: Any) -> Any:
        sizes.append(len(blobs))
        return real(repo, blobs, at)

    monkeypatch.setattr(notes, "missing", counted)
    return sizes


def test_each_publication_looks_up_only_its_own_notes_while_the_ref_is_ours(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    applier = open_applier(repo)
    sizes = _count_lookups(monkeypatch)

    for n in range(1, 9):
        answer = run(applier, edit("b.py", f"VALUE = {n}", f"VALUE = {n + 1}"))
        assert isinstance(answer, Result) and answer.status == "applied", answer

    # The first finds the notes ref as someone else left it; after that only the
    # request's own note is looked up, however many came before it.
    assert sizes[1:] == [1] * 7


def test_a_recent_note_dropped_by_git_notes_is_added_again(repo: Path) -> None:
    applier = open_applier(repo)
    base = rev(repo, BRANCH)
    for n in range(1, 4):
        answer = run(applier, edit("b.py", f"VALUE = {n}", f"VALUE = {n + 1}"))
        assert isinstance(answer, Result) and answer.status == "applied", answer
    dropped = answer.commits[0].commit
    # `git notes` rewrites the ref without a compare-and-swap: as if it raced ours.
    git(repo, "notes", "--ref=redline", "remove", dropped)

    again = run(applier, edit("a.py", "'Hello, ' + name", "'Hi, ' + name"))

    assert isinstance(again, Result) and again.status == "applied", again
    assert_consistent(repo, applier.session, base)  # every commit has its note again
