"""The guard end to end: installed hooks, real ``git commit``/``merge``/``push``.

A flagged edit (a fuzzy match on a protected path, made through the git-mode
layer) sits on a session branch. However its lines reach a commit or a push —
squash merge, merge commit, cherry-pick, amend, push of a commit made with
``--no-verify`` — git runs ``redline guard`` from the installed hook, which
refuses until a person approves the edit; then the same command passes.
Where git makes commits without running a commit hook (fast-forward, a
committing cherry-pick, rebase), the pre-push hook is the gate.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
from guard_fixtures import (
    APP,
    APP_FUZZY_NEW,
    APP_FUZZY_OLD,
    DEFAULT_RULE,
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

from gitmode_fixtures import git, make_repo, note_of
from redline.engine.confidence import shown_confidence
from redline.engine.edit import EditItem, EditRequest, apply_edit


@pytest.fixture
def flagged(tmp_path: Path) -> Flagged:
    """A guarded repository whose session ``s`` has one flagged edit of the migration."""
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    return flagged_edit(repo)


def squash(f: Flagged) -> None:
    git(f.repo, "merge", "--squash", f.branch)


def approve(repo: Path, *names: str) -> str:
    return redline(repo, "approve", "--repo", str(repo), *names, check=True).stdout


def review(repo: Path) -> list[dict[str, object]]:
    items = json.loads(redline(repo, "review", "--repo", str(repo), "--json", check=True).stdout)
    assert isinstance(items, list)
    return items


def assert_names_the_edit(message: str, f: Flagged, *copies: str, lines: str = "lines 4-5") -> None:
    """The refusal names commit, path, lines (where the edit's lines are in what is
    committed or pushed), match_type, confidence and rule, and the fix.

    ``copies``: other commits carrying the same edit (rebased, with the note copied);
    naming any one of them is right.
    """
    assert any(f"edit {f.edit} (commit {c[:12]})" in message for c in (f.commit, *copies))
    assert f"{MIGRATION} {lines}, fuzzy" in message
    assert f"fuzzy {shown_confidence(f.confidence)}" in message
    assert f"rule {MIGRATION_RULE}: match_type fuzzy is not one of: exact" in message
    assert f"`redline approve {f.edit}`" in message
    assert "redline review" in message


# --- the commit gate ------------------------------------------------------------------------


def test_the_edit_is_flagged_in_its_note(flagged: Flagged) -> None:
    assert flagged.match_type == "fuzzy"
    assert 0.9 < flagged.confidence < 1.0
    note = note_of(flagged.repo, flagged.commit)
    assert note["policy"] == {
        "verdict": "flagged",
        "action": "review",
        "source": ".redline.toml",
        "violations": [
            {
                "rule": MIGRATION_RULE,
                "path": MIGRATION,
                "reason": "match_type fuzzy is not one of: exact",
            }
        ],
    }
    assert note["approvals"] == []


@pytest.mark.e2e  # git runs the installed pre-commit hook, which starts Python
def test_a_squash_merged_edit_is_refused_until_approved(flagged: Flagged) -> None:
    squash(flagged)
    proc = run_git(flagged.repo, "commit", "-m", "squash")
    message = refusal(proc)
    assert_names_the_edit(message, flagged)
    assert message.startswith("redline guard: refused — 1 flagged edit not yet approved")
    assert head(flagged.repo) == flagged.base

    out = approve(flagged.repo, flagged.edit)
    assert out.strip() == f"approved edit {flagged.edit} (1 note(s)) as {REVIEWER}"
    git(flagged.repo, "commit", "-m", "squash")
    assert head(flagged.repo) != flagged.base
    shown = git(flagged.repo, "show", "HEAD:" + MIGRATION)
    assert all(line in shown for line in INSERTED)


@pytest.mark.parametrize("length", [40, 10])
def test_approving_by_the_edit_commit_works_too(flagged: Flagged, length: int) -> None:
    squash(flagged)
    refusal(run_git(flagged.repo, "commit", "-m", "squash"))
    out = approve(flagged.repo, flagged.commit[:length])
    assert f"approved edit {flagged.edit} " in out
    git(flagged.repo, "commit", "-m", "squash")
    assert head(flagged.repo) != flagged.base


def test_approving_an_unknown_name_says_what_to_do(flagged: Flagged) -> None:
    proc = redline(flagged.repo, "approve", "--repo", str(flagged.repo), "0123456789ab")
    assert proc.returncode == 1
    assert "no redline edit or edit commit named '0123456789ab'" in proc.stderr
    assert "`redline review`" in proc.stderr
    # a commit without a redline note is not an edit either
    proc = redline(flagged.repo, "approve", "--repo", str(flagged.repo), flagged.base)
    assert proc.returncode == 1
    assert "no redline edit or edit commit named" in proc.stderr
    assert len(review(flagged.repo)) == 1


@pytest.mark.e2e  # the real pre-merge-commit hook
def test_a_merge_commit_is_refused_by_pre_merge_commit(flagged: Flagged) -> None:
    # main moves on, so that the merge is a true merge of two lines of history
    (flagged.repo / "NOTES.md").write_text("release notes\n")
    git(flagged.repo, "add", "NOTES.md")
    git(flagged.repo, "commit", "-m", "notes")
    before = head(flagged.repo)
    proc = run_git(flagged.repo, "merge", "--no-ff", "-m", "merge s", flagged.branch)
    assert_names_the_edit(refusal(proc), flagged)
    assert head(flagged.repo) == before

    # git leaves the merge in progress; finishing it with `git commit` runs pre-commit
    assert (flagged.repo / ".git" / "MERGE_HEAD").exists()
    assert_names_the_edit(refusal(run_git(flagged.repo, "commit", "--no-edit")), flagged)
    git(flagged.repo, "merge", "--abort")
    approve(flagged.repo, flagged.edit)
    git(flagged.repo, "merge", "--no-ff", "-m", "merge s", flagged.branch)
    parents = git(flagged.repo, "log", "-1", "--format=%P").split()
    assert parents == [before, head(flagged.repo, flagged.branch)]


def test_cherry_pick_then_commit_is_refused(flagged: Flagged) -> None:
    git(flagged.repo, "cherry-pick", "-n", flagged.commit)
    assert_names_the_edit(refusal(run_git(flagged.repo, "commit", "-m", "picked")), flagged)
    assert head(flagged.repo) == flagged.base


def test_further_manual_changes_do_not_slip_it_through(flagged: Flagged) -> None:
    squash(flagged)
    path = flagged.repo / MIGRATION
    text = path.read_text()
    text = text.replace("CREATE TABLE users (", "CREATE TABLE IF NOT EXISTS users (")
    text = text.replace("    name TEXT NOT NULL,", "    full_name TEXT NOT NULL,")
    path.write_text(text + "CREATE INDEX users_email ON users (email);\n")
    git(flagged.repo, "add", MIGRATION)
    # the renamed column touches the edit's lines: one place, lines 3-5 now
    message = refusal(run_git(flagged.repo, "commit", "-m", "mine"))
    assert_names_the_edit(message, flagged, lines="lines 3-5")
    # with the file committed alongside other files, and with `git commit -a`
    (flagged.repo / "CHANGES.md").write_text("users table\n")
    git(flagged.repo, "add", "CHANGES.md")
    refusal(run_git(flagged.repo, "commit", "-a", "-m", "mine"))
    refusal(run_git(flagged.repo, "commit", "-m", "mine", "--", MIGRATION))
    assert head(flagged.repo) == flagged.base


def test_a_commit_from_a_subdirectory_is_refused(flagged: Flagged) -> None:
    squash(flagged)
    proc = run_git(flagged.repo / "migrations", "commit", "-m", "from below")
    assert_names_the_edit(refusal(proc), flagged)


def test_a_commit_that_leaves_the_protected_file_alone_passes(flagged: Flagged) -> None:
    squash(flagged)
    (flagged.repo / "CHANGES.md").write_text("users table\n")
    git(flagged.repo, "add", "CHANGES.md")
    # only CHANGES.md is committed; the migration stays staged for later
    git(flagged.repo, "commit", "-m", "changes only", "--", "CHANGES.md")
    assert git(flagged.repo, "show", "--name-only", "--format=", "HEAD").split() == ["CHANGES.md"]
    refusal(run_git(flagged.repo, "commit", "-m", "the rest"))


def test_an_edit_whose_inserted_lines_were_removed_again_no_longer_blocks(
    flagged: Flagged,
) -> None:
    squash(flagged)
    path = flagged.repo / MIGRATION
    text = path.read_text()
    for line in INSERTED:
        text = text.replace(line + "\n", "")
    text = text.replace("    name TEXT NOT NULL,\n", "    name TEXT NOT NULL,\n    email TEXT\n")
    path.write_text(text + "-- reviewed by hand\n")
    assert path.read_text() == MIGRATION_TEXT + "-- reviewed by hand\n"
    git(flagged.repo, "add", MIGRATION)
    git(flagged.repo, "commit", "-m", "manual instead")
    assert head(flagged.repo) != flagged.base
    # the edit still waits for review; it just is not in this commit
    assert [item["edit"] for item in review(flagged.repo)] == [flagged.edit]


@pytest.mark.e2e  # the hook's own process finds `git commit --amend` among its ancestors
def test_amending_a_commit_made_with_no_verify_is_refused(flagged: Flagged) -> None:
    squash(flagged)
    git(flagged.repo, "commit", "--no-verify", "-m", "sneaky")
    sneaky = head(flagged.repo)
    proc = run_git(flagged.repo, "commit", "--amend", "-m", "x")
    assert_names_the_edit(refusal(proc), flagged)
    assert head(flagged.repo) == sneaky
    approve(flagged.repo, flagged.edit)
    git(flagged.repo, "commit", "--amend", "-m", "x")
    assert git(flagged.repo, "log", "-1", "--format=%s").strip() == "x"


@pytest.mark.parametrize(
    "amend",
    [["ci", "--amend"], ["commit", "--amen"], ["-c", "core.quotePath=false", "commit", "--amend"]],
    ids=["alias", "abbreviated", "with-config"],
)
def test_an_amend_however_spelt_is_refused(flagged: Flagged, amend: list[str]) -> None:
    git(flagged.repo, "config", "alias.ci", "commit")
    squash(flagged)
    git(flagged.repo, "commit", "--no-verify", "-m", "sneaky")
    sneaky = head(flagged.repo)
    refusal(run_git(flagged.repo, *amend, "-m", "x"))
    assert head(flagged.repo) == sneaky


def test_a_plain_commit_on_top_of_a_no_verify_commit_passes(flagged: Flagged) -> None:
    # the guard checks what a commit adds; the earlier commit is pre-push's business
    squash(flagged)
    git(flagged.repo, "commit", "--no-verify", "-m", "sneaky")
    (flagged.repo / "CHANGES.md").write_text("more\n")
    git(flagged.repo, "add", "CHANGES.md")
    git(flagged.repo, "commit", "-m", "more")


def test_an_edit_that_only_deletes_lines_is_carried_while_they_stay_deleted(
    tmp_path: Path,
) -> None:
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    f = flagged_edit(
        repo,
        old="    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL,\n    email TEXT\n",
        new="    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL,\n",
    )
    git(repo, "merge", "--squash", f.branch)
    assert "email TEXT" not in (repo / MIGRATION).read_text()
    refusal(run_git(repo, "commit", "-m", "drop email"))
    # put the deleted line back (and change something else): no longer this edit
    (repo / MIGRATION).write_text(MIGRATION_TEXT.replace("users", "people"))
    git(repo, "add", MIGRATION)
    git(repo, "commit", "-m", "rename table")


# The agent quotes the file two spaces in where it is four: the strip pass.
PATCH_STRIP = f"""\
*** Update File: {MIGRATION}
@@
   id INTEGER PRIMARY KEY,
   name TEXT NOT NULL,
-  email TEXT
+  email TEXT UNIQUE,
+  created_at TIMESTAMP
"""


def test_a_tolerant_apply_patch_hunk_is_flagged_and_refused(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    session = agent(repo)
    result = session.patch(PATCH_STRIP)
    assert result["status"] == "applied", result
    assert [h["match_type"] for h in result["hunks"]] == ["strip"]
    assert result["flags"] == [
        {
            "rule": MIGRATION_RULE,
            "path": MIGRATION,
            "reason": "match_type strip is not one of: exact",
        }
    ]
    [commit] = result["commits"]
    git(repo, "merge", "--squash", session.branch)
    message = refusal(run_git(repo, "commit", "-m", "patch"))
    assert f"edit {commit['edit']} (commit {commit['commit'][:12]}): {MIGRATION}" in message
    assert "strip 0.98" in message
    redline(repo, "approve", commit["edit"], check=True)
    git(repo, "commit", "-m", "patch")


def test_a_rule_can_allow_whitespace_tolerant_hunks(tmp_path: Path) -> None:
    policy = (
        '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = ["exact", "rstrip", "strip"]\n'
    )
    repo = user_repo(tmp_path / "repo", policy)
    install_hooks(repo)
    session = agent(repo)
    result = session.patch(PATCH_STRIP)
    assert result["status"] == "applied", result
    assert result["flags"] == []
    git(repo, "merge", "--squash", session.branch)
    git(repo, "commit", "-m", "patch")


# --- the push gate --------------------------------------------------------------------------


def bare_remote(repo: Path, tmp_path: Path) -> Path:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    return remote


@pytest.mark.e2e  # the real pre-push hook, the refs on its stdin
def test_push_of_a_no_verify_commit_is_refused_until_approved(
    flagged: Flagged, tmp_path: Path
) -> None:
    remote = bare_remote(flagged.repo, tmp_path)
    git(flagged.repo, "push", "-q", "-u", "origin", "main")  # nothing flagged: passes
    squash(flagged)
    git(flagged.repo, "commit", "--no-verify", "-m", "sneaky")
    proc = run_git(flagged.repo, "push", "origin", "main")
    message = refusal(proc)
    assert_names_the_edit(message, flagged)
    assert "failed to push" in message
    assert head(remote, "main") == flagged.base

    approve(flagged.repo, flagged.edit)
    git(flagged.repo, "push", "-q", "origin", "main")
    assert head(remote, "main") == head(flagged.repo)


def test_push_to_an_empty_remote_checks_all_history(flagged: Flagged, tmp_path: Path) -> None:
    remote = bare_remote(flagged.repo, tmp_path)
    squash(flagged)
    git(flagged.repo, "commit", "--no-verify", "-m", "sneaky")
    (flagged.repo / "CHANGES.md").write_text("more\n")
    git(flagged.repo, "add", "CHANGES.md")
    git(flagged.repo, "commit", "-m", "more")
    assert_names_the_edit(refusal(run_git(flagged.repo, "push", "origin", "main")), flagged)
    assert run_git(remote, "rev-parse", "--verify", "-q", "main").returncode != 0


def test_push_of_a_fast_forwarded_session_branch_is_refused(
    flagged: Flagged, tmp_path: Path
) -> None:
    remote = bare_remote(flagged.repo, tmp_path)
    git(flagged.repo, "push", "-q", "origin", "main")
    git(flagged.repo, "merge", "--ff-only", flagged.branch)
    refusal(run_git(flagged.repo, "push", "origin", "main"))
    # pushing the session branch itself is refused as well
    refusal(run_git(flagged.repo, "push", "origin", flagged.branch))
    assert head(remote, "main") == flagged.base
    approve(flagged.repo, flagged.edit)
    git(flagged.repo, "push", "-q", "origin", "main", flagged.branch)
    assert head(remote, "main") == flagged.commit


@pytest.mark.parametrize(
    "bring_in",
    [
        [["merge", "--ff-only", "{branch}"]],
        [["cherry-pick", "{commit}"]],
        [["checkout", "-q", "-b", "feature", "{branch}"], ["rebase", "-q", "main"]],
    ],
    ids=["fast-forward", "cherry-pick", "rebase"],
)
def test_commits_git_makes_without_commit_hooks_are_stopped_at_push(
    flagged: Flagged, tmp_path: Path, bring_in: list[list[str]]
) -> None:
    # git runs no pre-commit hook for a fast-forward, a cherry-pick that commits or a
    # rebase: nothing is checked locally, so pre-push is the gate that stops them
    remote = bare_remote(flagged.repo, tmp_path)
    if bring_in[0][0] != "merge":  # main moves on, so that these make new commits
        (flagged.repo / "CHANGES.md").write_text("main moved on\n")
        git(flagged.repo, "add", "CHANGES.md")
        git(flagged.repo, "commit", "-m", "changes")
    git(flagged.repo, "push", "-q", "-u", "origin", "main")
    pushed = head(flagged.repo)
    for command in bring_in:
        git(
            flagged.repo, *[a.format(branch=flagged.branch, commit=flagged.commit) for a in command]
        )
    assert head(flagged.repo) != pushed
    # the copies keep the edit's note (notes.rewriteRef; cherry-pick makes a plain copy)
    if "rebase" in bring_in[-1]:
        assert note_of(flagged.repo, head(flagged.repo))["edit"] == flagged.edit
    assert git(flagged.repo, "show", "HEAD:" + MIGRATION).count(INSERTED[0]) == 1
    message = refusal(run_git(flagged.repo, "push", "origin", "HEAD:main"))
    assert_names_the_edit(message, flagged, head(flagged.repo))
    assert head(remote, "main") == pushed
    approve(flagged.repo, flagged.edit)
    git(flagged.repo, "push", "-q", "origin", "HEAD:main")
    assert head(remote, "main") == head(flagged.repo)


def test_deleting_a_remote_branch_is_not_checked(flagged: Flagged, tmp_path: Path) -> None:
    remote = bare_remote(flagged.repo, tmp_path)
    git(flagged.repo, "push", "-q", "--no-verify", "origin", flagged.branch)
    git(flagged.repo, "push", "-q", "origin", "--delete", flagged.branch)
    assert run_git(remote, "rev-parse", "--verify", "-q", flagged.branch).returncode != 0


def guard_range(repo: Path, from_ref: str, to_ref: str) -> subprocess.CompletedProcess[str]:
    """``redline guard`` as the pre-commit framework runs it for a range."""
    env = {**os.environ, "PRE_COMMIT_FROM_REF": from_ref, "PRE_COMMIT_TO_REF": to_ref}
    return redline(repo, "guard", env=env)


@pytest.mark.parametrize("to_ref", ["HEAD", "main", "sha"])
def test_a_range_from_the_pre_commit_framework_takes_revisions(
    flagged: Flagged, to_ref: str
) -> None:
    # `pre-commit run --from-ref origin/main --to-ref HEAD` passes the names as given
    squash(flagged)
    git(flagged.repo, "commit", "--no-verify", "-m", "sneaky")
    to = head(flagged.repo) if to_ref == "sha" else to_ref
    proc = guard_range(flagged.repo, "HEAD~1", to)
    assert proc.returncode == 1
    assert_names_the_edit(proc.stderr, flagged)
    assert guard_range(flagged.repo, "HEAD", "HEAD").returncode == 0  # an empty range
    approve(flagged.repo, flagged.edit)
    assert guard_range(flagged.repo, "HEAD~1", to).returncode == 0


def test_an_unknown_range_end_is_an_error_not_a_pass(flagged: Flagged) -> None:
    proc = guard_range(flagged.repo, flagged.base, "no-such-branch")
    assert proc.returncode == 2  # a usage error: the range names no commit
    assert "redline: cannot resolve PRE_COMMIT_TO_REF 'no-such-branch'" in proc.stderr
    # a deleted ref pushes nothing
    assert guard_range(flagged.repo, flagged.base, "0" * 40).returncode == 0


# --- what never blocks ------------------------------------------------------------------------


def test_exact_edits_to_protected_paths_never_block(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    session = agent(repo)
    result = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)
    assert result["status"] == "applied"
    assert result["match_type"] == "exact"
    assert result["flags"] == []
    [commit] = result["commits"]
    assert note_of(repo, commit["commit"])["policy"]["verdict"] == "pass"
    git(repo, "merge", "--squash", session.branch)
    git(repo, "commit", "-m", "exact")
    assert review(repo) == []


def test_tolerant_edits_to_unprotected_paths_never_block(tmp_path: Path) -> None:
    remote_base = tmp_path
    repo = user_repo(tmp_path / "repo")
    install_hooks(repo)
    session = agent(repo)
    result = session.edit(APP, APP_FUZZY_OLD, APP_FUZZY_NEW)
    assert result["status"] == "applied"
    assert result["match_type"] == "fuzzy"
    assert result["flags"] == []
    [commit] = result["commits"]
    git(repo, "merge", "--no-ff", "-m", "merge", session.branch)
    remote = bare_remote(repo, remote_base)
    git(repo, "push", "-q", "origin", "main")
    assert head(remote, "main") == head(repo)
    assert note_of(repo, commit["commit"])["policy"]["verdict"] == "pass"
    assert review(repo) == []


def test_a_repository_without_edits_commits_as_usual(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    install_hooks(repo)
    (repo / "a.txt").write_text("b\n")
    git(repo, "commit", "-qam", "second")
    assert git(repo, "log", "-1", "--format=%s").strip() == "second"


def test_the_first_commit_of_a_repository_is_checked_without_a_parent(tmp_path: Path) -> None:
    repo = tmp_path / "fresh"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Repo User")
    git(repo, "config", "user.email", "repo-user@example.com")
    install_hooks(repo)
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "root")
    assert head(repo)


# --- review and approval records --------------------------------------------------------------


def test_review_json_lists_the_waiting_edit_with_its_diff(flagged: Flagged) -> None:
    [item] = review(flagged.repo)
    assert item["edit"] == flagged.edit
    assert item["commit"] == flagged.commit
    assert item["path"] == MIGRATION
    assert (item["start_line"], item["end_line"]) == (2, 4)
    assert item["match_type"] == "fuzzy"
    assert item["confidence"] == flagged.confidence
    assert item["rule"] == MIGRATION_RULE
    assert item["reason"] == "match_type fuzzy is not one of: exact"
    assert item["inserted"] == 2
    diff = str(item["diff"])
    assert f"+++ b/{MIGRATION}" in diff
    assert "-    email TEXT\n" in diff
    for line in INSERTED:
        assert f"+{line}\n" in diff

    human = redline(flagged.repo, "review", "--repo", str(flagged.repo), check=True).stdout
    assert f"edit {flagged.edit} (commit {flagged.commit[:12]}): {MIGRATION} lines 2-4" in human
    assert "+    created_at TIMESTAMP" in human
    assert "redline approve EDIT" in human

    approve(flagged.repo, flagged.edit)
    assert review(flagged.repo) == []
    human = redline(flagged.repo, "review", "--repo", str(flagged.repo), check=True).stdout
    assert "nothing waiting" in human


def test_the_approval_is_recorded_in_the_note(flagged: Flagged) -> None:
    before = time.time()
    approve(flagged.repo, flagged.edit)
    note = note_of(flagged.repo, flagged.commit)
    [approval] = note["approvals"]
    assert approval["by"] == REVIEWER
    stamp = calendar.timegm(time.strptime(approval["at"], "%Y-%m-%dT%H:%M:%SZ"))
    assert before - 2 <= stamp <= time.time() + 2
    # the rest of the evidence is untouched
    assert note["edit"] == flagged.edit
    assert note["policy"]["verdict"] == "flagged"
    # the notes ref has one more commit, made by the reviewer
    author = git(flagged.repo, "log", "-1", "--format=%an <%ae>", "refs/notes/redline")
    assert author.strip() == REVIEWER


def test_the_reviewer_comes_from_git_config(flagged: Flagged) -> None:
    git(flagged.repo, "config", "user.name", "Ada Reviewer")
    git(flagged.repo, "config", "user.email", "ada@example.com")
    out = approve(flagged.repo, flagged.edit)
    assert out.strip().endswith("as Ada Reviewer <ada@example.com>")
    [approval] = note_of(flagged.repo, flagged.commit)["approvals"]
    assert approval["by"] == "Ada Reviewer <ada@example.com>"


def test_two_flagged_edits_are_both_named(tmp_path: Path) -> None:
    repo = user_repo(
        tmp_path / "repo",
        **{"migrations/002_posts.sql": MIGRATION_TEXT.replace("users", "posts")},
    )
    install_hooks(repo)
    session = agent(repo)
    first = session.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW)
    second = session.edit(
        "migrations/002_posts.sql", FUZZY_OLD, FUZZY_NEW.replace("created", "posted")
    )
    assert first["flags"]
    assert second["flags"]
    edits = [first["commits"][0]["edit"], second["commits"][0]["edit"]]
    git(repo, "merge", "--squash", session.branch)
    message = refusal(run_git(repo, "commit", "-m", "both"))
    assert "2 flagged edits not yet approved" in message
    assert f"`redline approve {edits[0]} {edits[1]}`" in message
    approve(repo, edits[0])
    message = refusal(run_git(repo, "commit", "-m", "both"))
    assert "1 flagged edit not yet approved" in message
    assert edits[0] not in message
    approve(repo, edits[1])
    git(repo, "commit", "-m", "both")


# --- thresholds, end to end ---------------------------------------------------------------------


DOC = "docs/guide.md"
DOC_TEXT = (
    "# Guide\n\nInstall the package with pip.\nRun the server with serve.\nStop it with Ctrl-C.\n"
)
DOC_OLD = "Install the package with pip.\nRun the servr with serve.\nStop it with Ctrl-C.\n"
DOC_NEW = (
    "Install the package with pip.\nRun the servr with serve --port 8080.\nStop it with Ctrl-C.\n"
)


def doc_confidence() -> float:
    outcome = apply_edit(DOC_TEXT.encode(), EditRequest(DOC, (EditItem(DOC_OLD, DOC_NEW),)))
    assert outcome.result.match_type == "fuzzy"
    assert outcome.result.confidence is not None
    return outcome.result.confidence


@pytest.mark.parametrize(("offset", "blocked"), [(0.0001, True), (0.0, False), (-0.0001, False)])
def test_min_confidence_boundary_end_to_end(tmp_path: Path, offset: float, blocked: bool) -> None:
    confidence = doc_confidence()
    minimum = confidence + offset
    policy = f'[[guard.protect]]\npaths = ["docs/**"]\nmin_confidence = {minimum!r}\n'
    repo = user_repo(tmp_path / "repo", policy, **{DOC: DOC_TEXT})
    install_hooks(repo)
    session = agent(repo)
    result = session.edit(DOC, DOC_OLD, DOC_NEW)
    assert result["status"] == "applied"
    assert result["confidence"] == confidence
    assert bool(result["flags"]) is blocked
    git(repo, "merge", "--squash", session.branch)
    proc = run_git(repo, "commit", "-m", "docs")
    if blocked:
        message = refusal(proc)
        shown = shown_confidence(confidence, 6)
        assert f"confidence {shown} is below the minimum {minimum:g}" in message
        assert "rule guard.protect[1] (docs/**)" in message
    else:
        assert proc.returncode == 0, proc.stderr


def test_a_stricter_policy_committed_later_flags_an_earlier_edit(tmp_path: Path) -> None:
    """The guard judges each edit's evidence by the policy in force now, too."""
    repo = user_repo(tmp_path / "repo", policy=None, **{DOC: DOC_TEXT})
    install_hooks(repo)
    session = agent(repo)
    result = session.edit(DOC, DOC_OLD, DOC_NEW)
    assert result["flags"] == []
    (repo / ".redline.toml").write_text(
        '[[guard.protect]]\npaths = ["docs/**"]\nrequire = "exact"\n'
    )
    git(repo, "add", ".redline.toml")
    git(repo, "commit", "-m", "policy")
    git(repo, "merge", "--squash", session.branch)
    message = refusal(run_git(repo, "commit", "-m", "docs"))
    assert "rule guard.protect[1] (docs/**): match_type fuzzy is not one of: exact" in message


# --- the policy files ----------------------------------------------------------------------------


def test_a_broken_policy_in_head_makes_the_guard_fail_clearly(flagged: Flagged) -> None:
    repo = flagged.repo
    (repo / ".redline.toml").write_text('[guard]\naction = "review\n')
    git(repo, "add", ".redline.toml")
    git(repo, "commit", "--no-verify", "-m", "broken policy")  # past the guard
    (repo / "CHANGES.md").write_text("x\n")
    git(repo, "add", "CHANGES.md")
    proc = run_git(repo, "commit", "-m", "anything")
    assert proc.returncode != 0
    message = refusal(proc)
    assert "the guard policy in the commit cannot be read:\n" in message
    assert "  .redline.toml, line 2, column 17: not valid TOML: " in message
    assert "Traceback" not in proc.stderr
    # the guard run by hand says the same
    direct = redline(repo, "guard")
    assert direct.returncode == 1
    assert "  .redline.toml, line 2, column 17: not valid TOML: " in direct.stderr
    # review, too, refuses to guess
    review = redline(repo, "review", "--repo", str(repo))
    assert review.returncode == 1
    assert review.stderr.startswith(
        "redline: invalid guard policy in .redline.toml: line 2, column 17: not valid TOML: "
    )
    assert "Fix the file" in review.stderr


def test_a_commit_that_repairs_a_broken_policy_passes(flagged: Flagged) -> None:
    """ "Fix the file and retry" works: the repaired policy judges the commit repairing it."""
    repo = flagged.repo
    (repo / ".redline.toml").write_text('[guard]\naction = "review\n')
    git(repo, "add", ".redline.toml")
    git(repo, "commit", "--no-verify", "-m", "broken policy")
    (repo / ".redline.toml").write_text(POLICY_WITH_BLOCK)
    git(repo, "add", ".redline.toml")
    git(repo, "commit", "-m", "repaired policy")
    # ...and the repaired policy is the one in force again
    squash(flagged)
    assert_names_the_edit(refusal(run_git(repo, "commit", "-m", "squash")), flagged)


def test_a_commit_that_repairs_a_broken_policy_is_still_checked(flagged: Flagged) -> None:
    repo = flagged.repo
    (repo / ".redline.toml").write_text('[guard]\naction = "review\n')
    git(repo, "add", ".redline.toml")
    git(repo, "commit", "--no-verify", "-m", "broken policy")
    squash(flagged)
    (repo / ".redline.toml").write_text(POLICY_WITH_BLOCK)
    git(repo, "add", ".redline.toml")
    assert_names_the_edit(refusal(run_git(repo, "commit", "-m", "both")), flagged)


def test_an_invalid_rule_in_head_names_the_key(tmp_path: Path) -> None:
    repo = user_repo(
        tmp_path / "repo", '[[guard.protect]]\npaths = ["migrations/**"]\nminimum = 0.9\n'
    )
    install_hooks(repo)
    (repo / "CHANGES.md").write_text("x\n")
    git(repo, "add", "CHANGES.md")
    proc = run_git(repo, "commit", "-m", "anything")
    assert proc.returncode != 0
    assert (
        "  .redline.toml, guard.protect[1].minimum: unknown key; "
        "use paths, require, min_confidence\n" in refusal(proc)
    )


def test_a_broken_policy_rejects_edits_at_edit_time(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo", '[guard]\naction = "block"\n')
    session = agent(repo)
    result = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)
    assert result["status"] == "rejected"
    assert "invalid guard policy in .redline.toml: guard.action" in result["error"]
    assert "no edit is applied until it is fixed" in result["error"]
    assert head(repo, session.branch) == head(repo)


POLICY_WITH_BLOCK = """\
[guard]
action = "review"

[[guard.protect]]
paths = ["migrations/**"]
require = "exact"
"""
POLICY_OLD = '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exakt"\n'
POLICY_NEW = '[[guard.protect]]\npaths = ["migrations/**", "db/**"]\nrequire = "exakt"\n'


def test_a_fuzzy_edit_to_the_policy_file_itself_is_flagged(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo", POLICY_WITH_BLOCK)
    install_hooks(repo)
    f = flagged_edit(repo, ".redline.toml", POLICY_OLD, POLICY_NEW)
    assert f.match_type == "fuzzy"
    assert f.result["flags"] == [
        {
            "rule": DEFAULT_RULE,
            "path": ".redline.toml",
            "reason": "edits to the guard's own files (its policy, hook configuration and CI definitions) need a person's approval",
        }
    ]
    # the three-way merge kept the file's "exact"
    shown = git(repo, "show", f"{f.commit}:.redline.toml")
    assert 'paths = ["migrations/**", "db/**"]\nrequire = "exact"\n' in shown
    git(repo, "merge", "--squash", f.branch)
    message = refusal(run_git(repo, "commit", "-m", "policy"))
    assert f"edit {f.edit} (commit {f.commit[:12]}): .redline.toml line 5, fuzzy" in message
    assert f"rule {DEFAULT_RULE}" in message


def test_hook_configuration_is_protected_without_any_policy(tmp_path: Path) -> None:
    config = (
        "repos:\n"
        "-   repo: https://example.com/hooks\n"
        "    rev: v1.0.0\n"
        "    hooks:\n"
        "    -   id: check-yaml\n"
    )
    repo = user_repo(tmp_path / "repo", policy=None, **{".pre-commit-config.yaml": config})
    install_hooks(repo)
    f = flagged_edit(
        repo,
        ".pre-commit-config.yaml",
        "    rev: v1.0.0\n    hooks:\n    -   id: check-yml\n",
        "    rev: v1.0.0\n    hooks:\n    -   id: check-yml\n    -   id: end-of-file-fixer\n",
    )
    assert f.result["flags"][0]["rule"] == DEFAULT_RULE
    git(repo, "merge", "--squash", f.branch)
    refusal(run_git(repo, "commit", "-m", "hooks"))
    approve(repo, f.edit)
    git(repo, "commit", "-m", "hooks")


def test_pyproject_policy_protects_pyproject(tmp_path: Path) -> None:
    pyproject = (
        '[project]\nname = "demo"\nversion = "1.0"\ndescription = "A demo"\n\n'
        '[[tool.redline.guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'
    )
    repo = user_repo(tmp_path / "repo", policy=None, **{"pyproject.toml": pyproject})
    install_hooks(repo)
    f = flagged_edit(
        repo,
        "pyproject.toml",
        'name = "demo"\nversion = "1.0"\ndescripton = "A demo"\n',
        'name = "demo"\nversion = "1.1"\ndescripton = "A demo"\n',
    )
    assert f.result["flags"][0]["rule"] == DEFAULT_RULE
    git(repo, "merge", "--squash", f.branch)
    message = refusal(run_git(repo, "commit", "-m", "bump"))
    assert "pyproject.toml" in message


# --- action = "reject" ---------------------------------------------------------------------------


def test_reject_refuses_the_edit_at_edit_time(tmp_path: Path) -> None:
    policy = '[guard]\naction = "reject"\n\n[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'
    repo = user_repo(tmp_path / "repo", policy)
    session = agent(repo)
    result = session.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW)
    assert result["status"] == "rejected"
    assert result["match_type"] == "fuzzy"
    assert result["commits"] == []
    assert result["error"].startswith(
        f"rejected by guard rule {MIGRATION_RULE}: match_type fuzzy is not one of: exact "
        f"at {MIGRATION}."
    )
    assert "an exact edit always passes" in result["error"]
    assert result["flags"][0]["rule"] == MIGRATION_RULE
    # nothing was committed on the session branch, nothing noted, nothing written
    assert head(repo, session.branch) == head(repo)
    assert run_git(repo, "rev-parse", "--verify", "-q", "refs/notes/redline").returncode != 0
    assert (session.worktree / MIGRATION).read_text() == MIGRATION_TEXT
    assert git(session.worktree, "status", "--porcelain") == ""
    # an exact edit to the same place still goes through, and an unprotected fuzzy one
    exact = session.edit(MIGRATION, EXACT_OLD, EXACT_NEW)
    assert exact["status"] == "applied"
    fuzzy = session.edit(APP, APP_FUZZY_OLD, APP_FUZZY_NEW)
    assert fuzzy["status"] == "applied"
    assert re.fullmatch(r"[0-9a-f]{40}", fuzzy["commits"][0]["commit"])
