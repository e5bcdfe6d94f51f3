"""Evidence travels with the code: a bare remote and two clones, with real git.

Clone A's agent makes a flagged edit; A shares the session branch and its
evidence; clone B fetches, reviews and approves, and pushes through the
installed pre-push hook, which pushes the notes too; A fetches and sees the
approval. Approvals made in both clones before either saw the other's are all
kept (notes merged by union, never overwritten).
"""

from __future__ import annotations

import json
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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

from gitmode_fixtures import git
from redline.engine.confidence import shown_confidence
from support import cli
from support.hooks import installed_interpreter

ALICE = "Alice <alice@example.com>"
BOB = "Bob <bob@example.com>"


@dataclass(frozen=True)
class Team:
    origin: Path  # bare
    a: Path
    b: Path


def clone(origin: Path, path: Path, name: str, email: str) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(path))
    git(path, "config", "user.name", name)
    git(path, "config", "user.email", email)
    return path


def origin_note(origin: Path, commit: str) -> dict[str, Any] | None:
    proc = run_git(origin, "notes", "--ref=redline", "show", commit)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def approvers(note: dict[str, Any] | None) -> list[str]:
    return [a["by"] for a in (note or {}).get("approvals", [])]


def review(repo: Path) -> list[dict[str, Any]]:
    items = json.loads(redline(repo, "review", "--json", "--repo", str(repo), check=True).stdout)
    assert isinstance(items, list)
    return items


@pytest.fixture
def team(tmp_path: Path) -> Team:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = user_repo(tmp_path / "seed")
    git(seed, "push", "-q", str(origin), "main")
    a = clone(origin, tmp_path / "a", "Alice", "alice@example.com")
    b = clone(origin, tmp_path / "b", "Bob", "bob@example.com")
    for repo in (a, b):
        out = install_hooks(repo)
        assert "notes: origin: `git fetch` now brings refs/notes/redline" in out
    return Team(origin, a, b)


def share(f: Flagged) -> None:
    """A hands the agent's session to a teammate: the branch (the guard refuses to push
    an unapproved flagged edit, so past the hook) and its evidence."""
    refusal(run_git(f.repo, "push", "origin", f.branch))
    git(f.repo, "push", "-q", "--no-verify", "origin", f.branch)
    out = redline(f.repo, "notes", "sync", "--repo", str(f.repo), check=True).stdout
    assert "pushed refs/notes/redline to origin" in out


def test_a_teammate_reviews_approves_and_the_approval_comes_back(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    assert origin_note(team.origin, f.commit) is not None

    # B: one fetch brings the branch and its evidence
    git(team.b, "fetch", "-q")
    [item] = review(team.b)
    assert (item["edit"], item["commit"], item["path"]) == (f.edit, f.commit, MIGRATION)
    assert (item["match_type"], item["confidence"]) == (f.match_type, f.confidence)
    shown = git(team.b, "log", "-1", "--notes=redline", "--format=%N", f"origin/{f.branch}")
    assert json.loads(shown)["edit"] == f.edit
    git(team.b, "branch", "-q", f.branch, f"origin/{f.branch}")
    log = redline(team.b, "log", "s", "--repo", str(team.b), check=True).stdout
    assert f"edit {f.edit}" in log
    assert f"{f.match_type} {shown_confidence(f.confidence)}" in log

    # B: merging it and pushing is refused until approved, then goes with the notes
    git(team.b, "merge", "-q", "--ff-only", f"origin/{f.branch}")
    message = refusal(run_git(team.b, "push", "origin", "main"))
    assert f"`redline approve {f.edit}` and push again.\n" in message
    out = redline(team.b, "approve", f.edit, "--repo", str(team.b), check=True).stdout
    assert out.strip() == f"approved edit {f.edit} (1 note(s)) as {BOB}"
    push = run_git(team.b, "push", "origin", "main")
    assert push.returncode == 0, push.stderr
    assert "redline: pushed refs/notes/redline to origin" in push.stderr
    assert approvers(origin_note(team.origin, f.commit)) == [BOB]
    assert git(team.origin, "rev-parse", "main").strip() == head(team.b)

    # A: one fetch brings the approval; nothing waits, the guard passes
    assert [i["edit"] for i in review(team.a)] == [f.edit]
    git(team.a, "fetch", "-q")
    assert review(team.a) == []
    shown = git(team.a, "log", "-1", "--notes=redline", "--format=%N", f.commit)
    assert approvers(json.loads(shown)) == [BOB]
    redline(team.a, "guard", "--range", f"{f.base}..origin/main", check=True)
    git(team.a, "merge", "-q", "--ff-only", "origin/main")
    (team.a / "NOTES.md").write_text("after the review\n")
    git(team.a, "add", "NOTES.md")
    git(team.a, "commit", "-q", "-m", "notes")
    push = run_git(team.a, "push", "origin", "main")
    assert push.returncode == 0, push.stderr


def test_approvals_made_in_both_clones_at_once_both_survive(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    git(team.b, "fetch", "-q")
    # each approves before seeing the other's approval
    redline(team.a, "approve", f.edit, "--repo", str(team.a), check=True)
    redline(team.b, "approve", f.edit, "--repo", str(team.b), check=True)

    redline(team.a, "notes", "sync", "--repo", str(team.a), check=True)
    # B's notes push is rejected (A's came first): fetched, merged, pushed again
    git(team.b, "merge", "-q", "--ff-only", f"origin/{f.branch}")
    push = run_git(team.b, "push", "origin", "main")
    assert push.returncode == 0, push.stderr
    # (merged as the hook's fetch landed, by the reference-transaction hook)
    assert "pushed refs/notes/redline to origin" in push.stderr

    assert sorted(approvers(origin_note(team.origin, f.commit))) == [ALICE, BOB]
    git(team.a, "fetch", "-q")
    redline(team.a, "review", "--repo", str(team.a), check=True)
    for repo in (team.a, team.b):
        note = json.loads(git(repo, "notes", "--ref=redline", "show", f.commit))
        assert sorted(approvers(note)) == [ALICE, BOB]
    notes_tip = git(team.origin, "rev-parse", "refs/notes/redline").strip()
    assert len(git(team.origin, "rev-list", "--parents", "-1", notes_tip).split()) == 3


def test_syncs_racing_from_two_clones_lose_nothing(team: Team) -> None:
    f = flagged_edit(team.a)
    share(f)
    git(team.b, "fetch", "-q")
    redline(team.a, "approve", f.edit, "--repo", str(team.a), check=True)
    redline(team.b, "approve", f.edit, "--repo", str(team.b), check=True)
    results: dict[Path, int] = {}

    def sync(repo: Path) -> None:
        proc = redline(repo, "notes", "sync", "--repo", str(repo))
        results[repo] = proc.returncode
        assert proc.returncode == 0, proc.stderr

    threads = [threading.Thread(target=sync, args=(repo,)) for repo in (team.a, team.b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {team.a: 0, team.b: 0}
    assert sorted(approvers(origin_note(team.origin, f.commit))) == [ALICE, BOB]


def test_a_fresh_clone_and_one_fetch_show_the_evidence(team: Team, tmp_path: Path) -> None:
    f = flagged_edit(team.a)
    share(f)
    fresh = clone(team.origin, tmp_path / "fresh", "Carol", "carol@example.com")
    assert "refs/notes" not in git(fresh, "config", "--get-all", "remote.origin.fetch")
    out = redline(fresh, "notes", "setup", "--repo", str(fresh), check=True).stdout
    assert out.splitlines()[0] == (
        "origin: `git fetch` now brings refs/notes/redline (into refs/notes/redline-remote/origin)"
    )
    git(fresh, "fetch", "-q")
    git(fresh, "pack-refs", "--all")  # the fetched copy is found packed as well as loose
    assert not (fresh / ".git" / "refs" / "notes" / "redline-remote" / "origin").exists()
    [item] = review(fresh)
    assert item["edit"] == f.edit
    shown = git(fresh, "log", "-1", "--notes=redline", "--format=%N", f"origin/{f.branch}")
    assert json.loads(shown)["edit"] == f.edit


def test_the_refspec_adds_to_fetch_and_changes_nothing_a_plain_push_pushes(
    team: Team, tmp_path: Path
) -> None:
    fetch = git(team.a, "config", "--get-all", "remote.origin.fetch").split()
    assert fetch == [
        "+refs/heads/*:refs/remotes/origin/*",
        "+refs/notes/redline:refs/notes/redline-remote/origin",
    ]
    assert run_git(team.a, "config", "--get-all", "remote.origin.push").returncode == 1
    # installing again adds nothing
    assert "fetches refs/notes/redline already" in install_hooks(team.a)
    assert git(team.a, "config", "--get-all", "remote.origin.fetch").split() == fetch

    f = flagged_edit(team.a)
    redline(team.a, "approve", f.edit, "--repo", str(team.a), check=True)
    git(team.a, "merge", "-q", "--ff-only", f.branch)
    # past the hook, a plain push pushes the branch alone, as before
    git(team.a, "push", "-q", "--no-verify", "origin", "main")
    assert run_git(team.origin, "rev-parse", "-q", "--verify", "refs/notes/redline").returncode
    # a dry run through the hook pushes nothing either
    dry = run_git(team.a, "push", "--dry-run", "origin", "main:other")
    assert dry.returncode == 0, dry.stderr
    assert run_git(team.origin, "rev-parse", "-q", "--verify", "refs/notes/redline").returncode
    # the hook pushes the notes with the next push
    (team.a / "NOTES.md").write_text("more\n")
    git(team.a, "add", "NOTES.md")
    git(team.a, "commit", "-q", "-m", "more")
    push = run_git(team.a, "push", "origin", "main")
    assert push.returncode == 0, push.stderr
    assert approvers(origin_note(team.origin, f.commit)) == [ALICE]
    assert git(team.origin, "for-each-ref", "--format=%(refname)").split() == [
        "refs/heads/main",
        "refs/notes/redline",
    ]


def test_a_remote_refusing_the_notes_refuses_the_push(team: Team) -> None:
    f = flagged_edit(team.a)
    redline(team.a, "approve", f.edit, "--repo", str(team.a), check=True)
    git(team.a, "merge", "-q", "--ff-only", f.branch)
    hook = team.origin / "hooks" / "update"
    hook.write_text(
        '#!/bin/sh\ncase "$1" in refs/notes/*) echo "no notes here" >&2; exit 1;; esac\n'
    )
    hook.chmod(0o755)
    push = run_git(team.a, "push", "origin", "main")
    assert push.returncode != 0
    assert "redline guard: refused — the evidence notes could not go with the push" in push.stderr
    assert "git config redline.pushNotes false" in push.stderr
    assert git(team.origin, "rev-parse", "main").strip() == f.base

    git(team.a, "config", "redline.pushNotes", "false")
    push = run_git(team.a, "push", "origin", "main")
    assert push.returncode == 0, push.stderr
    assert git(team.origin, "rev-parse", "main").strip() == head(team.a)


@pytest.mark.e2e  # git's reference-transaction hook merges the fetched notes
def test_a_fetch_lands_the_notes_where_git_log_shows_them(team: Team, tmp_path: Path) -> None:
    """With the reference-transaction hook, no redline command is needed after a fetch."""
    f = flagged_edit(team.a)
    share(f)
    fresh = clone(team.origin, tmp_path / "fresh", "Carol", "carol@example.com")
    out = redline(fresh, "notes", "setup", "--repo", str(fresh), check=True).stdout
    assert "reference-transaction: installed" in out
    git(fresh, "fetch", "-q")
    shown = git(fresh, "log", "-1", "--notes=redline", "--format=%N", f"origin/{f.branch}")
    assert json.loads(shown)["edit"] == f.edit
    # an ordinary ref update (a commit) starts no redline and changes no notes
    notes_before = git(fresh, "rev-parse", "refs/notes/redline")
    (fresh / "other.txt").write_text("x\n")
    git(fresh, "add", "other.txt")
    git(fresh, "commit", "-q", "-m", "other")
    assert git(fresh, "rev-parse", "refs/notes/redline") == notes_before
    # by hand: nothing new to merge
    again = redline(fresh, "notes", "import", "--repo", str(fresh), check=True).stdout
    assert again.startswith("nothing new")


def test_a_syncs_own_fetch_starts_no_second_redline_and_a_plain_fetch_does(
    team: Team, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`redline notes sync` (and the pre-push hook, which runs it) merges what its fetch
    brought itself: the reference-transaction hook that fetch fires starts no redline to
    merge it first. A plain `git fetch` still has the hook merge the notes."""
    started = tmp_path / "started.txt"
    logged = tmp_path / "interpreter" / "python"  # what the hooks run: logs, then runs it
    logged.parent.mkdir()
    logged.write_text(
        f'#!/bin/sh\necho "$*" >> {shlex.quote(str(started))}\n'
        f'exec {shlex.quote(installed_interpreter())} "$@"\n'
    )
    logged.chmod(0o755)
    monkeypatch.setattr(cli, "interpreter", str(logged))
    for repo in (team.a, team.b):
        install_hooks(repo)

    def imports() -> int:
        said = started.read_text().splitlines() if started.exists() else []
        return sum("-m redline notes import" in line for line in said)

    first = flagged_edit(team.a)
    share(first)  # A's sync pushes the notes
    out = redline(team.b, "notes", "sync", "--no-push", "--repo", str(team.b), check=True)
    assert "merged" in out.stdout, out.stdout
    assert origin_note(team.origin, first.commit) is not None
    assert json.loads(git(team.b, "notes", "--ref=redline", "show", first.commit))
    run_git(team.b, "push", "-q", "origin", "main")  # the pre-push hook syncs as well
    assert "-m redline guard --stage pre-push" in started.read_text()
    assert imports() == 0, started.read_text()

    second = flagged_edit(team.a, name="s2")
    share(second)
    git(team.b, "fetch", "-q")  # git alone: the hook merges what it brought
    assert imports() == 1
    assert json.loads(git(team.b, "notes", "--ref=redline", "show", second.commit))


def test_sync_without_push_says_the_remote_still_lacks_the_local_notes(team: Team) -> None:
    f = flagged_edit(team.a)
    out = redline(team.a, "notes", "sync", "--no-push", "--repo", str(team.a), check=True).stdout
    assert origin_note(team.origin, f.commit) is None
    assert "the same here and on origin" not in out
    assert "not pushed (--no-push)" in out and "`redline notes sync origin`" in out
    # once pushed, the two are the same
    redline(team.a, "notes", "sync", "--repo", str(team.a), check=True)
    out = redline(team.a, "notes", "sync", "--no-push", "--repo", str(team.a), check=True).stdout
    assert out.strip() == "refs/notes/redline is the same here and on origin"
