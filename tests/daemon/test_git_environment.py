"""GIT_* variables of the caller never send redline, its daemon or its git elsewhere.

Every command runs with ``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE``,
``GIT_OBJECT_DIRECTORY``, ``GIT_COMMON_DIR`` and ``git -c`` settings pointing at a
decoy repository (as a hook's environment points at the repository git is
committing in). redline must act on the repository it runs in, the decoy must
stay byte for byte as it was, and the daemon and the ``git pack-objects`` it
runs to roll its packs together must not see those variables at all (the roll-up
sets two of its own, pointing into the repository's git directory).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from gitmode_fixtures import (
    FILES,
    GitMode,
    assert_fsck_clean,
    digest_tree,
    git,
    git_wrapper,
    make_repo,
    porcelain,
)


def redirecting(decoy: Path) -> dict[str, str]:
    git_dir = decoy / ".git"
    return {
        "GIT_DIR": str(git_dir),
        "GIT_WORK_TREE": str(decoy),
        "GIT_INDEX_FILE": str(git_dir / "index"),
        "GIT_OBJECT_DIRECTORY": str(git_dir / "objects"),
        "GIT_COMMON_DIR": str(git_dir),
        "GIT_CONFIG_PARAMETERS": f"'core.worktree'='{decoy}'",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "core.worktree",
        "GIT_CONFIG_VALUE_0": str(decoy),
    }


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


@pytest.mark.daemon_process
def test_redline_acts_on_its_own_repository_whatever_git_dir_says(
    gm: GitMode, tmp_path: Path
) -> None:
    decoy = make_repo(tmp_path / "decoy", {"b.py": "DECOY = 1\n"}, gm.env)
    decoy_before = digest_tree(decoy)
    record = tmp_path / "roll-up.env"
    real_git = shutil.which("git")
    bin_dir = git_wrapper(
        tmp_path / "bin",
        pack_objects=f'{{ env | grep "^GIT_" | sort; echo "args: $*"; }} > {record}; '
        f'exec {real_git} "$@"',
    )
    env = {**gm.env, **redirecting(decoy), "PATH": f"{bin_dir}:{gm.env['PATH']}"}
    assert FILES["b.py"] == "VALUE = 1\n"

    opened = gm.cli.json(
        "session", "open", "--json", "--name", "s", "--repo", str(gm.repo), env=env
    )
    pid = gm.cli.pid()
    assert pid is not None
    daemon_env = environ_of(pid)
    results = []
    for old, new in (("VALUE = 1", "VALUE = 2"), ("VALUE = 2", "VALUE = 3")):  # two packs
        request = {"tool": "edit", "path": "b.py", "old_string": old, "new_string": new}
        proc = gm.cli.run("apply", "--session", "s", input=json.dumps(request), env=env)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stdout))
    deadline = time.monotonic() + 20  # the roll-up comes once requests pause
    while not record.exists():
        assert time.monotonic() < deadline, "the packs were never rolled up"
        time.sleep(0.05)
    entries = json.loads(gm.cli.ok("log", "s", "--json", env=env))
    listed = json.loads(gm.cli.ok("session", "list", "--json", env=env))
    gm.cli.ok("session", "close", "s", env=env)
    assert gm.cli.ok("daemon", "stop", env=env) == "redline daemon stopped\n"

    # Everything happened in the repository the commands ran in...
    worktree = Path(opened["worktree"])
    assert worktree.parent == (gm.repo / ".git" / "redline" / "worktrees").resolve()
    commits = [r["commits"][0]["commit"] for r in results]
    assert gm.git("show", "redline/s:b.py") == "VALUE = 3\n"
    assert gm.git("rev-parse", "redline/s") == f"{commits[-1]}\n"
    assert sorted(e["commit"] for e in entries) == sorted(commits)
    assert [s["name"] for s in listed] == ["s"]
    assert porcelain(gm.repo) == ""  # the user's own worktree and index: untouched
    assert_fsck_clean(gm.repo, gm.env)
    # ...and nothing in the decoy.
    assert digest_tree(decoy) == decoy_before
    assert "redline" not in git(decoy, "for-each-ref", "--format=%(refname)", env=gm.env)

    # The daemon and its git saw none of the redirecting variables.
    leaked = sorted(set(redirecting(decoy)) & set(daemon_env))
    assert leaked == []
    assert daemon_env["PATH"].startswith(str(bin_dir))  # the rest of the environment is kept
    lines = record.read_text().splitlines()
    git_dir = (gm.repo / ".git").resolve()
    roll_up = git_dir / "redline" / "rollup"
    assert lines[-1] == (
        f"args: -C {git_dir} pack-objects --stdin-packs --delta-base-offset -q {roll_up}/pack/pack"
    )
    assert sorted(lines[:-1]) == [
        f"GIT_ALTERNATE_OBJECT_DIRECTORIES={git_dir}/objects",
        "GIT_CONFIG_NOSYSTEM=1",
        f"GIT_OBJECT_DIRECTORY={roll_up}",
    ]
