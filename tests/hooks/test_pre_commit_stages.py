"""The README's pre-commit configuration guards every stage after a plain
``pre-commit install``.

The configuration is the README's snippet itself, with ``repo:`` a git clone of
this project at its committed HEAD (pre-commit clones it and reads
``.pre-commit-hooks.yaml`` from it, as from any hook repository). To stay
offline the hook's ``language`` is overridden to ``system`` — pre-commit then
runs the manifest's ``entry`` (``redline guard``) from PATH, where a shim runs
this tree's redline — instead of pip-installing redline into a virtualenv
(``test_pre_commit_framework.py`` does that, with the network).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from guard_fixtures import (
    Flagged,
    flagged_edit,
    head,
    pre_commit,
    redline,
    redline_on_path,
    refusal,
    run_git,
    user_repo,
)

from gitmode_fixtures import git

# Real pre-commit installed as the git hooks, run by real git commands.
pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).resolve().parents[2]


def readme_config() -> str:
    text = (PROJECT / "README.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "rev:" in b]
    [block] = [b for b in blocks if "default_install_hook_types" in b]
    return block


@pytest.fixture
def hook_repo(tmp_path: Path) -> Path:
    """This project, cloned as pre-commit clones a hook repository."""
    if not (PROJECT / ".git").exists():
        pytest.skip(f"{PROJECT} is not a git repository; pre-commit clones hook repositories")
    clone = tmp_path / "redline-hooks"
    git(tmp_path, "clone", "-q", "--no-hardlinks", str(PROJECT), str(clone))
    if not (clone / ".pre-commit-hooks.yaml").exists():
        pytest.skip(".pre-commit-hooks.yaml is not committed; pre-commit reads committed files")
    return clone


@pytest.fixture
def env(tmp_path: Path, pre_commit_cache: dict[str, str]) -> dict[str, str]:
    """The run's pre-commit caches, and ``redline`` on PATH running this tree."""
    return {**os.environ, **pre_commit_cache, "PATH": redline_on_path(tmp_path / "shims")}


def configured(repo: Path, hook_repo: Path) -> None:
    """The README's snippet, pointing at ``hook_repo``, committed in ``repo``."""
    config = readme_config()
    assert "      - id: redline-guard\n" in config
    config = (
        config.replace("<this repository>", str(hook_repo))
        .replace("<a tag or commit>", head(hook_repo))
        .replace(
            "      - id: redline-guard\n", "      - id: redline-guard\n        language: system\n"
        )
    )
    (repo / ".pre-commit-config.yaml").write_text(config)
    git(repo, "add", ".pre-commit-config.yaml")
    git(repo, "commit", "-q", "-m", "pre-commit configuration")


def install(repo: Path, env: dict[str, str]) -> None:
    proc = subprocess.run(
        [*pre_commit(), "install"], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for hook in ("pre-commit", "pre-merge-commit", "pre-push"):
        assert f"pre-commit installed at .git/hooks/{hook}\n" in proc.stdout, proc.stdout


def git_env(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """git with pre-commit's hooks; pre-commit prints a hook's output on stdout: it is
    put with git's stderr, where a plain hook's goes."""
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )
    return subprocess.CompletedProcess(proc.args, proc.returncode, "", proc.stdout + proc.stderr)


def setup(tmp_path: Path, hook_repo: Path, env: dict[str, str], push_first: bool) -> Flagged:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    repo = user_repo(tmp_path / "repo")
    configured(repo, hook_repo)
    git(repo, "remote", "add", "origin", str(origin))
    if push_first:
        git(repo, "push", "-q", "origin", "main")
    install(repo, env)
    f = flagged_edit(repo)
    git(repo, "merge", "-q", "--ff-only", f.branch)  # a fast-forward runs no commit hook
    return f


@pytest.mark.parametrize("push_first", [True, False], ids=["remote-has-main", "first-push"])
def test_a_fast_forward_and_push_of_a_flagged_edit_is_refused(
    tmp_path: Path, hook_repo: Path, env: dict[str, str], push_first: bool
) -> None:
    f = setup(tmp_path, hook_repo, env, push_first)
    origin = tmp_path / "origin.git"
    before = run_git(origin, "rev-parse", "-q", "--verify", "main").stdout

    message = refusal(git_env(f.repo, env, "push", "origin", "main"))
    assert "redline guard: refused — 1 flagged edit not yet approved by a person:" in message
    assert f"  edit {f.edit} (commit {f.commit[:12]}): " in message
    assert f"`redline approve {f.edit}` and push again." in message
    assert run_git(origin, "rev-parse", "-q", "--verify", "main").stdout == before

    redline(f.repo, "approve", f.edit, "--repo", str(f.repo), check=True)
    pushed = git_env(f.repo, env, "push", "origin", "main")
    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    assert git(origin, "rev-parse", "main") == git(f.repo, "rev-parse", "main")
    # the pre-push stage pushed the evidence with the commits
    note = git(origin, "notes", "--ref=redline", "show", f.commit)
    assert f'"edit": "{f.edit}"' in note and "repo-user@example.com" in note


def test_a_merge_commit_is_refused_by_the_pre_merge_commit_stage(
    tmp_path: Path, hook_repo: Path, env: dict[str, str]
) -> None:
    repo = user_repo(tmp_path / "repo")
    configured(repo, hook_repo)
    install(repo, env)
    f = flagged_edit(repo)
    (repo / "NOTES.md").write_text("main moves on\n")
    git(repo, "add", "NOTES.md")
    git_env(repo, env, "commit", "-q", "-m", "notes")
    before = head(repo)
    proc = git_env(repo, env, "merge", "--no-ff", "-m", "merge the session", f.branch)
    assert f"`redline approve {f.edit}` and commit again." in refusal(proc)
    assert head(repo) == before
