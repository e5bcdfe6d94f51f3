"""The guard cannot be walked around from inside a session, end to end.

Each test is the walk-around as an agent would try it, through the real
channel: a real daemon and session, edits sent with ``redline apply
--session``; the person lands the session's work in main (a fast-forward, so
that no commit hook runs) and pushes to a bare remote with the hooks that
``redline hooks install`` wrote. The pre-push hook must refuse, saying what
happened and what to do; after ``redline approve`` the same push goes through.

(a) an exact agent edit of ``.redline.toml`` that unprotects ``src/auth/**``,
    then a tolerant edit there;
(b) an exact edit that rewrites the lines of an unapproved flagged edit;
(c) ``git update-ref -d refs/notes/redline``, or one note removed;
(d) ``approve`` called on the daemon's socket by the agent itself.
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from guard_fixtures import FUZZY_NEW, FUZZY_OLD, MIGRATION, MIGRATION_TEXT

from gitmode_fixtures import GitMode, git, git_mode
from redline.engine.confidence import shown_confidence
from redline.engine.policy import MATCH_TYPES

POLICY = '[[guard.protect]]\npaths = ["migrations/**", "src/auth/**"]\nrequire = "exact"\n'
WEAKER = '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'
LOGIN = "src/auth/login.py"
LOGIN_TEXT = (
    "def login(user, password):\n"
    "    if not check_password(user, password):\n"
    "        raise PermissionError(user)\n"
    "    return issue_token(user)\n"
)
# A slip in a line the edit keeps ("pasword"): a tolerant match that drops the check.
LOGIN_OLD = (
    "    if not check_pasword(user, password):\n"
    "        raise PermissionError(user)\n"
    "    return issue_token(user)\n"
)
LOGIN_NEW = (
    "    if not check_pasword(user, password):\n"
    "        log_failed_login(user)\n"
    "    return issue_token(user)\n"
)
APP = "src/app.py"
APP_TEXT = "def main():\n    serve(port=8000)\n"
FILES: dict[str, str | bytes] = {
    ".redline.toml": POLICY,
    LOGIN: LOGIN_TEXT,
    MIGRATION: MIGRATION_TEXT,
    APP: APP_TEXT,
}
REVIEWER = "Repo User <repo-user@example.com>"
GUARD_FILE_REASON = "edits to the guard's own files (its policy, hook configuration and CI definitions) need a person's approval"
PUSH = "the push of refs/heads/main to refs/heads/main"


@dataclass
class Guarded:
    """A guarded repository with a bare remote, a daemon and an open session ``s``."""

    mode: GitMode
    remote: Path

    @property
    def repo(self) -> Path:
        return self.mode.repo

    @property
    def worktree(self) -> Path:
        """The session's worktree, where the agent works (and runs its own tools)."""
        [session] = self.mode.cli.json("session", "list", "--json", "--repo", str(self.repo))
        return Path(session["worktree"])

    def git(self, *args: str) -> str:
        return self.mode.git(*args)

    def run_git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["git", *args],
            cwd=self.repo,
            env=self.mode.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def apply(self, request: dict[str, Any]) -> dict[str, Any]:
        code, result = self.mode.cli.apply("s", request)
        assert code == 0, result
        assert result["status"] == "applied", result
        return result

    def edit(self, path: str, old: str, new: str) -> dict[str, Any]:
        return self.apply({"tool": "edit", "path": path, "old_string": old, "new_string": new})

    def land(self) -> None:
        """The person takes the session's work: a fast-forward runs no commit hook."""
        self.git("merge", "-q", "--ff-only", "redline/s")

    def push(self) -> subprocess.CompletedProcess[str]:
        return self.run_git("push", "-q", "origin", "main")

    def refused(self) -> str:
        """The pre-push refusal (asserting the push was refused and the remote kept)."""
        before = git(self.remote, "rev-parse", "main").strip()
        proc = self.push()
        assert proc.returncode != 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert git(self.remote, "rev-parse", "main").strip() == before
        failed = f"error: failed to push some refs to '{self.remote}'\n"
        assert proc.stderr.endswith(failed), proc.stderr
        return proc.stderr.removesuffix(failed)

    def pushed(self) -> None:
        proc = self.push()
        assert proc.returncode == 0, proc.stderr
        assert git(self.remote, "rev-parse", "main") == self.git("rev-parse", "main")

    def approve(self, *names: str) -> str:
        return self.mode.cli.ok("approve", "--repo", str(self.repo), *names)


@pytest.fixture
def guarded(tmp_path: Path, hermetic_environment: Path) -> Iterator[Guarded]:
    with git_mode(tmp_path, hermetic_environment, FILES) as mode:
        mode.cli.ok("hooks", "install", "--repo", str(mode.repo))
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
        mode.git("remote", "add", "origin", str(remote))
        mode.git("push", "-q", "-u", "origin", "main")
        mode.cli.open_session("s")
        yield Guarded(mode, remote)


def edit_of(result: dict[str, Any]) -> tuple[str, str]:
    [commit] = result["commits"]
    return commit["edit"], commit["commit"]


# --- (a) the policy file ---------------------------------------------------------------------


def flag(rule: str, path: str, reason: str) -> dict[str, str]:
    return {"rule": rule, "path": path, "reason": reason}


DEFAULT = "default (guard files: policy, hooks, CI)"
AUTH_RULE = "guard.protect[1] (migrations/**, src/auth/**)"


def test_an_exact_edit_that_unprotects_a_path_cannot_weaken_the_guard(guarded: Guarded) -> None:
    unprotect = guarded.edit(".redline.toml", POLICY, WEAKER)
    assert unprotect["match_type"] == "exact"
    assert unprotect["flags"] == [
        flag(DEFAULT, ".redline.toml", GUARD_FILE_REASON),
        # compared as parsed rules: what the change takes away is named
        flag(
            "policy change",
            ".redline.toml",
            f"weakens the guard policy: src/auth/** ({AUTH_RULE}): required match type exact; "
            "the new policy also takes " + ", ".join(sorted(set(MATCH_TYPES) - {"exact"})),
        ),
    ]
    policy_edit, policy_commit = edit_of(unprotect)
    # the next edit is judged by the policy the session started from: still protected
    login = guarded.edit(LOGIN, LOGIN_OLD, LOGIN_NEW)
    assert (login["match_type"], round(login["confidence"], 4)) == ("fuzzy", 0.9953)
    assert login["flags"] == [flag(AUTH_RULE, LOGIN, "match_type fuzzy is not one of: exact")]
    login_edit, login_commit = edit_of(login)

    guarded.land()
    assert guarded.refused() == (
        "redline guard: refused — 2 flagged edits not yet approved by a person:\n"
        f"  edit {policy_edit} (commit {policy_commit[:12]}): .redline.toml line 2, exact 1.0"
        f" — rule {DEFAULT}: {GUARD_FILE_REASON}\n"
        f"  edit {login_edit} (commit {login_commit[:12]}): {LOGIN} line 3, fuzzy 0.9953"
        f" — rule {AUTH_RULE} of .redline.toml before {PUSH}: match_type fuzzy is not one of:"
        " exact\n"
        "Review each edit's diff (`redline review`), then approve it with `redline approve "
        f"{policy_edit} {login_edit}` and push again.\n"
    )
    # The person approves the policy change: the remote's policy still protects
    # src/auth until the change has landed there, so the login edit still waits.
    assert (
        guarded.approve(policy_edit) == f"approved edit {policy_edit} (1 note(s)) as {REVIEWER}\n"
    )
    message = guarded.refused()
    assert message.startswith("redline guard: refused — 1 flagged edit not yet approved")
    assert f"edit {login_edit} (commit {login_commit[:12]}): {LOGIN} line 3, fuzzy" in message
    assert policy_edit not in message
    guarded.approve(login_edit)
    guarded.pushed()


def test_without_the_daemons_verdict_the_push_is_still_judged_by_the_remotes_policy(
    guarded: Guarded,
) -> None:
    """Even when the edit's note says "pass" (a tolerant edit the weakened policy let
    through), the policy the push starts from judges its evidence again."""
    unprotect = guarded.edit(".redline.toml", POLICY, WEAKER)
    policy_edit, _ = edit_of(unprotect)
    guarded.approve(policy_edit)  # approved: later sessions start from the weaker policy
    guarded.land()
    guarded.mode.cli.ok("session", "close", "s", "--repo", str(guarded.repo))
    guarded.mode.cli.open_session("t")
    code, login = guarded.mode.cli.apply(
        "t", {"tool": "edit", "path": LOGIN, "old_string": LOGIN_OLD, "new_string": LOGIN_NEW}
    )
    assert code == 0 and login.get("flags", []) == []  # src/auth is not protected in session t
    login_edit, login_commit = edit_of(login)
    guarded.git("merge", "-q", "--ff-only", "redline/t")
    message = guarded.refused()
    assert (
        f"  edit {login_edit} (commit {login_commit[:12]}): {LOGIN} line 3, fuzzy 0.9953"
        f" — rule {AUTH_RULE} of .redline.toml before {PUSH}: match_type fuzzy is not one of:"
        " exact\n"
    ) in message
    guarded.approve(login_edit)
    guarded.pushed()
    # Once the weaker policy is the remote's, it is the one in force.
    guarded.mode.cli.open_session("u")
    code, again = guarded.mode.cli.apply(
        "u",
        {
            "tool": "edit",
            "path": LOGIN,
            "old_string": "    if not check_pasword(user, password):\n        log_failed_login(user)\n",
            "new_string": (
                "    if not check_pasword(user, password):\n        log_failed_login(user)\n"
                "        raise PermissionError(user)\n"
            ),
        },
    )
    assert code == 0 and again["match_type"] == "fuzzy" and again.get("flags", []) == []
    guarded.git("merge", "-q", "--ff-only", "redline/u")
    guarded.pushed()


PRE_COMMIT_CONFIG = ".pre-commit-config.yaml"


@pytest.mark.parametrize(
    ("patch", "path", "what"),
    [
        ("*** Delete File: .redline.toml\n", ".redline.toml", "(deleted), delete"),
        (
            f"*** Add File: {PRE_COMMIT_CONFIG}\n+repos: []\n",
            PRE_COMMIT_CONFIG,
            "line 1, add",  # the lines of the file it added, where they are now
        ),
        (
            "*** Update File: .redline.toml\n*** Move to: old-policy.toml\n@@\n"
            ' paths = ["migrations/**", "src/auth/**"]\n-require = "exact"\n+require = "fuzzy"\n',
            ".redline.toml",
            "(deleted), delete",  # and its exact hunk is named in old-policy.toml
        ),
        (
            "*** Add File: .githooks/pre-push\n+#!/bin/sh\n+exit 0\n",
            ".githooks/pre-push",
            "lines 1-2, add",
        ),
    ],
    ids=["delete", "add-hook-config", "move-away", "add-hook"],
)
def test_adding_deleting_or_moving_the_guards_files_is_flagged(
    guarded: Guarded, patch: str, path: str, what: str
) -> None:
    result = guarded.apply(
        {"tool": "apply_patch", "patch": f"*** Begin Patch\n{patch}*** End Patch\n"}
    )
    assert flag(DEFAULT, path, GUARD_FILE_REASON) in result["flags"]
    edit, commit = edit_of(result)
    guarded.land()
    message = guarded.refused()
    assert (
        f"  edit {edit} (commit {commit[:12]}): {path} {what} — rule {DEFAULT}: "
        f"{GUARD_FILE_REASON}\n"
    ) in message
    guarded.approve(edit)
    guarded.pushed()


def test_the_agents_own_write_to_the_policy_file_is_flagged_too(guarded: Guarded) -> None:
    """A shell in the session's worktree is no way around: the change is committed as
    the session's external change, and flagged like an edit."""
    worktree = guarded.worktree
    (worktree / ".redline.toml").write_text(WEAKER)
    login = guarded.edit(LOGIN, LOGIN_OLD, LOGIN_NEW)
    external, agent = login["commits"]
    assert external["source"] == "external" and external["paths"] == [".redline.toml"]
    assert login["flags"] == [flag(AUTH_RULE, LOGIN, "match_type fuzzy is not one of: exact")]
    guarded.land()
    message = guarded.refused()
    assert message.startswith("redline guard: refused — 2 flagged edits not yet approved")
    assert (
        f"  edit {external['edit']} (commit {external['commit'][:12]}): .redline.toml line 2, "
        f"write — rule {DEFAULT}: {GUARD_FILE_REASON}\n"
    ) in message
    assert f"  edit {agent['edit']} (commit {agent['commit'][:12]}): {LOGIN}" in message
    guarded.approve(external["edit"], agent["edit"])
    guarded.pushed()


# --- (b) laundering a flagged edit -------------------------------------------------------------

LAUNDER_OLD = "    email TEXT UNIQUE,\n    created_at TIMESTAMP\n"
LAUNDER_NEW = "    email TEXT UNIQUE NOT NULL,\n    created_at TIMESTAMP NOT NULL\n"


def carried(edit: str, commit: str, path: str = MIGRATION) -> dict[str, str]:
    return {
        "rule": "carried flag",
        "path": path,
        "reason": (
            f"rewrites lines inserted by edit {edit} (commit {commit[:12]}), which is flagged "
            "and not yet approved; approving either edit clears this one"
        ),
        "edit": edit,
        "commit": commit,
    }


def test_an_exact_edit_that_rewrites_a_flagged_edit_carries_its_flag(guarded: Guarded) -> None:
    fuzzy = guarded.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW)
    assert fuzzy["match_type"] == "fuzzy" and fuzzy["flags"]
    first, first_commit = edit_of(fuzzy)
    launder = guarded.edit(MIGRATION, LAUNDER_OLD, LAUNDER_NEW)
    assert launder["match_type"] == "exact"
    assert launder["flags"] == [carried(first, first_commit)]
    second, second_commit = edit_of(launder)
    guarded.land()
    # the flagged edit's places hold its rewrite, not the text from before it: both are
    # refused, the rewrite for the flag it carries
    lead, *named, fix = guarded.refused().splitlines()
    assert lead == "redline guard: refused — 2 flagged edits not yet approved by a person:"
    assert sorted(named) == sorted(
        [
            f"  edit {first} (commit {first_commit[:12]}): {MIGRATION} lines 4-5, fuzzy "
            f"{shown_confidence(fuzzy['confidence'])} — "
            f"rule {AUTH_RULE}: match_type fuzzy is not one of: exact",
            f"  edit {second} (commit {second_commit[:12]}): {MIGRATION} lines 4-5, exact 1.0 — "
            f"rule carried flag: rewrites lines inserted by edit {first} (commit "
            f"{first_commit[:12]}), which is flagged and not yet approved; approving either edit "
            "clears this one",
        ]
    )
    assert fix in (
        "Review each edit's diff (`redline review`), then approve it with "
        f"`redline approve {a} {b}` and push again."
        for a, b in ((first, second), (second, first))
    )
    # approving the earlier edit clears the one that carries its flag
    guarded.approve(first)
    guarded.pushed()


def test_a_rewrite_through_a_patch_or_the_agents_shell_carries_the_flag(guarded: Guarded) -> None:
    first, first_commit = edit_of(guarded.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW))
    patch = (
        "*** Begin Patch\n"
        f"*** Update File: {MIGRATION}\n*** Move to: migrations/002_users.sql\n@@\n"
        "     name TEXT NOT NULL,\n"
        "-    email TEXT UNIQUE,\n"
        "+    email TEXT UNIQUE NOT NULL,\n"
        "*** End Patch\n"
    )
    moved = guarded.apply({"tool": "apply_patch", "patch": patch})
    assert carried(first, first_commit, "migrations/002_users.sql") in moved["flags"]
    worktree = guarded.worktree
    text = (worktree / "migrations/002_users.sql").read_text()
    (worktree / "migrations/002_users.sql").write_text(
        text.replace("    created_at TIMESTAMP\n", "    created_on DATE\n")
    )
    unrelated = guarded.edit(APP, "serve(port=8000)", "serve(port=8080)")
    external, _ = unrelated["commits"]
    assert external["source"] == "external"
    assert unrelated.get("flags", []) == []  # the agent's own edit touches nothing flagged
    guarded.land()
    message = guarded.refused()
    # the flagged edit itself, followed to the file's new name, and the two changes that
    # carry its flag: the move, and the agent's own rewrite after it
    assert "3 flagged edits not yet approved" in message
    assert (
        f"  edit {first} (commit {first_commit[:12]}): migrations/002_users.sql lines 4-5 "
        f"(edited as {MIGRATION}), fuzzy"
    ) in message
    assert f"edit {edit_of(moved)[0]} " in message
    assert (
        f"  edit {external['edit']} (commit {external['commit'][:12]}): migrations/002_users.sql "
        "line 5, write — rule carried flag: rewrites lines inserted by edit "
    ) in message
    guarded.approve(first)
    guarded.pushed()


# --- (c) evidence removed ----------------------------------------------------------------------


def missing_message(edits: list[tuple[str, str]], again: str = "push") -> str:
    count = len(edits)
    lead = (
        "redline guard: refused — 1 edit commit carries"
        if count == 1
        else f"redline guard: refused — {count} edit commits carry"
    )
    listed = "".join(f"  evidence missing for edit {e} (commit {c[:12]})\n" for e, c in edits)
    commits = " ".join(c[:12] for _, c in edits)
    return (
        f"{lead} a Redline-Edit trailer but no evidence note in refs/notes/redline, so "
        + ("it counts" if count == 1 else "they count")
        + " as unapproved:\n"
        + listed
        + "Fetch the notes that hold the evidence (`git fetch <remote> "
        "refs/notes/redline:refs/notes/redline`), or ask a person to review each commit's diff "
        f"and approve it without its evidence (`redline approve {commits}`) and {again} again.\n"
    )


def test_deleting_the_notes_ref_lets_nothing_through(guarded: Guarded) -> None:
    exact = edit_of(guarded.edit(APP, "serve(port=8000)", "serve(port=8080)"))
    fuzzy = edit_of(guarded.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW))
    guarded.land()
    guarded.git("update-ref", "-d", "refs/notes/redline")
    assert guarded.refused() == missing_message([exact, fuzzy])
    # review lists them too, with their diffs
    items = guarded.mode.cli.json("review", "--json", "--repo", str(guarded.repo))
    assert sorted((i["edit"], i["commit"], i["path"], i["rule"]) for i in items) == sorted(
        [
            (exact[0], exact[1], APP, "evidence missing"),
            (fuzzy[0], fuzzy[1], MIGRATION, "evidence missing"),
        ]
    )
    out = guarded.approve(exact[1], fuzzy[1])
    assert out == "".join(
        f"approved edit {e} (1 note(s)) as {REVIEWER}\n  commit {c[:12]} had no evidence note: "
        "a new note records that the evidence was missing and this approval\n"
        for e, c in (exact, fuzzy)
    )
    note = json.loads(guarded.git("notes", "--ref=redline", "show", fuzzy[1]))
    assert note["edit"] == fuzzy[0]
    assert note["policy"]["verdict"] == "flagged"
    assert note["policy"]["violations"][0]["rule"] == "evidence missing"
    assert [a["by"] for a in note["approvals"]] == [REVIEWER]
    guarded.pushed()


def test_removing_one_note_blocks_that_edit(guarded: Guarded) -> None:
    exact = edit_of(guarded.edit(APP, "serve(port=8000)", "serve(port=8080)"))
    fuzzy = edit_of(guarded.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW))
    guarded.land()
    guarded.git("notes", "--ref=redline", "remove", fuzzy[1])
    assert guarded.refused() == missing_message([fuzzy])
    assert exact[0] not in guarded.refused()
    guarded.approve(fuzzy[0])  # by the edit id works as well as by the commit
    guarded.pushed()


def test_fetching_the_notes_again_is_the_other_way_out(guarded: Guarded) -> None:
    exact = edit_of(guarded.edit(APP, "serve(port=8000)", "serve(port=8080)"))
    guarded.git("push", "-q", "origin", "refs/notes/redline")  # the team's copy of the evidence
    guarded.land()
    guarded.git("update-ref", "-d", "refs/notes/redline")
    assert guarded.refused() == missing_message([exact])
    guarded.git("fetch", "-q", "origin", "refs/notes/redline:refs/notes/redline")
    guarded.pushed()


def test_commit_and_merge_hooks_fail_closed_too(guarded: Guarded) -> None:
    exact = edit_of(guarded.edit(APP, "serve(port=8000)", "serve(port=8080)"))
    guarded.git("update-ref", "-d", "refs/notes/redline")
    guarded.git("merge", "-q", "--squash", "redline/s")
    proc = guarded.run_git("commit", "-q", "-m", "squash")
    assert proc.returncode != 0
    assert proc.stderr == missing_message([exact], "commit")
    guarded.git("reset", "-q", "--hard")
    (guarded.repo / "CHANGES.md").write_text("main moved on\n")
    guarded.git("add", "CHANGES.md")
    guarded.git("commit", "-q", "-m", "changes")
    proc = guarded.run_git("merge", "--no-ff", "-m", "merge s", "redline/s")
    assert proc.returncode != 0
    assert proc.stderr == missing_message([exact], "commit") + (
        "Not committing merge; use 'git commit' to complete the merge.\n"
    )
    guarded.git("merge", "--abort")
    guarded.approve(exact[1])
    guarded.git("merge", "-q", "--no-ff", "-m", "merge s", "redline/s")
    guarded.pushed()


# --- (d) approval over the socket -------------------------------------------------------------


def call(path: Path, message: dict[str, Any]) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(path))
        sock.sendall(json.dumps(message).encode() + b"\n")
        with sock.makefile("rb") as reader:
            answer = json.loads(reader.readline())
    assert isinstance(answer, dict)
    return answer


def test_an_agent_cannot_approve_its_own_edit_over_the_socket(guarded: Guarded) -> None:
    edit, commit = edit_of(guarded.edit(MIGRATION, FUZZY_OLD, FUZZY_NEW))
    request = {"jsonrpc": "2.0", "id": 7, "method": "approve", "params": {"edits": [edit]}}
    answer = call(guarded.mode.socket(), request)
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32601,
            "message": "method not found",
            "data": answer["error"]["data"],
        },
    }
    assert answer["error"]["data"].startswith("'approve'; known: ")
    assert "approve" not in answer["error"]["data"].removeprefix("'approve'")
    guarded.land()
    assert f"edit {edit} (commit {commit[:12]})" in guarded.refused()
    # the person's `redline approve` needs no daemon, and starts none
    guarded.mode.cli.stop()
    assert guarded.mode.cli.pid() is None
    guarded.approve(edit)
    assert guarded.mode.cli.pid() is None
    assert not guarded.mode.cli.status()["running"]
    guarded.pushed()
