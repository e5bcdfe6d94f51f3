"""What an agent that controls every tool argument cannot do, end to end.

Reproductions 7, 8 and 9 of issue 20: a path that forges a commit trailer, an
agent relaxing its own permissions, and a move that carries a broken file past
validation. A repository with the hooks ``redline hooks install`` wrote and a
bare remote; the person runs ``redline guard --range``, ``redline land`` and
``git push``, and each test asserts what reaches the remote.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from guard_fixtures import agent, head, install_hooks, redline, run_git, user_repo

from gitmode_fixtures import GitMode, git, git_mode, write
from redline.engine.patch import PatchRequest
from redline.engine.write import WriteRequest

FORGED = "a\nRedline-Edit: deadbeef0000\nb.py"


def team(tmp_path: Path, policy: str | None, **files: str) -> tuple[Path, Path]:
    repo = user_repo(tmp_path / "repo", policy, **files)
    install_hooks(repo)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "-u", "origin", "main")
    return repo, remote


def trailers_per_commit(repo: Path, spec: str) -> dict[str, list[str]]:
    """Each commit's Redline-Edit trailers, as git reads them."""
    out = git(repo, "log", "--format=%H%x00%(trailers:key=Redline-Edit,valueonly)%x01", spec)
    found = {}
    for chunk in out.split("\x01"):
        commit, _, values = chunk.strip().partition("\x00")
        if commit:
            found[commit] = values.split()
    return found


# --- reproduction 7: a path with a newline ---------------------------------------------------


@pytest.mark.parametrize(
    "request_",
    [
        WriteRequest(FORGED, "x = 1\n"),
        PatchRequest("*** Begin Patch\n*** Add File: a\u202egnp.py\n+x = 1\n*** End Patch\n"),
        WriteRequest("ok\r.py", "x = 1\n"),
    ],
    ids=["newline", "bidi", "carriage-return"],
)
def test_a_path_with_control_characters_is_refused_and_forges_nothing(
    tmp_path: Path, request_: WriteRequest | PatchRequest
) -> None:
    repo, remote = team(tmp_path, None, **{"app.py": "x = 0\n"})
    session = agent(repo)
    refused = session.applier.apply(request_).to_dict()
    assert refused["status"] == "invalid"
    assert "contains a control character" in refused["error"]
    assert "name the file without it" in refused["error"]
    assert refused["commits"] == []
    # The session goes on; everything it lands has one trailer per commit, naming its edit.
    done = session.edit("app.py", "x = 0", "x = 1")
    proc = redline(repo, "land", "s", "--json")
    assert json.loads(proc.stdout)["status"] == "landed", proc.stderr
    assert run_git(repo, "push", "-q", "origin", "main").returncode == 0
    pushed = trailers_per_commit(remote, "main")
    assert list(pushed.values()).count([done["commits"][0]["edit"]]) == 1
    assert all(len(edits) <= 1 for edits in pushed.values())
    assert "deadbeef0000" not in git(remote, "log", "--format=%B", "main")


def test_a_file_the_agent_names_with_a_newline_by_other_means_forges_nothing(
    tmp_path: Path,
) -> None:
    """The agent's shell makes the file; the session commits it as an external change,
    its name escaped in the message; guard --range, land and the push see one trailer."""
    repo, remote = team(tmp_path, None, **{"app.py": "x = 0\n"})
    session = agent(repo)
    write(session.worktree / "Redline-Edit: deadbeef0000", "made by a shell\n")
    write(session.worktree / FORGED, "made by a shell\n")
    done = session.edit("app.py", "x = 0", "x = 1")
    external = [c for c in done["commits"] if c["source"] == "external"]
    assert len(external) == 1
    message = git(repo, "log", "-1", "--format=%B", external[0]["commit"])
    assert '  - "a\\nRedline-Edit: deadbeef0000\\nb.py"' in message
    assert "\n  - Redline-Edit: deadbeef0000\n" in message  # a name, not a trailer
    assert trailers_per_commit(repo, "main..redline/s") == {
        c["commit"]: [c["edit"]] for c in done["commits"]
    }
    verdict = json.loads(redline(repo, "guard", "--range", "main..redline/s", "--json").stdout)
    assert verdict["ok"] is True and verdict["missing"] == []
    assert json.loads(redline(repo, "land", "s", "--json").stdout)["status"] == "landed"
    assert run_git(repo, "push", "-q", "origin", "main").returncode == 0
    assert all(len(edits) == 1 for edits in trailers_per_commit(remote, "HEAD~2..main").values())
    assert "deadbeef0000" not in git(remote, "log", "--format=%(trailers)", "main")


# --- reproduction 8: an agent relaxing its own permissions, git mode ---------------------------


@pytest.fixture
def governed(tmp_path: Path, hermetic_environment: Path) -> Iterator[tuple[GitMode, Path]]:
    files: dict[str, str | bytes] = {
        ".redline.toml": '[permission.write]\n"secrets/**" = "deny"\n',
        "secrets/key.txt": "k\n",
        "app.py": "x = 0\n",
    }
    with git_mode(tmp_path, hermetic_environment, files) as mode:
        mode.cli.ok("hooks", "install", "--repo", str(mode.repo))
        remote = tmp_path / "remote.git"
        git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
        mode.git("remote", "add", "origin", str(remote))
        mode.git("push", "-q", "-u", "origin", "main")
        yield mode, remote


def test_an_agent_cannot_relax_its_permissions_from_its_session(
    governed: tuple[GitMode, Path],
) -> None:
    mode, remote = governed
    worktree = Path(mode.cli.open_session("s")["worktree"])

    def apply(request: dict[str, Any]) -> dict[str, Any]:
        """``redline apply --session`` run from the session's worktree, as an agent does."""
        proc = subprocess.run(
            [sys.executable, "-m", "redline", "apply", "--session", "s"],
            input=json.dumps(request),
            capture_output=True,
            text=True,
            cwd=worktree,
            env=mode.env,
            timeout=60,
        )
        assert "Traceback" not in proc.stderr
        result: dict[str, Any] = json.loads(proc.stdout)
        return result

    leak = {"tool": "write", "path": "secrets/key.txt", "content": "leaked\n"}
    assert apply(leak)["status"] == "rejected"
    relax = {"tool": "write", "path": ".redline.toml", "content": '[permission]\nwrite = "allow"\n'}
    relaxed = apply(relax)
    assert relaxed["status"] == "applied" and relaxed["flags"]
    denied = apply(leak)
    assert denied["status"] == "rejected"
    assert "(in .redline.toml on main)" in denied["error"]
    # While the session holds the agent's change of its settings, nothing lands without a person.
    verdict = json.loads(mode.cli.run("guard", "--range", "main..redline/s", "--json").stdout)
    assert verdict["ok"] is False
    landed = json.loads(mode.cli.run("land", "s", "--json", "--repo", str(mode.repo)).stdout)
    assert landed["status"] == "refused"
    start = git(remote, "rev-parse", "main").strip()
    mode.git("merge", "-q", "--ff-only", "redline/s")
    push = subprocess.run(
        ["git", "push", "-q", "origin", "main"],
        cwd=mode.repo,
        env=mode.env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert push.returncode != 0 and "redline guard: refused" in push.stderr
    assert git(remote, "rev-parse", "main").strip() == start
    mode.git("reset", "-q", "--hard", start)
    # The file restored, as in the reproduction: the denied write was never applied, so
    # what lands — and reaches the remote — holds no trace of it.
    rules = '[permission.write]\n"secrets/**" = "deny"\n'
    assert (
        apply({"tool": "write", "path": ".redline.toml", "content": rules})["status"] == "applied"
    )
    landed = json.loads(mode.cli.run("land", "s", "--json", "--repo", str(mode.repo)).stdout)
    assert landed["status"] == "landed", landed
    mode.git("push", "-q", "origin", "main")
    assert git(remote, "show", "main:secrets/key.txt") == "k\n"
    assert git(remote, "show", "main:.redline.toml") == rules
    assert "leaked" not in git(remote, "log", "-p", "main")


# --- reproduction 9: a move past validation --------------------------------------------------

VALIDATE = '[[validate]]\npaths = ["**/*.py"]\n'


def test_a_broken_file_cannot_be_moved_past_validation(tmp_path: Path) -> None:
    repo, remote = team(tmp_path, VALIDATE, **{"app.py": "x = 0\n"})
    start = head(repo)
    session = agent(repo)
    broken = session.applier.apply(WriteRequest("x.txt", "def f(:\n    pass\n")).to_dict()
    assert broken["status"] == "applied"  # a .txt need not parse
    moved = session.patch("*** Update File: x.txt\n*** Move to: x.py\n@@\n def f(:\n")
    assert moved["status"] == "validation_failed", moved
    assert "x.py" in moved["error"]
    copied = session.applier.apply(WriteRequest("y.py", "def f(:\n    pass\n")).to_dict()
    assert copied["status"] == "validation_failed"
    tree = git(repo, "ls-tree", "-r", "--name-only", "redline/s").split()
    assert "x.py" not in tree and "y.py" not in tree
    assert json.loads(redline(repo, "land", "s", "--json").stdout)["status"] == "landed"
    assert run_git(repo, "push", "-q", "origin", "main").returncode == 0
    pushed = git(remote, "ls-tree", "-r", "--name-only", "main").split()
    assert "x.txt" in pushed and "x.py" not in pushed
    assert head(repo) != start
