"""Real git repositories in ``tmp_path``, built with the ``git`` binary, and what git
itself reads back of them (never what pygit2 says of its own work).

The identity is in each repository's config, since pygit2 takes it from there;
the environment pins git's own (``support.env``).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


def git(cwd: Path, *args: str, env: Mapping[str, str] | None = None, check: bool = True) -> str:
    """Run the git binary; return its stdout (raise with stderr when it fails)."""
    proc = subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        capture_output=True,
        timeout=60,
    )
    if check and proc.returncode != 0:
        raise AssertionError(
            f"git {' '.join(args)} failed ({proc.returncode}):\n"
            + proc.stderr.decode(errors="replace")
        )
    return proc.stdout.decode("utf-8", errors="replace")


def git_wrapper(folder: Path, *, pack_objects: str) -> Path:
    """A folder holding a ``git`` that runs the shell command ``pack_objects`` in place of
    ``git pack-objects`` (the daemon's roll-up of its packs) and the real git for anything
    else: put it first on PATH."""
    real = shutil.which("git")
    assert real is not None, "these tests need git on the PATH"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do\n'
        '  if [ "$arg" = pack-objects ]; then\n'
        f"    {pack_objects}\n"
        "    exit 0\n"
        "  fi\n"
        "done\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(0o755)
    return folder


def write(path: Path, content: str | bytes, mode: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    if mode is not None:
        path.chmod(mode)


def make_repo(
    path: Path,
    files: Mapping[str, str | bytes],
    env: Mapping[str, str] | None = None,
    executable: tuple[str, ...] = (),
) -> Path:
    """A repository on main with ``files`` in its first commit.

    The first repository of its kind in a run is built with the git binary; later
    ones are copies of it (:func:`_template`): the same files, config and commit,
    since the identity and dates git writes are pinned."""
    key = _template_key(files, env, executable)
    if key is None:
        return _build_repo(path, files, env, executable)
    template = _TEMPLATES.get(key)
    if template is None:
        template = _build_repo(_template_root() / str(len(_TEMPLATES)), files, env, executable)
        _TEMPLATES[key] = template
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(template, path, symlinks=True)
    return path


def _build_repo(
    path: Path,
    files: Mapping[str, str | bytes],
    env: Mapping[str, str] | None,
    executable: tuple[str, ...],
) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main", env=env)
    git(path, "config", "user.name", "Repo User", env=env)
    git(path, "config", "user.email", "repo-user@example.com", env=env)
    for name, content in files.items():
        write(path / name, content, 0o755 if name in executable else None)
    git(path, "add", "-A", env=env)
    git(path, "commit", "-q", "-m", "initial", env=env)
    return path


_TEMPLATES: dict[tuple[Any, ...], Path] = {}
_ROOT: list[Path] = []


def _template_root() -> Path:
    if not _ROOT:
        _ROOT.append(Path(tempfile.mkdtemp(prefix="rl-repo-templates-")))
        atexit.register(shutil.rmtree, _ROOT[0], True)
    return _ROOT[0]


def _template_key(
    files: Mapping[str, str | bytes], env: Mapping[str, str] | None, executable: tuple[str, ...]
) -> tuple[Any, ...] | None:
    """What decides the repository git makes: the files, and the git binary, identity,
    dates and config its environment gives. None when a configuration file outside the
    repository could change it (git's system config, a global one in HOME)."""
    env = os.environ if env is None else env
    pinned = tuple(sorted((k, v) for k, v in env.items() if k.startswith("GIT_")))
    if env.get("GIT_CONFIG_NOSYSTEM") != "1" or "GIT_CONFIG_GLOBAL" in env:
        return None
    home, xdg = env.get("HOME"), env.get("XDG_CONFIG_HOME")
    for config in (Path(home or "/nonexistent") / ".gitconfig",
                   Path(xdg or f"{home}/.config") / "git" / "config"):  # fmt: skip
        if config.exists():
            return None
    content = tuple(
        (name, data if isinstance(data, bytes) else data.encode(), name in executable)
        for name, data in files.items()
    )
    return (content, pinned, shutil.which("git", path=env.get("PATH")))


def rev(repo: Path, spec: str, env: Mapping[str, str] | None = None) -> str:
    return git(repo, "rev-parse", "--verify", "-q", spec, env=env).strip()


def branch_commits(
    repo: Path, branch: str, base: str, env: Mapping[str, str] | None = None
) -> list[str]:
    """The commits on ``branch`` after ``base``, oldest first."""
    out = git(repo, "rev-list", "--reverse", f"{base}..{branch}", env=env)
    return out.split()


def note_of(repo: Path, commit: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The redline note of ``commit`` as git itself reads it."""
    note = json.loads(git(repo, "notes", "--ref=redline", "show", commit, env=env))
    assert isinstance(note, dict)
    return note


def trailer(repo: Path, commit: str, env: Mapping[str, str] | None = None) -> list[str]:
    out = git(
        repo,
        "log",
        "-1",
        "--format=%(trailers:key=Redline-Edit,valueonly,separator=%x00)",
        commit,
        env=env,
    )
    return [v for v in out.strip().split("\0") if v]


@dataclass(frozen=True)
class CommitRecord:
    commit: str
    trailers: list[str]  # Redline-Edit values
    note: dict[str, Any] | None
    files: list[str]


def commit_records(
    repo: Path, branch: str, base: str, env: Mapping[str, str] | None = None
) -> list[CommitRecord]:
    """Every commit after ``base`` on ``branch`` (oldest first) with what git reads of it:
    its Redline-Edit trailers, its redline note and the files it changed. One git call."""
    out = git(
        repo,
        "log",
        "--reverse",
        "--notes=redline",
        "--name-only",
        "--no-renames",
        "--format=%x02%H%x01%(trailers:key=Redline-Edit,valueonly,separator=%x00)%x01%N%x01",
        f"{base}..{branch}",
        env=env,
    )
    records = []
    for chunk in out.split("\x02")[1:]:
        commit, trailers, note, files = chunk.split("\x01")
        records.append(
            CommitRecord(
                commit,
                [t for t in trailers.strip().split("\0") if t],
                json.loads(note) if note.strip() else None,
                sorted(files.split()),
            )
        )
    return records


def changed_files(repo: Path, commit: str, env: Mapping[str, str] | None = None) -> list[str]:
    out = git(repo, "diff-tree", "--no-commit-id", "--name-only", "-r", commit, env=env)
    return sorted(out.split())


def assert_fsck_clean(repo: Path, env: Mapping[str, str] | None = None) -> None:
    """``git fsck --strict`` finds nothing wrong (dangling objects are fine).

    A running daemon removes packs it rolled together: a pack gone between fsck's
    listing of the pack folder and its reading of that pack ("packfile … index not
    opened", and then the objects it held are missing to the reflogs that name them)
    is not damage, and fsck is run again (a few times at most) — damage is there
    again on the last run, which must be clean; a report that names no gone pack
    fails at once."""
    for attempt in range(5):
        proc = subprocess.run(
            ["git", "fsck", "--strict", "--no-dangling", "--no-progress"],
            cwd=repo,
            env=dict(env) if env is not None else None,
            capture_output=True,
            timeout=120,
        )
        report = (proc.stdout + proc.stderr).decode(errors="replace")
        lines = report.strip().splitlines()
        if not any(_PACK_GONE.fullmatch(line) for line in lines) or attempt == 4:
            break
        time.sleep(0.5)
    assert proc.returncode == 0, report
    assert report.strip() == "", report


_PACK_GONE = re.compile(r"error: packfile \S+\.pack index not opened")


def porcelain(worktree: Path, env: Mapping[str, str] | None = None) -> str:
    """``git status --porcelain`` without refreshing the index as a side effect."""
    return git(
        worktree,
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=all",
        env=env,
    )


def digest_tree(root: Path, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Every file and link under ``root`` (relative path -> content hash or link target)."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = Path(folder).relative_to(root)
        dirs[:] = [d for d in dirs if (rel_folder / d).as_posix() not in skip]
        for name in [*files, *[d for d in dirs if (Path(folder) / d).is_symlink()]]:
            path = Path(folder) / name
            key = path.relative_to(root).as_posix()
            if key in skip:
                continue
            if path.is_symlink():
                out[key] = "link:" + os.readlink(path)
            else:
                out[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# The usual files of a test repository (tool.sh is made executable, *.log ignored).
FILES: dict[str, str | bytes] = {
    "a.py": "def greet(name):\n    return 'Hello, ' + name\n",
    "b.py": "VALUE = 1\n",
    "c.txt": "alpha\nbeta\ngamma\n",
    "docs/readme.md": "# Title\n\nSome text.\n",
    "tool.sh": "#!/bin/sh\necho one\n",
    "blob.bin": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x00\x00",
    ".gitignore": "*.log\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on main with the usual files (tool.sh executable, *.log ignored)."""
    return make_repo(tmp_path / "repo", FILES, executable=("tool.sh",))
