"""A policy file that does not parse never gets past the guard.

A broken ``.redline.toml`` used to be committed silently, and the next agent
edit then met a policy nobody could read. The guard now refuses a commit (the
staged file) or a push (the pushed tip) whose policy does not parse or
validate, naming the file, the line and column or the key, the parser's
reason, and how to fix it. Real repositories, real hooks, real ``git``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from guard_fixtures import install_hooks, redline, refusal, run_git, user_repo

from gitmode_fixtures import git, make_repo

BROKEN = '[guard]\naction = "review\n'  # the string is never closed
TOML_PROBLEM = "line 2, column 17: not valid TOML: Illegal character '\\n'"
NEVER_GUESS = "every later agent edit would be judged by a policy redline cannot read."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = user_repo(tmp_path / "repo")
    install_hooks(path)
    return path


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def test_committing_a_policy_that_does_not_parse_is_refused(repo: Path) -> None:
    before = head(repo)
    (repo / ".redline.toml").write_text(BROKEN)
    git(repo, "add", ".redline.toml")
    proc = run_git(repo, "commit", "-m", "tweak the policy")
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert refusal(proc) == (
        "redline guard: refused — the guard policy in the commit cannot be read:\n"
        f"  .redline.toml, {TOML_PROBLEM}\n"
        "Fix .redline.toml (the README's Guard section shows the format), stage it with "
        f"`git add .redline.toml` and commit again: {NEVER_GUESS}\n"
    )
    assert head(repo) == before

    # the advice works
    (repo / ".redline.toml").write_text('[guard]\naction = "review"\n')
    git(repo, "add", ".redline.toml")
    assert run_git(repo, "commit", "-m", "tweak the policy").returncode == 0


def test_a_policy_that_parses_but_does_not_validate_is_refused_naming_the_key(
    repo: Path,
) -> None:
    (repo / ".redline.toml").write_text(
        '[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exactly"\n'
    )
    git(repo, "add", ".redline.toml")
    message = refusal(run_git(repo, "commit", "-m", "policy"))
    assert (
        "  .redline.toml, guard.protect[1].require: unknown match type 'exactly'; use exact, "
        in message
    )
    assert "stage it with `git add .redline.toml` and commit again" in message


def test_a_broken_pyproject_carrying_the_policy_is_refused(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo",
        {"pyproject.toml": '[tool.redline.guard]\naction = "review"\n', "a.py": "x = 1\n"},
    )
    install_hooks(repo)
    (repo / "pyproject.toml").write_text('[tool.redline.guard]\naction = "review"\n[tool\n')
    git(repo, "add", "pyproject.toml")
    message = refusal(run_git(repo, "commit", "-m", "pyproject"))
    assert (
        "  pyproject.toml, line 3, column 6: not valid TOML: Expected ']' at the end of a "
        "table declaration\n" in message
    )
    assert "Fix pyproject.toml " in message
    assert "stage it with `git add pyproject.toml`" in message

    (repo / "pyproject.toml").write_text('[tool.redline.guard]\naction = "block"\n')
    git(repo, "add", "pyproject.toml")
    message = refusal(run_git(repo, "commit", "-m", "pyproject"))
    assert "  pyproject.toml [tool.redline], guard.action: must be one of " in message
    assert "stage it with `git add pyproject.toml`" in message


def test_a_push_carrying_a_broken_policy_is_refused(repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    pushed = head(repo)
    (repo / ".redline.toml").write_text(BROKEN)
    git(repo, "add", ".redline.toml")
    git(repo, "commit", "-q", "--no-verify", "-m", "past the commit hook")
    proc = run_git(repo, "push", "origin", "main")
    message = refusal(proc)
    assert "Traceback" not in proc.stderr
    assert (
        "redline guard: refused — the guard policy in the push of refs/heads/main to "
        "refs/heads/main cannot be read:\n"
        f"  .redline.toml, {TOML_PROBLEM}\n"
        "Fix .redline.toml (the README's Guard section shows the format), commit the fixed "
        f"file and push again: {NEVER_GUESS}\n"
    ) in message
    assert git(remote, "rev-parse", "main").strip() == pushed

    (repo / ".redline.toml").write_text('[guard]\naction = "review"\n')
    git(repo, "commit", "-q", "-am", "fix the policy")
    assert run_git(repo, "push", "-q", "origin", "main").returncode == 0


def test_a_range_from_the_pre_commit_framework_checks_its_tip(repo: Path) -> None:
    base = head(repo)
    (repo / ".redline.toml").write_text(BROKEN)
    git(repo, "commit", "-q", "--no-verify", "-am", "broken")
    env = {**os.environ, "PRE_COMMIT_FROM_REF": base, "PRE_COMMIT_TO_REF": "HEAD"}
    proc = redline(repo, "guard", env=env)
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        "redline guard: refused — the guard policy in the push cannot be read:\n"
        f"  .redline.toml, {TOML_PROBLEM}\n"
    )


def test_a_commit_of_other_files_under_a_broken_committed_policy_is_refused_too(
    repo: Path,
) -> None:
    """The policy the commit would leave in force is what counts, touched or not."""
    (repo / ".redline.toml").write_text(BROKEN)
    git(repo, "commit", "-q", "--no-verify", "-am", "broken")
    (repo / "CHANGES.md").write_text("x\n")
    git(repo, "add", "CHANGES.md")
    message = refusal(run_git(repo, "commit", "-m", "notes"))
    assert f"  .redline.toml, {TOML_PROBLEM}\n" in message
    direct = redline(repo, "guard")
    assert direct.returncode == 1 and f"  .redline.toml, {TOML_PROBLEM}\n" in direct.stderr
