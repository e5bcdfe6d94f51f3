"""The guard through the real pre-commit framework (``.pre-commit-hooks.yaml``).

A ``.pre-commit-config.yaml`` entry for this project at its committed HEAD, as a
user writes it, makes pre-commit clone the project, build a virtualenv and
pip-install redline from it, then run the hook in a user repository. That build
is the slow part (seconds; tens of them where pip must install the dependencies
too, some 350 MB); ``hook_environment`` does it once, with ``pre-commit
install-hooks`` into the run's one pre-commit store (``pre_commit_cache``), so
``--durations`` shows it as the setup of the first test that uses it, and each
``pre-commit run`` of the tests finds the environment built. ``pre-commit
try-repo`` always uses a temporary store of its own, where a ``language: python`` hook would be built
again from scratch; its test proves what try-repo adds — the hook repository's
uncommitted changes are what runs — so the uncommitted manifest there also makes
the hook ``language: system``, whose ``entry: redline guard`` runs this tree's
redline from PATH (the build itself is proved above). HOME stays empty, so every
cache location is set explicitly.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from guard_fixtures import (
    Flagged,
    flagged_edit,
    pre_commit,
    redline,
    redline_on_path,
    user_repo,
)

from gitmode_fixtures import git
from support.env import assert_untouched, hermetic

# Real pre-commit, building a real virtualenv with redline pip-installed into it.
pytestmark = [pytest.mark.slow, pytest.mark.e2e]

PROJECT = Path(__file__).resolve().parents[2]
HOOK_ID = "redline-guard"
TIMEOUT = 600  # builds a virtualenv and installs redline with its dependencies


def tracked_changes(root: Path) -> bool:
    return bool(git(root, "status", "--porcelain", "--untracked-files=no").strip())


@pytest.fixture(scope="module")
def project() -> Path:
    """This project as a hook repository: a git repository with the manifest committed."""
    if not (PROJECT / ".git").exists():
        pytest.skip(f"{PROJECT} is not a git repository; try-repo needs one")
    listed = subprocess.run(
        ["git", "ls-files", "--error-unmatch", ".pre-commit-hooks.yaml"],
        cwd=PROJECT,
        capture_output=True,
        timeout=60,
    )
    if listed.returncode != 0:
        pytest.skip(".pre-commit-hooks.yaml is not committed; try-repo reads committed files")
    return PROJECT


@pytest.fixture
def caches(pre_commit_cache: dict[str, str]) -> dict[str, str]:
    """The run's one pre-commit store, pip cache and virtualenv app data."""
    return pre_commit_cache


def configuration(folder: Path, hook_repo: Path) -> Path:
    """The guard configured as a user configures it, in ``folder``: this project at its
    HEAD commit."""
    rev = git(hook_repo, "rev-parse", "HEAD").strip()
    config = folder / f"pre-commit-config-{rev[:12]}.yaml"
    config.write_text(
        f"repos:\n-   repo: {hook_repo}\n    rev: {rev}\n    hooks:\n    -   id: {HOOK_ID}\n"
    )
    return config


@pytest.fixture(scope="module")
def hook_environment(
    project: Path, pre_commit_cache: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The hook's environment, built as pre-commit builds it on a configuration's first
    use (the project cloned at HEAD, a virtualenv, redline built from that clone and
    pip-installed), once for this module, as hermetically as a test runs.

    The virtualenv sees the site-packages of the interpreter running the tests
    (``VIRTUALENV_SYSTEM_SITE_PACKAGES``), where the README's install command put
    redline's dependencies from the same metadata: pip finds them satisfied instead of
    unpacking ~350 MB again (15 s of its CPU, most of the build). Redline itself is
    still built and installed into the environment from the configured commit, and
    the hook must import it from there, not from this checkout. Where that
    interpreter lacks a dependency, pip installs it into the environment as before.
    """
    folder = tmp_path_factory.mktemp("hook-environment")
    with pytest.MonkeyPatch.context() as patch:
        home = hermetic(tmp_path_factory, patch)
        git(folder, "init", "-q", "repo")
        proc = subprocess.run(
            [*pre_commit(), "install-hooks", "--config", str(configuration(folder, project))],
            cwd=folder / "repo",
            env={**os.environ, **pre_commit_cache, "VIRTUALENV_SYSTEM_SITE_PACKAGES": "1"},
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert_untouched(home)
    assert proc.returncode == 0, output(proc)
    [python] = Path(pre_commit_cache["PRE_COMMIT_HOME"]).glob("repo*/py_env-*/bin/python")
    # redline, built from the configured commit into the environment, and what it imports
    # (the MCP SDK is found, not imported: its import alone takes a second and more)
    imported = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util, redline.cli.guard_hook, pygit2, pydantic, tree_sitter;"
            "assert importlib.util.find_spec('mcp') is not None, 'no mcp';"
            "print(redline.__file__)",
        ],
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert imported.returncode == 0, imported.stderr
    assert Path(imported.stdout.strip()).is_relative_to(python.parents[1]), imported.stdout
    return python


def configured(
    repo: Path, hook_repo: Path, caches: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    """``pre-commit run`` of the guard, configured as a user configures it: this project
    at a commit (the configuration lies outside the repository, as try-repo's does)."""
    config = configuration(repo.parent, hook_repo)
    env = {**os.environ, **caches}
    return subprocess.run(
        [*pre_commit(), "run", "--config", str(config), "--verbose", *extra],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def try_repo(
    repo: Path, hook_repo: Path, caches: dict[str, str], *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **caches, "PATH": redline_on_path(repo.parent / "shims")}
    return subprocess.run(
        [*pre_commit(), "try-repo", str(hook_repo), HOOK_ID, "--verbose", *extra],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def output(proc: subprocess.CompletedProcess[str]) -> str:
    return proc.stdout + proc.stderr


def assert_refused(proc: subprocess.CompletedProcess[str], f: Flagged) -> None:
    text = output(proc)
    assert proc.returncode == 1, text
    assert "redline guard" in text and "Failed" in text, text
    assert "redline guard: refused — 1 flagged edit not yet approved" in text, text
    assert f"edit {f.edit} (commit {f.commit[:12]})" in text, text
    assert f"`redline approve {f.edit}`" in text, text


def assert_passed(proc: subprocess.CompletedProcess[str]) -> None:
    text = output(proc)
    assert proc.returncode == 0, text
    assert "Passed" in text, text
    assert "refused" not in text, text


def test_a_configured_hook_refuses_a_staged_flagged_edit_until_approved(
    tmp_path: Path, project: Path, caches: dict[str, str], hook_environment: Path
) -> None:
    repo = user_repo(tmp_path / "repo")
    f = flagged_edit(repo)
    git(repo, "merge", "--squash", f.branch)

    refused = configured(repo, project, caches)
    assert_refused(refused, f)
    assert "Installing environment" not in output(refused)  # the one built for the run
    redline(repo, "approve", f.edit, check=True)
    assert_passed(configured(repo, project, caches))


def test_a_configured_hook_at_the_pre_push_stage_checks_the_pushed_range(
    tmp_path: Path, project: Path, caches: dict[str, str], hook_environment: Path
) -> None:
    repo = user_repo(tmp_path / "repo")
    f = flagged_edit(repo)
    git(repo, "merge", "--squash", f.branch)
    git(repo, "commit", "-q", "--no-verify", "-m", "sneaky")
    push = ("--hook-stage", "pre-push", "--from-ref", f.base, "--to-ref", "HEAD")

    assert_refused(configured(repo, project, caches, *push), f)
    redline(repo, "approve", f.commit, check=True)
    assert_passed(configured(repo, project, caches, *push))


def test_try_repo_uses_uncommitted_changes_of_the_hook_repository(
    tmp_path: Path, project: Path, caches: dict[str, str]
) -> None:
    clone = tmp_path / "redline-clone"
    git(tmp_path, "clone", "-q", "--no-hardlinks", str(project), str(clone))
    manifest = clone / ".pre-commit-hooks.yaml"
    text = manifest.read_text()
    assert "name: redline guard\n" in text
    assert "language: python\n" in text
    manifest.write_text(
        text.replace("name: redline guard\n", "name: redline guard (uncommitted)\n").replace(
            "language: python\n", "language: system\n"
        )
    )
    assert tracked_changes(clone)

    repo = user_repo(tmp_path / "repo")
    f = flagged_edit(repo)
    git(repo, "merge", "--squash", f.branch)
    proc = try_repo(repo, clone, caches)
    assert "Creating temporary repo with uncommitted changes" in output(proc)
    assert "redline guard (uncommitted)" in output(proc)
    assert_refused(proc, f)
