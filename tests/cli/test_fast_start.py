"""The calls made on every edit and every commit start without click (``redline.cli.main``).

Which modules each of them may load is said here, per call: a fresh interpreter
runs the call as users run it (``python -X importtime -m redline ...``; the
installed hooks run ``$python -m redline guard``), and the modules in its import
log are checked against the call's list. And the hand-written reading of their
arguments takes only what click would read the same way: a table runs each
argument list both ways and compares what the user sees.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from gitmode_fixtures import GitMode, gm
from support.repos import git, make_repo, write

__all__ = ["gm"]

# Third-party packages a fast call may load (everything else it loads is redline's own
# or the standard library's).
THIRD_PARTY = {
    "embedded apply": set(),
    # gitignore-style globs in the rules are read by pathspec (typing_extensions is its)
    "embedded apply under globs": {"pathspec", "typing_extensions"},
    "session apply": set(),
    "guard": {"pygit2", "cffi", "_cffi_backend"},
}
# redline's own modules each call must not load: the other mode's machinery, the wire
# format's pydantic twin, the tool surfaces, the front ends that are not this call.
_EMBEDDED_NOT_OWN = (
    "redline.daemon",
    "redline.gitops",
    "redline.hooks.guard",
    "redline.mcp",
    "redline.cli.group",
    "redline.cli._connect",
    "redline.tools.schema",
    "redline.tools.surface",
)
# ...and an exact edit none of the tolerant tiers' machinery (nor the wording of a miss)
_TOLERANT = (
    "redline.engine.analysis",
    "redline.engine.diagnose",
    "redline.engine.fold",
    "redline.engine.indent",
    "redline.engine.merge",
    "redline.engine.prefixes",
    "redline.engine.similarity",
)
NOT_OWN = {
    "embedded apply": _EMBEDDED_NOT_OWN + _TOLERANT,
    "embedded apply under globs": _EMBEDDED_NOT_OWN + _TOLERANT,
    "session apply": (
        "redline.engine.edit",
        "redline.engine.result",  # the daemon cuts its answer to what is shown
        "redline.engine.match",
        "redline.engine.patch",
        "redline.fsops.apply",
        "redline.gitops.repo",
        "redline.gitops.apply",
        "redline.gitops.notes",
        "redline.gitops.snapshot",
        "redline.hooks",
        "redline.mcp",
        "redline.cli.group",
        "redline.tools",
    ),
    "guard": (
        "redline.daemon",
        "redline.engine.edit",
        "redline.engine.match",
        "redline.fsops.apply",
        "redline.mcp",
        "redline.cli.group",
        "redline.cli._connect",
        "redline.tools",
        # re-running requests (--verify) and signed approvals: not what a plain commit needs
        "redline.hooks.reproduce",
        "redline.hooks.signed",
    ),
}


# Standard-library modules a call must not load: an exact edit and a client that only
# sends a request and prints the answer have no use for dataclasses (nor the inspect it
# imports: their classes are redline.engine.records); a commit's hook signs nothing (tempfile is
# for ssh-keygen's files). (pathspec, for globs, and pygit2 import dataclasses themselves.)
NOT_STDLIB = {
    "embedded apply": {"dataclasses", "inspect"},
    "session apply": {"dataclasses", "inspect"},
    "guard": {"tempfile"},
}


def _imported(importtime_log: str) -> set[str]:
    """Every module named in ``-X importtime`` output."""
    names = set()
    for entry in importtime_log.splitlines():
        if entry.startswith("import time:") and "|" in entry:
            name = entry.rsplit("|", 1)[1].strip()
            if name != "imported package":
                names.add(name)
    return names


@pytest.fixture(scope="module")
def at_start() -> set[str]:
    """What the interpreter loads before any code runs (site, .pth hooks)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "pass"], capture_output=True, text=True
    )
    return _imported(done.stderr)


# Probes that the import log shows although they find nothing: copy looks for Jython's
# org.python.core, pathspec for its optional regex engines.
PROBES = {"org", "hyperscan", "re2"}


def _check(call: str, log: str, at_start: set[str]) -> None:
    imported = _imported(log) - at_start
    assert "redline.cli.main" in imported  # the log is real, not empty
    tops = {name.split(".")[0] for name in imported}
    third_party = tops - set(sys.stdlib_module_names) - {"redline"} - PROBES
    assert third_party <= THIRD_PARTY[call], sorted(third_party - THIRD_PARTY[call])
    own = sorted(
        name
        for name in imported
        for banned in NOT_OWN[call]
        if name == banned or name.startswith(banned + ".")
    )
    assert own == []
    assert not imported & NOT_STDLIB.get(call, set()), sorted(imported & NOT_STDLIB[call])


def _run(
    args: list[str], cwd: Path, env: dict[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "redline", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def _env(gm: GitMode) -> dict[str, str]:
    return {k: v for k, v in gm.env.items() if not k.startswith("PYTHON")}


def test_an_embedded_edit_loads_no_third_party_package(gm: GitMode, at_start: set[str]) -> None:
    request = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
    done = _run(["apply"], gm.repo, _env(gm), json.dumps(request))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "applied"
    _check("embedded apply", done.stderr, at_start)


def test_an_embedded_edit_under_rules_and_a_policy_still_loads_none(
    gm: GitMode, at_start: set[str]
) -> None:
    """Reading the folder's settings (permissions, the guard policy) is by hand too; only
    the globs in them need their reader."""
    write(
        gm.repo / ".redline.toml",
        '[permission]\nedit = { "**" = "allow", "secret/**" = "deny" }\n'
        '[[guard.protect]]\npaths = ["b.py"]\nrequire = "exact"\n',
    )
    request = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
    done = _run(["apply", "--root", str(gm.repo)], gm.repo, _env(gm), json.dumps(request))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "applied"
    _check("embedded apply under globs", done.stderr, at_start)


@pytest.mark.e2e
def test_an_edit_sent_to_a_session_loads_only_the_client(gm: GitMode, at_start: set[str]) -> None:
    gm.cli.open_session("s")
    request = {"tool": "edit", "path": "b.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2"}
    args = ["apply", "--session", "s", "--repo", str(gm.repo)]
    done = _run(args, gm.repo, _env(gm), json.dumps(request))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "applied"
    _check("session apply", done.stderr, at_start)


def test_the_commit_hook_loads_only_pygit2(gm: GitMode, at_start: set[str]) -> None:
    write(gm.repo / "b.py", "VALUE = 3\n")
    git(gm.repo, "add", "b.py", env=gm.env)
    done = _run(["guard", "--stage", "pre-commit"], gm.repo, _env(gm))
    assert done.returncode == 0, done.stderr
    _check("guard", done.stderr, at_start)


# --- the hand-written reading agrees with click's ----------------------------------------


def _both(args: list[str], stdin: bytes, cwd: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``args`` run through the fast start and through click: the same output, the same
    exit code."""
    from redline.cli import boundary
    from redline.cli.group import cli
    from redline.cli.main import fast_call

    monkeypatch.chdir(cwd)
    call = fast_call(args)
    assert call is not None, args
    runner = CliRunner()
    with runner.isolation(input=stdin) as (out, err, _):
        code = boundary.run(call)
        fast = (code, out.getvalue(), err.getvalue())
    for path in cwd.rglob("*.py"):  # the second run meets the files as the first did
        path.write_bytes(originals[path])
    slow = runner.invoke(cli, args, input=stdin)
    assert (slow.exit_code, slow.stdout_bytes, slow.stderr_bytes) == fast


originals: dict[Path, bytes] = {}

EDIT = json.dumps(
    {"tool": "edit", "path": "a.py", "old_string": "x = 1", "new_string": "x = 2"}
).encode()
FUZZY = json.dumps(
    {"tool": "edit", "path": "a.py", "old_string": "x  =  1", "new_string": "x = 3"}
).encode()
BAD = json.dumps({"tool": "edit", "path": "a.py", "old_string": 1, "new_string": "x"}).encode()


@pytest.mark.parametrize(
    ("args", "stdin"),
    [
        (["apply"], EDIT),
        (["apply", "--dry-run"], EDIT),
        (["apply", "--root", "."], EDIT),
        (["apply", "--root=.", "--threshold", "0.9"], FUZZY),
        (["apply", "--threshold=1", "--dry-run"], FUZZY),
        (["apply", "--jsonl"], EDIT + b"\n" + BAD + b"\n" + b"{not json\n"),
        (["apply", "--jsonl", "--dry-run"], EDIT + b"\n" + EDIT + b"\n"),
        (["apply"], BAD),
        (["apply"], b""),
        (["apply", "--repo", ".", "--session", "nowhere"], EDIT),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_apply_reads_its_options_as_click_does(
    args: list[str], stdin: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "work"
    write(folder / "a.py", "x = 1\n")
    originals.clear()
    originals[folder / "a.py"] = b"x = 1\n"
    _both(args, stdin, folder, monkeypatch)


@pytest.mark.parametrize(
    "args",
    [["guard"], ["guard", "--stage", "pre-commit"], ["guard", "--stage=pre-merge-commit"]],
    ids=" ".join,
)
def test_guard_reads_its_options_as_click_does(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    write(repo / "a.py", "x = 2\n")
    git(repo, "add", "a.py")
    originals.clear()
    originals.update({path: path.read_bytes() for path in repo.rglob("*.py")})
    _both(args, b"", repo, monkeypatch)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["log"],
        ["apply", "--help"],
        ["apply", "-h"],
        ["apply", "--root"],
        ["apply", "--root", "no-such-folder"],
        ["apply", "--root", "a.py"],
        ["apply", "--root", ".", "--root", "."],
        ["apply", "--threshold", "0"],
        ["apply", "--threshold", "1.5"],
        ["apply", "--threshold", "most"],
        ["apply", "--session", "--jsonl"],
        ["apply", "--session="],
        ["apply", "--jsonl", "--jsonl"],
        ["apply", "--dry-run=yes"],
        ["apply", "extra"],
        ["apply", "--"],
        ["apply", "--bogus"],
        ["guard", "--range", "a..b"],
        ["guard", "--stage", "post-commit"],
        ["guard", "--json"],
        ["guard", "--stage"],
        ["guard", "-h"],
        ["guard", "--", "origin"],
    ],
    ids=lambda v: " ".join(v) or "nothing",
)
def test_anything_not_plain_goes_to_click(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from redline.cli.main import fast_call

    write(tmp_path / "a.py", "x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert fast_call(args) is None
