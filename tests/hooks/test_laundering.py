"""Flagged edits that used to pass every gate, end to end: installed hooks, a bare remote.

Reproductions of three ways a flagged edit reached a branch unapproved while
the guard compared sets of stripped lines (``src/auth/**`` protected with
``require = "exact"``):

1. an edit whose lines already occur in the file (``return False`` turned into
   ``return True`` where ``return True`` is two lines up);
2. an edit that only reorders and re-indents lines;
3. a move (an apply_patch ``*** Move to`` with a context-only hunk, into the
   protected folder or out of it, or a ``write`` of a copy and a ``delete`` of
   the original).

Each is put to every gate as a person would: ``redline review``, ``redline guard
--range``, a hooked ``git merge --squash`` + ``git commit``, a hooked merge
commit, ``redline land --merge`` and ``--squash``, and a push — and the bare
remote is checked to hold nothing of the edit until a person approves it; then
it lands and reaches the remote.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from guard_fixtures import Agent, agent, head, install_hooks, redline, refusal, run_git

from gitmode_fixtures import git, make_repo
from redline.engine.write import DeleteRequest, WriteRequest

POLICY = '[[guard.protect]]\npaths = ["src/auth/**"]\nrequire = "exact"\n'
CHECK = "src/auth/check.py"
CHECK_TEXT = """\
def is_admin(user):
    if user.role == "admin":
        return True
    return False


def can_delete(user, item):
    if item.owner == user:
        return True
    return False
"""
ITEMS = "src/auth/items.py"
ITEMS_TEXT = """\
def remove(user, item):
    if can_delete(user, item):
        item.delete()
    return item
"""


@dataclass
class Guarded:
    repo: Path
    remote: Path
    agent: Agent

    def remote_file(self, path: str) -> str | None:
        done = run_git(self.remote, "show", f"main:{path}")
        return done.stdout if done.returncode == 0 else None


@pytest.fixture
def guarded(tmp_path: Path) -> Guarded:
    repo = make_repo(
        tmp_path / "repo",
        {".redline.toml": POLICY, CHECK: CHECK_TEXT, ITEMS: ITEMS_TEXT, "README.md": "hi\n"},
    )
    install_hooks(repo)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    return Guarded(repo, remote, agent(repo))


def applied(result: dict[str, Any], flagged: bool) -> tuple[str, str]:
    assert result["status"] == "applied", result
    assert bool(result["flags"]) is flagged, result
    made = result["commits"][-1]
    return made["edit"], made["commit"]


def every_gate_refuses(g: Guarded, edit: str, named: str) -> None:
    """Every way onto main refuses, naming ``edit`` and ``named`` (path and lines);
    main and the remote are left as they were."""
    base = head(g.repo)
    remote = head(g.remote, "main")
    waiting = json.loads(redline(g.repo, "review", "--repo", str(g.repo), "--json").stdout)
    assert edit in {item["edit"] for item in waiting}

    proc = redline(g.repo, "guard", "--range", f"main..{g.agent.branch}")
    assert proc.returncode == 1, proc.stdout
    assert f"  edit {edit} (commit " in proc.stdout and named in proc.stdout, proc.stdout

    git(g.repo, "merge", "--squash", g.agent.branch)
    message = refusal(run_git(g.repo, "commit", "-m", "the session, squashed"))
    assert f"edit {edit} " in message and named in message, message
    git(g.repo, "reset", "-q", "--hard", "HEAD")

    message = refusal(run_git(g.repo, "merge", "--no-ff", "-m", "merge", g.agent.branch))
    assert f"edit {edit} " in message, message
    run_git(g.repo, "merge", "--abort")

    for how in ("--merge", "--squash"):
        proc = redline(g.repo, "land", g.agent.name, how, "--repo", str(g.repo))
        assert proc.returncode == 1, proc.stderr
        assert f"edit {edit} " in proc.stderr and named in proc.stderr, proc.stderr

    # committed past the hooks, it is still stopped at the push
    git(g.repo, "merge", "--squash", g.agent.branch)
    git(g.repo, "commit", "-q", "--no-verify", "-m", "sneaky")
    message = refusal(run_git(g.repo, "push", "origin", "main"))
    assert f"edit {edit} " in message and named in message, message
    git(g.repo, "reset", "-q", "--hard", base)
    assert head(g.repo) == base and head(g.remote, "main") == remote


def lands_once_approved(g: Guarded, *edits: str) -> None:
    redline(g.repo, "approve", "--repo", str(g.repo), *edits, check=True)
    assert redline(g.repo, "guard", "--range", f"main..{g.agent.branch}").returncode == 0
    redline(g.repo, "land", g.agent.name, "--squash", "--repo", str(g.repo), check=True)
    git(g.repo, "push", "-q", "origin", "main")
    assert head(g.remote, "main") == head(g.repo)


def allow_delete(g: Guarded) -> tuple[str, str]:
    """Reproduction 1's edit: can_delete's final ``return False`` turned into
    ``return True``, quoted with two spaces where the file has four."""
    result = g.agent.edit(
        CHECK,
        "  if item.owner == user:\n    return True\n  return False\n",
        "  if item.owner == user:\n    return True\n  return True\n",
    )
    assert (result["match_type"], result["confidence"]) == ("whitespace", 0.95)
    return applied(result, flagged=True)


def test_an_edit_whose_lines_already_occur_in_the_file_is_refused(guarded: Guarded) -> None:
    edit, commit = allow_delete(guarded)
    assert git(guarded.repo, "show", f"{commit}:{CHECK}").endswith(
        "        return True\n    return True\n"
    )
    every_gate_refuses(guarded, edit, f"{CHECK} line 10, whitespace 0.95")
    assert guarded.remote_file(CHECK) == CHECK_TEXT  # deny stays deny on the remote
    lands_once_approved(guarded, edit)
    allowed = CHECK_TEXT[: CHECK_TEXT.rindex("    return False\n")] + "    return True\n"
    assert guarded.remote_file(CHECK) == allowed


def test_an_edit_that_only_reorders_and_reindents_lines_is_refused(guarded: Guarded) -> None:
    result = guarded.agent.edit(
        ITEMS,
        "  if can_delete(user, item):\n    item.delete()\n  return item\n",
        "  item.delete()\n  if can_delete(user, item):\n    return item\n",
    )
    edit, commit = applied(result, flagged=True)
    shown = git(guarded.repo, "show", f"{commit}:{ITEMS}")
    # the same lines, stripped, in another order and at other depths
    assert sorted(line.strip() for line in shown.splitlines()) == sorted(
        line.strip() for line in ITEMS_TEXT.splitlines()
    )
    every_gate_refuses(guarded, edit, f"{ITEMS} line 2, line 4, whitespace 0.95")
    assert guarded.remote_file(ITEMS) == ITEMS_TEXT
    lands_once_approved(guarded, edit)
    assert guarded.remote_file(ITEMS) == shown


@pytest.mark.parametrize(
    "destination", ["src/auth/check_v2.py", "lib/check.py"], ids=["protected", "unprotected"]
)
def test_a_move_carries_the_flag_to_the_new_name(guarded: Guarded, destination: str) -> None:
    edit, _ = allow_delete(guarded)
    moved = guarded.agent.patch(
        f"*** Update File: {CHECK}\n*** Move to: {destination}\n@@\n def is_admin(user):\n"
    )
    move, _ = applied(moved, flagged=True)
    assert moved["flags"][0]["rule"] == "carried flag"
    assert moved["flags"][0]["edit"] == edit
    # the edit itself is named where its line is now, under the file's new name
    every_gate_refuses(guarded, edit, f"{destination} line 10 (edited as {CHECK}), whitespace")
    assert guarded.remote_file(destination) is None
    assert guarded.remote_file(CHECK) == CHECK_TEXT
    # the move's commit is refused too, for the flag it carries (named in the refusal)
    proc = redline(guarded.repo, "guard", "--range", f"main..{guarded.agent.branch}")
    assert f"  edit {move} (commit " in proc.stdout and "rule carried flag" in proc.stdout
    lands_once_approved(guarded, edit)  # approving the edit clears the flag the move carries
    assert (guarded.remote_file(destination) or "").endswith(
        "        return True\n    return True\n"
    )
    assert guarded.remote_file(CHECK) is None


def test_a_copy_written_then_the_original_deleted_carries_the_flag(guarded: Guarded) -> None:
    edit, commit = allow_delete(guarded)
    text = git(guarded.repo, "show", f"{commit}:{CHECK}")
    copy = guarded.agent.applier.apply(WriteRequest("src/auth/permissions.py", text)).to_dict()
    applied(copy, flagged=True)
    assert copy["flags"][0]["edit"] == edit
    gone = guarded.agent.applier.apply(DeleteRequest(CHECK)).to_dict()
    applied(gone, flagged=False)  # deleting takes the lines along: nothing to carry
    every_gate_refuses(guarded, edit, "src/auth/permissions.py line 10 (edited as ")
    assert guarded.remote_file("src/auth/permissions.py") is None
    lands_once_approved(guarded, edit)
    assert guarded.remote_file("src/auth/permissions.py") == text


def test_the_old_gate_would_have_passed_these(guarded: Guarded) -> None:
    """What made them pass: every line the edit wrote, stripped, was already in the file."""
    _, commit = allow_delete(guarded)
    after = {line.strip() for line in git(guarded.repo, "show", f"{commit}:{CHECK}").splitlines()}
    assert after <= {line.strip() for line in CHECK_TEXT.splitlines()}
