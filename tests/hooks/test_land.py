"""``redline land``: a session onto the user's branch, after the guard, by git's own safety.

Sessions are made in-process (guard_fixtures.agent); ``redline land`` runs as a
subprocess, as a person runs it; what it did is read back with ``git``
(``git notes --ref=redline show``, ``git log``, ``git status``), and the user's
worktree is compared byte for byte.
"""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path

import pytest
from guard_fixtures import (
    APP,
    APP_TEXT,
    EXACT_NEW,
    EXACT_OLD,
    FUZZY_NEW,
    FUZZY_OLD,
    INSERTED,
    MIGRATION,
    MIGRATION_RULE,
    MIGRATION_TEXT,
    REVIEWER,
    Flagged,
    agent,
    flagged_edit,
    head,
    install_hooks,
    redline,
    refusal,
    run_git,
    user_repo,
)

from gitmode_fixtures import digest_tree, git, note_of, porcelain, trailer, write
from redline.gitops import journal, landing
from redline.gitops import session as sessions
from redline.gitops.apply import SessionApplier
from redline.gitops.errors import SessionError
from redline.gitops.repo import main_repository
from redline.hooks.land import land as land_in_process
from redline.settings.policy import policy_from_tree

APP_EXACT_OLD = "    server = make_server(config)\n"
APP_EXACT_NEW = "    server = make_server(config, workers=4)\n"


@pytest.fixture
def flagged(tmp_path: Path) -> Flagged:
    """A guarded repository whose session ``s`` has one flagged edit of the migration."""
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    return flagged_edit(repo)


def land(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return redline(repo, "land", "--repo", str(repo), *args)


def land_json(repo: Path, *args: str) -> dict[str, object]:
    proc = land(repo, *args, "--json")
    outcome = json.loads(proc.stdout)
    assert isinstance(outcome, dict)
    assert proc.returncode == (1 if outcome["status"] == "refused" else 0), proc.stderr
    return outcome


def approve(repo: Path, *names: str) -> None:
    redline(repo, "approve", "--repo", str(repo), *names, check=True)


def snapshot(repo: Path) -> tuple[dict[str, str], bytes, str, str]:
    """The user's worktree byte for byte, its index file, its status and HEAD."""
    index = (repo / ".git" / "index").read_bytes()
    return digest_tree(repo, skip=(".git",)), index, porcelain(repo), head(repo)


def make_dirty(repo: Path) -> None:
    """Uncommitted work of every kind: unstaged, staged, untracked."""
    write(repo / APP, APP_TEXT + "# my unfinished work\n")
    write(repo / "NOTES.md", "staged notes\n")
    git(repo, "add", "NOTES.md")
    write(repo / "scratch.txt", "untracked\n")


# --- the guard ------------------------------------------------------------------------------


def test_an_unapproved_flagged_edit_is_refused_then_lands_once_approved(flagged: Flagged) -> None:
    before = snapshot(flagged.repo)
    proc = land(flagged.repo, "s")
    assert proc.returncode == 1
    message = proc.stderr
    assert message.startswith("redline land: session s was not landed.\n")
    assert "redline guard: refused — 1 flagged edit not yet approved by a person:" in message
    assert f"edit {flagged.edit} (commit {flagged.commit[:12]}): {MIGRATION} lines 4-5" in message
    assert f"rule {MIGRATION_RULE}: match_type fuzzy is not one of: exact" in message
    assert f"`redline approve {flagged.edit}` and land again" in message
    assert snapshot(flagged.repo) == before

    refused = land_json(flagged.repo, "s")
    assert refused["status"] == "refused"
    [item] = refused["blocked"]  # type: ignore[misc]
    assert (item["edit"], item["commit"], item["path"]) == (
        flagged.edit,
        flagged.commit,
        MIGRATION,
    )

    approve(flagged.repo, flagged.edit)
    outcome = land_json(flagged.repo, "s")
    # main had not moved since the session started: a fast-forward, each commit kept
    assert outcome["mode"] == "fast-forward"
    assert outcome["commits"] == [flagged.commit]
    assert outcome["edits"] == [flagged.edit]
    assert outcome["worktree"] == str(flagged.repo)
    assert head(flagged.repo) == flagged.commit
    assert porcelain(flagged.repo) == ""
    shown = (flagged.repo / MIGRATION).read_text()
    assert all(line in shown for line in INSERTED)
    note = note_of(flagged.repo, "HEAD")
    assert note["edit"] == flagged.edit
    assert [a["by"] for a in note["approvals"]] == [REVIEWER]
    again = land(flagged.repo, "s")
    assert again.returncode == 0
    assert again.stdout.startswith("nothing to land: main has every commit of redline/s")


def test_an_edit_commit_whose_note_is_gone_is_refused(flagged: Flagged) -> None:
    git(flagged.repo, "notes", "--ref=redline", "remove", flagged.commit)
    proc = land(flagged.repo, "s")
    assert proc.returncode == 1
    assert f"evidence missing for edit {flagged.edit} (commit {flagged.commit[:12]})" in proc.stderr
    assert head(flagged.repo) == flagged.base


# --- merge ----------------------------------------------------------------------------------


def test_merge_keeps_each_edit_commit_and_its_note(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    first = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)["commits"][0]
    second = session.edit(APP, APP_EXACT_OLD, APP_EXACT_NEW)["commits"][0]
    write(repo / "CHANGES.md", "main moved on\n")
    git(repo, "add", "CHANGES.md")
    git(repo, "commit", "-q", "-m", "main moves on")
    moved = head(repo)

    outcome = land_json(repo, "s", "--merge")
    assert outcome["mode"] == "merge"
    assert outcome["previous"] == moved
    parents = git(repo, "log", "-1", "--format=%P").split()
    assert parents == [moved, second["commit"]]
    subject = git(repo, "log", "-1", "--format=%s").strip()
    assert subject == "Merge session s (redline/s) into main"
    assert trailer(repo, "HEAD") == []  # the edit commits carry the trailers, not the merge
    for made in (first, second):
        assert note_of(repo, made["commit"])["edit"] == made["edit"]
        assert trailer(repo, made["commit"]) == [made["edit"]]
        git(repo, "merge-base", "--is-ancestor", made["commit"], "HEAD")
    assert porcelain(repo) == ""
    assert "workers=4" in (repo / APP).read_text()
    assert (repo / "CHANGES.md").read_text() == "main moved on\n"


def test_branches_that_conflict_are_refused_naming_the_files(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    agent(repo).edit(APP, APP_EXACT_OLD, APP_EXACT_NEW)
    write(repo / APP, APP_TEXT.replace("make_server(config)", "make_server(config, debug=True)"))
    git(repo, "commit", "-q", "-am", "mine")
    before = snapshot(repo)
    proc = land(repo, "s")
    assert proc.returncode == 1
    assert f"session s conflicts with main in 1 file(s): {APP}" in proc.stderr
    assert "merge them by hand (`git merge redline/s` on main)" in proc.stderr
    assert snapshot(repo) == before


# --- squash ---------------------------------------------------------------------------------


def test_squash_makes_one_commit_whose_note_carries_every_edit(flagged: Flagged) -> None:
    session = agent(flagged.repo, "t")
    exact = session.edit(APP, APP_EXACT_OLD, APP_EXACT_NEW)["commits"][0]
    approve(flagged.repo, flagged.edit)
    # session t started from main; bring s's flagged edit in too, as one squash each
    outcome = land_json(flagged.repo, "s", "--squash", "-m", "Users get an email index")
    assert outcome["mode"] == "squash"
    squash = str(outcome["commit"])
    assert git(flagged.repo, "log", "-1", "--format=%P", squash).split() == [flagged.base]
    assert git(flagged.repo, "log", "-1", "--format=%s", squash).strip() == (
        "Users get an email index"
    )
    assert trailer(flagged.repo, squash) == [flagged.edit]
    note = note_of(flagged.repo, squash)
    assert note["tool"] == "squash"
    assert note["session"] == "s"
    [carried] = note["squashed"]
    assert carried["edit"] == flagged.edit
    assert carried["commit"] == flagged.commit
    assert carried["policy"]["verdict"] == "flagged"
    assert carried["policy"]["violations"][0]["rule"] == MIGRATION_RULE
    assert [a["by"] for a in carried["approvals"]] == [REVIEWER]
    [op] = carried["operations"]
    assert (op["path"], op["match_type"], op["start_line"]) == (MIGRATION, "fuzzy", 2)
    # the squash's own note records the blobs the squash commit changed
    assert note["files"] == [
        {
            "path": MIGRATION,
            "before": git(flagged.repo, "rev-parse", f"{flagged.base}:{MIGRATION}").strip(),
            "after": git(flagged.repo, "rev-parse", f"{squash}:{MIGRATION}").strip(),
        }
    ]

    second = land_json(flagged.repo, "t", "--squash")
    squash2 = str(second["commit"])
    assert git(flagged.repo, "log", "-1", "--format=%P", squash2).split() == [squash]
    assert trailer(flagged.repo, squash2) == [exact["edit"]]
    assert [e["edit"] for e in note_of(flagged.repo, squash2)["squashed"]] == [exact["edit"]]
    assert porcelain(flagged.repo) == ""
    text = (flagged.repo / APP).read_text()
    assert "workers=4" in text
    # the session's own commits keep their notes too
    assert note_of(flagged.repo, flagged.commit)["edit"] == flagged.edit


def test_a_squash_of_several_edits_lists_each(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    made = [
        session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)["commits"][0],
        session.edit(APP, APP_EXACT_OLD, APP_EXACT_NEW)["commits"][0],
    ]
    outcome = land_json(repo, "s", "--squash")
    edits = [m["edit"] for m in made]
    assert outcome["edits"] == edits
    assert trailer(repo, "HEAD") == edits
    note = note_of(repo, "HEAD")
    assert [(e["edit"], e["commit"]) for e in note["squashed"]] == [
        (m["edit"], m["commit"]) for m in made
    ]
    body = git(repo, "log", "-1", "--format=%B")
    assert body.startswith("redline: session s (2 edit(s))\n\nSquashed by redline from redline/s:")
    # `redline log` still lists the session's edits
    log = json.loads(redline(repo, "log", "s", "--repo", str(repo), "--json", check=True).stdout)
    assert [e["edit"] for e in log] == edits[::-1]


def test_the_guard_sees_an_unapproved_edit_in_a_squash_where_the_session_is_not(
    flagged: Flagged, tmp_path: Path
) -> None:
    """A squash carrying an unapproved flagged edit (made here without land's guard), in
    a clone that has only main and the notes: no session commit to read the edit from."""
    git_repo, _layout = main_repository(flagged.repo)
    plan = landing.plan(git_repo, "s", git_repo.references["refs/heads/redline/s"].target,
                        "refs/heads/main", squash=True)  # fmt: skip
    assert plan is not None
    squash, note = landing.make_commit(git_repo, plan, None)
    assert note is not None
    landing.add_note(git_repo, squash, note)
    landing.move_target(git_repo, plan, squash, flagged.repo, {})

    clone = tmp_path / "clone"
    source = f"file://{flagged.repo}"  # not a local clone: only what main reaches is copied
    git(tmp_path, "clone", "-q", "--single-branch", "--branch", "main", source, "clone")
    git(clone, "fetch", "-q", "origin", "refs/notes/redline:refs/notes/redline")
    git(clone, "config", "user.name", "Repo User")
    git(clone, "config", "user.email", "repo-user@example.com")
    assert run_git(clone, "cat-file", "-e", flagged.commit).returncode != 0
    install_hooks(clone)

    waiting = json.loads(redline(clone, "review", "--json", check=True).stdout)
    assert [(w["edit"], w["commit"], w["path"]) for w in waiting] == [
        (flagged.edit, str(squash), MIGRATION)
    ]
    # the squash commit made again (as a cherry-pick or rebase would): refused
    git(clone, "reset", "-q", "--soft", "HEAD~1")
    message = refusal(run_git(clone, "commit", "-m", "again"))
    assert f"edit {flagged.edit} (commit {str(squash)[:12]}): {MIGRATION}" in message
    assert "match_type fuzzy is not one of: exact" in message
    approving_the_squash = redline(clone, "approve", str(squash))
    assert approving_the_squash.returncode == 1
    assert "approve each by its edit id" in approving_the_squash.stderr

    approve(clone, flagged.edit)
    git(clone, "commit", "-q", "-m", "again")
    carried = note_of(clone, str(squash))["squashed"][0]
    assert [a["by"] for a in carried["approvals"]] == [REVIEWER]
    assert json.loads(redline(clone, "review", "--json", check=True).stdout) == []


# --- the user's worktree ----------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["--merge", "--squash"])
def test_a_dirty_checked_out_target_is_refused_and_left_byte_identical(
    flagged: Flagged, mode: str
) -> None:
    approve(flagged.repo, flagged.edit)
    make_dirty(flagged.repo)
    before = snapshot(flagged.repo)
    notes_before = git(flagged.repo, "rev-parse", "refs/notes/redline")
    proc = land(flagged.repo, "s", mode)
    assert proc.returncode == 1
    assert f"main is checked out in {flagged.repo}, which has uncommitted changes" in proc.stderr
    assert f"(NOTES.md, {APP})" in proc.stderr
    assert "commit or stash them (`git stash`), then land again" in proc.stderr
    assert snapshot(flagged.repo) == before
    assert git(flagged.repo, "rev-parse", "refs/notes/redline") == notes_before


def test_a_file_where_the_landing_adds_one_is_refused(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    result = agent(repo).patch("*** Add File: docs/guide.md\n+# Guide\n")
    assert result["status"] == "applied", result
    write(repo / ".gitignore", "docs/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-q", "-m", "ignore docs")
    write(repo / "docs" / "guide.md", "my own ignored draft\n")
    before = snapshot(repo)
    proc = land(repo, "s")
    assert proc.returncode == 1
    assert "stand where the session adds files (docs/guide.md)" in proc.stderr
    assert snapshot(repo) == before


def test_a_branch_not_checked_out_moves_alone(flagged: Flagged) -> None:
    approve(flagged.repo, flagged.edit)
    git(flagged.repo, "branch", "release", flagged.base)
    make_dirty(flagged.repo)
    before = snapshot(flagged.repo)
    outcome = land_json(flagged.repo, "s", "--into", "release", "--squash")
    assert outcome["worktree"] is None
    assert git(flagged.repo, "rev-parse", "release").strip() == outcome["commit"]
    assert snapshot(flagged.repo) == before
    reflog = git(flagged.repo, "reflog", "-1", "--format=%gs", "release").strip()
    assert reflog == "redline: land s"


def test_landing_on_a_session_branch_or_a_missing_one_is_refused(flagged: Flagged) -> None:
    proc = land(flagged.repo, "s", "--into", "redline/s")
    assert proc.returncode == 1
    assert "redline/s is a session branch; land on a branch of your own" in proc.stderr
    proc = land(flagged.repo, "s", "--into", "nope")
    assert proc.returncode == 1
    assert "there is no branch nope to land on; create it (`git branch nope`)" in proc.stderr
    proc = land(flagged.repo, "nosuch")
    assert proc.returncode == 1
    assert "no session named 'nosuch' has a branch" in proc.stderr


# --- the session ----------------------------------------------------------------------------


def test_close_after_landing_keeps_the_branch(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    session.edit(APP, APP_EXACT_OLD, APP_EXACT_NEW)
    outcome = land(repo, "s", "--close")
    assert outcome.returncode == 0, outcome.stderr
    assert "closed session s (branch redline/s kept)" in outcome.stdout
    assert not session.worktree.exists()
    assert json.loads(redline(repo, "session", "list", "--json", check=True).stdout) == []
    assert head(repo) == head(repo, "redline/s")


def test_a_session_that_cannot_close_is_landed_all_the_same(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    session.edit(APP, APP_EXACT_OLD, APP_EXACT_NEW)
    write(session.worktree / "scratch.txt", "the agent's unsent work\n")
    proc = land(repo, "s", "--close", "--json")
    assert proc.returncode == 1
    outcome = json.loads(proc.stdout)
    assert (outcome["status"], outcome["closed"]) == ("landed", False)
    assert "the session was not closed: session 's' has 1 uncommitted change(s)" in proc.stderr
    assert head(repo) == head(repo, "redline/s")
    assert (session.worktree / "scratch.txt").exists()


def test_a_request_being_published_is_waited_for(flagged: Flagged) -> None:
    git_repo, layout = main_repository(flagged.repo)
    entry = journal.JournalEntry("s", "r1", "refs/heads/redline/s", flagged.base,
                                 flagged.commit, {}, {})  # fmt: skip
    journal.write(layout.journal, entry)
    with pytest.raises(SessionError, match="still being published"):
        land_in_process(git_repo, layout, "s", None, False, None, {}, wait=0.2)
    journal.clear(layout.journal, "s")
    approve(flagged.repo, flagged.edit)
    done = land_in_process(git_repo, layout, "s", None, False, None, {}, wait=0.2)
    assert done.mode == "fast-forward"


def test_fuzzy_edit_squashed_with_a_later_exact_rewrite_still_needs_approval(
    tmp_path: Path,
) -> None:
    """An exact edit of the flagged lines carries the flag: squashing both changes nothing."""
    repo = user_repo(tmp_path / "repo")
    session = agent(repo)
    first = session.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW)
    assert first["flags"]
    second = session.edit(MIGRATION, "    created_at TIMESTAMP\n", "    created_at TIMESTAMPTZ\n")
    assert second["status"] == "applied", second
    proc = land(repo, "s", "--squash")
    assert proc.returncode == 1
    assert first["commits"][0]["edit"] in proc.stderr


def undo(f: Flagged) -> None:
    git_repo, layout = main_repository(f.repo)
    session = sessions.load(layout, "s")
    policy = partial(policy_from_tree, git_repo)
    outcome = SessionApplier(git_repo, layout, session, policy_for=policy).undo(f.edit)
    assert outcome.status == "undone"
    assert outcome.flags == []
    assert (Path(session.worktree) / MIGRATION).read_text() == MIGRATION_TEXT


def review(repo: Path) -> tuple[list[str], str]:
    """The edits ``redline review --json`` lists, and what ``redline review`` says."""
    listed = json.loads(redline(repo, "review", "--repo", str(repo), "--json", check=True).stdout)
    said = redline(repo, "review", "--repo", str(repo), check=True).stdout
    return [item["edit"] for item in listed], said


def test_an_undone_flagged_edit_lands_without_approval(flagged: Flagged) -> None:
    """Undo only takes an edit back: the flagged lines are gone, so nothing waits."""
    undo(flagged)
    # review asks no one to approve what the guard no longer needs, and says so
    listed, said = review(flagged.repo)
    assert listed == []
    assert said.splitlines() == [
        "nothing waiting: every flagged edit still on a branch is approved",
        "not listed: 1 unapproved flagged edit no longer on any branch, HEAD or the index "
        f"(undone, or the lines removed since): {flagged.edit}; the guard lets it pass, so it "
        "needs no approval",
    ]
    landed = land_json(flagged.repo, "s")
    assert landed["mode"] == "fast-forward"
    assert (flagged.repo / MIGRATION).read_text() == MIGRATION_TEXT
    # the flagged edit is in main's history, its lines are not
    assert head(flagged.repo, "HEAD~1") == flagged.commit
    assert review(flagged.repo)[0] == []


@pytest.mark.parametrize("where", ["branch", "remote-tracking branch", "index"])
def test_an_undone_edit_still_waits_where_its_lines_still_are(flagged: Flagged, where: str) -> None:
    """The guard would refuse a commit or push of what still holds the lines: review
    lists the edit while a branch, a remote-tracking branch or the index holds them."""
    if where == "branch":
        git(flagged.repo, "branch", "keep", flagged.branch)
    elif where == "remote-tracking branch":
        git(flagged.repo, "update-ref", "refs/remotes/origin/s", flagged.branch)
    undo(flagged)
    if where == "index":  # a squash merge of the session as it was, staged
        git(flagged.repo, "merge", "-q", "--squash", flagged.commit)
        refusal(run_git(flagged.repo, "commit", "-m", "the session, squashed"))
    listed, said = review(flagged.repo)
    assert listed == [flagged.edit]
    assert "not listed" not in said


def test_stats_count_a_squashed_edit_once_and_after_its_session_is_gone(
    flagged: Flagged,
) -> None:
    """The squash note carries each edit's evidence: ``redline stats`` counts the edit
    once while its own commit is there, and through the squash once it is gone; an
    approval recorded in the squash note counts."""
    approve(flagged.repo, flagged.edit)
    land_json(flagged.repo, "s", "--squash")

    def fuzzy_row() -> dict[str, object]:
        proc = redline(flagged.repo, "stats", "--repo", str(flagged.repo), "--json", check=True)
        rows = {row["match_type"]: row for row in json.loads(proc.stdout)["match_types"]}
        return {k: rows["fuzzy"][k] for k in ("edits", "flagged", "approved")}

    assert fuzzy_row() == {"edits": 1, "flagged": 1, "approved": 1}
    redline(flagged.repo, "session", "close", "s", "--repo", str(flagged.repo), "--force")
    run_git(flagged.repo, "branch", "-D", "redline/s")
    assert fuzzy_row() == {"edits": 1, "flagged": 1, "approved": 1}


def test_a_git_command_that_hangs_is_stopped_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A git run in the user's worktree that does not finish (a hook waiting for input)
    is stopped; the error names it and what to check, never a traceback."""
    monkeypatch.setattr(landing, "GIT_TIMEOUT", 0.2)
    hook = tmp_path / "hooks" / "slow"
    hook.parent.mkdir()
    hook.write_text("#!/bin/sh\nsleep 5\n")
    hook.chmod(0o755)
    with pytest.raises(landing.LandError) as caught:
        landing._git(tmp_path, {"PATH": "/usr/bin:/bin"}, "-c", f"alias.slow=!{hook}", "slow")
    message = str(caught.value)
    assert "did not finish within 0.2 s and was stopped" in message
    assert "`git status` and `git log -1`" in message
