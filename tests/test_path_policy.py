"""One path policy in every mode: the same hostile paths, the same verdicts, nothing in .git.

Every path of :data:`CASES` is sent, as the real ``redline apply`` process
receives it, through

- embedded edit (``redline apply --root``), real and ``--dry-run``;
- embedded apply_patch: ``*** Update File``, ``*** Delete File``, ``*** Add
  File`` (real and ``--dry-run``), and ``*** Move to:`` the path;
- embedded write (real and ``--dry-run``), delete and read;
- the same requests in git mode, through a real daemon on a real socket
  (``redline apply --session``), and sent straight to that socket by a raw client
  of the daemon (``daemon.client.Client``), which no front end stands in front of;
- the same requests as tool calls of ``redline mcp --embedded`` and ``redline mcp
  --session`` (the edit tools; apply_patch for a patch-native model), over the MCP
  SDK's in-memory transport.

Each target exists on disk where a file system can hold it (``.git/config``
carries the marker the edit replaces, ``c:notes.txt`` and ``a\\b.txt`` are
real POSIX file names, ``nested`` is a real repository, ``gitdirs/mod`` the
git directory that ``mod/.git`` points to), so a refusal is the policy's and
not a missing file's. The test asserts that every mode gives the same verdict
and the same message, that each refusal names the path and says what to do,
that accepted paths are reported relative, and that no byte under any ``.git``
directory, ``.git`` file or git directory changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from gitmode_fixtures import GitMode, git, git_mode, scrubbed_env, write
from redline.daemon.client import Client
from redline.engine.paths import names_git
from support import cli as inproc
from support import mcp_client

MARKER = "MARKER"
ROOT = "{root}"  # in a case's path: the root (embedded) or the session worktree (git mode)
OUTSIDE = "{outside}"  # a folder beside the root


@dataclass(frozen=True)
class Case:
    id: str
    path: str
    says: tuple[str, ...] = ()  # a refusal: phrases its message contains (edit and patch)
    reported: str | None = None  # accepted: the relative path results name
    patch_says: tuple[str, ...] | None = None  # a patch's refusal, when it is worded apart
    ops: tuple[str, ...] | None = None  # only these operations (default: all)

    @property
    def refused(self) -> bool:
        return self.reported is None


GIT_WORDS = ("which redline never edits", "Change the repository with git commands")
GITDIR_WORDS = (
    "is inside a git directory ('gitdirs/mod' holds a repository's own data, which a .git "
    "file points to), which redline never edits",
    "Change that repository with git commands",
)
# A newline in a path would forge a trailer line of the commit message.
FORGED = "a\nRedline-Edit: deadbeef0000\nb.py"
CONTROL_WORDS = ("which redline does not accept in a file name", "name the file without it")
CONTROL_NAMES = (FORGED, "a\rb.txt", "a\tb.txt", "a\x1b[31m.txt", "a\x7f.txt", "d\x01/a.txt",
                 "invoice\u202etxt.exe", "a\u2066b.txt", "a\u2069b.txt")  # fmt: skip
CASES = [
    Case(".git/config", ".git/config", ("path '.git/config' is inside a .git directory", *GIT_WORDS)),
    Case("hooks", ".git/hooks/pre-push", ("path '.git/hooks/pre-push' is inside a .git directory", *GIT_WORDS)),
    Case("dot-slash-git", "./.git/config", ("path './.git/config' is inside a .git directory", *GIT_WORDS)),
    Case("double-slash", ".git//config", ("path '.git//config' is inside a .git directory", *GIT_WORDS)),
    Case("upper-case", ".GIT/config", ("path '.GIT/config' is inside a .git directory ('.GIT' is a spelling of .git)", *GIT_WORDS)),
    Case("trailing-dot", ".git./config", ("('.git.' is a spelling of .git)", *GIT_WORDS)),
    Case("short-name", "git~1/config", ("('git~1' is a spelling of .git)", *GIT_WORDS)),
    Case("nested-repo", "nested/.git/hooks/x", ("path 'nested/.git/hooks/x' is inside a .git directory", *GIT_WORDS)),
    Case("gitfile", "sub/.git", ("path 'sub/.git' names a .git directory or file", *GIT_WORDS)),
    Case("absolute-into-git", f"{ROOT}/.git/config", ("path '.git/config' is inside a .git directory", *GIT_WORDS)),
    Case("dotdot", "../x", ("path '../x' contains '..', which could leave the root", "'..' is not allowed", "name the file by its path from the root")),
    Case("dotdot-deep", "a/../../x", ("path 'a/../../x' contains '..'",)),
    Case("etc-passwd", "/etc/passwd", ("path '/etc/passwd' is absolute; give it relative to the root",), ops=("edit", "edit-dry", "update", "add", "add-dry", "move", "write-dry", "read")),
    Case("absolute-outside", f"{OUTSIDE}/secret.txt", ("is absolute; give it relative to the root", "accepted only inside the root")),
    Case("drive-relative", "c:notes.txt", ("path 'c:notes.txt' is absolute (it starts with the drive 'c:'); give it relative to the root",)),
    Case("drive", "C:\\x", ("path 'C:\\\\x' is absolute (it starts with the drive 'C:')",)),
    Case("backslash-root", "\\x", ("path '\\\\x' is absolute; give it relative to the root",)),
    Case("backslash", "a\\b.txt", ("path 'a\\\\b.txt' contains a backslash; separate folders with forward slashes ('a/b.txt')",)),
    Case("empty", "", ("path is empty; name a file relative to the root",), patch_says=("a file path after '*** ",)),
    Case("dot", ".", ("path '.' names the root itself, not a file; name a file",)),
    Case("trailing-slash", "a/", ("path 'a/' ends with a slash; name a file, not a directory",)),
    Case("nul", "a\x00b.txt", ("path 'a\\x00b.txt' contains a NUL byte", "name the file without it")),
    Case("lone-surrogate", "\ud800.txt", ("contains a character no file name can hold (a lone surrogate)", "send the path as the file's name is spelt")),
    Case("long-name", "d/" + "n" * 256, ("name too long: ", "is 256 bytes in UTF-8, over the limit of 255 bytes for one name", "use a shorter name")),
    Case("link-into-git", "link/config", ("path 'link/config' goes through a symbolic link ('link') that leads into .git", *GIT_WORDS)),
    Case("link-to-gitfile", "modgit", ("path 'modgit' is a symbolic link ('modgit') that leads into .git", *GIT_WORDS)),
    Case("link-outside", "outlink/secret.txt", ("path 'outlink/secret.txt' resolves outside the root through a symbolic link ('outlink')", "name a file inside it")),
    Case("link-to-gitdir", "gitlink/config", ("path 'gitlink/config'", *GITDIR_WORDS)),
    Case("gitdir", "gitdirs/mod/config", ("path 'gitdirs/mod/config'", *GITDIR_WORDS)),
    Case("newline-trailer", FORGED, (f"path {FORGED!r} contains a control character (U+000A line feed)", *CONTROL_WORDS), patch_says=("apply_patch syntax error at line ",)),
    Case("carriage-return", "a\rb.txt", ("path 'a\\rb.txt' contains a control character (U+000D carriage return)", *CONTROL_WORDS)),
    Case("tab", "a\tb.txt", ("path 'a\\tb.txt' contains a control character (U+0009 tab)", *CONTROL_WORDS)),
    Case("escape", "a\x1b[31m.txt", ("path 'a\\x1b[31m.txt' contains a control character (U+001B escape)", *CONTROL_WORDS)),
    Case("delete-char", "a\x7f.txt", ("path 'a\\x7f.txt' contains a control character (U+007F delete)", *CONTROL_WORDS)),
    Case("control-folder", "d\x01/a.txt", ("path 'd\\x01/a.txt' contains a control character (U+0001)", *CONTROL_WORDS)),
    Case("bidi-override", "invoice\u202etxt.exe", ("path 'invoice\\u202etxt.exe' contains a control character (U+202E right-to-left override)", *CONTROL_WORDS)),
    Case("bidi-isolate", "a\u2066b.txt", ("path 'a\\u2066b.txt' contains a control character (U+2066 left-to-right isolate)", *CONTROL_WORDS)),
    Case("bidi-pop", "a\u2069b.txt", ("(U+2069 pop directional isolate)", *CONTROL_WORDS)),
    Case("plain", "a/b.txt", reported="a/b.txt"),
    Case("dot-prefix", "./a.txt", reported="a.txt"),
    Case("absolute-inside", f"{ROOT}/abs.txt", reported="abs.txt"),
    Case("github", ".github/x.yml", reported=".github/x.yml"),
    Case("gitignore", ".gitignore", reported=".gitignore"),
    Case("dot-git-suffix", "x.git/y", reported="x.git/y"),
]  # fmt: skip
ACCEPTED = [c for c in CASES if not c.refused]
OPS = (
    "edit",
    "edit-dry",
    "update",
    "delete",
    "add",
    "add-dry",
    "move",
    "write",
    "write-dry",
    "delete-file",
    "read",
)
# The tools that name one path (edit, write, delete, read): the same refusal, word for word.
PATH_TOOLS = ("edit", "edit-dry", "write", "write-dry", "delete-file", "read")
NO_TARGETS = {"add", "add-dry", "move"}  # the accepted paths must not exist yet
ACTIONS = ("give it", "name ", "use ", "Change ", "send ", "separate folders", "expected ")


def victim(case: Case) -> str:
    """The file a Move moves to the case's path."""
    return f"victims/{case.id}.txt"


def request(op: str, case: Case, root: Path, outside: Path) -> dict[str, Any]:
    path = case.path.replace(ROOT, str(root)).replace(OUTSIDE, str(outside))
    if op.startswith("edit"):
        return {"tool": "edit", "path": path, "old_string": MARKER, "new_string": "HACKED"}
    if op.startswith("write"):
        return {"tool": "write", "path": path, "content": "HACKED\n"}
    if op == "delete-file":
        return {"tool": "delete", "path": path}
    if op == "read":
        return {"tool": "read", "path": path}
    body = {
        "update": f"*** Update File: {path}\n@@\n-{MARKER}\n+HACKED\n",
        "delete": f"*** Delete File: {path}\n",
        "add": f"*** Add File: {path}\n+HACKED\n",
        "add-dry": f"*** Add File: {path}\n+HACKED\n",
        "move": f"*** Update File: {victim(case)}\n*** Move to: {path}\n@@\n-{MARKER}\n+HACKED\n",
    }[op]
    return {"tool": "apply_patch", "patch": f"*** Begin Patch\n{body}*** End Patch\n"}


def cases_for(op: str) -> list[Case]:
    return [c for c in CASES if c.ops is None or op in c.ops]


# --- the layout: real targets for every hostile path -------------------------------------


def committed_files(with_targets: bool) -> dict[str, str]:
    """What the root holds as ordinary files: victims, and the accepted targets unless adding."""
    files = {victim(c): f"{MARKER}\n" for c in CASES}
    files["README.md"] = "hello\n"
    if with_targets:
        files.update({c.reported: f"{MARKER}\n" for c in ACCEPTED if c.reported})
    return files


def hostile_layout(root: Path, outside: Path, env: dict[str, str]) -> None:
    """Everything a hostile path could reach, holding the marker an edit would replace."""
    if (root / ".git").is_dir():  # embedded: the root is a repository; git mode: a gitfile
        with (root / ".git" / "config").open("a") as config:
            config.write(f"# {MARKER}\n")
        write(root / ".git" / "hooks" / "pre-push", f"{MARKER}\n", 0o755)
    for name in (".GIT/config", ".git./config", "git~1/config", "sub/.git", "c:notes.txt"):
        write(root / name, f"{MARKER}\n")
    for name in ("C:\\x", "\\x", "a\\b.txt"):  # POSIX file names with a backslash
        write(root / name, f"{MARKER}\n")
    for name in CONTROL_NAMES:  # POSIX file names may hold any of them
        write(root / name, f"{MARKER}\n")
    git(root, "init", "-q", "nested", env=env)
    write(root / "nested" / ".git" / "hooks" / "x", f"{MARKER}\n")
    (root / "gitdirs").mkdir()
    git(root, "init", "-q", "--separate-git-dir", str(root / "gitdirs" / "mod"), "mod", env=env)
    with (root / "gitdirs" / "mod" / "config").open("a") as config:
        config.write(f"# {MARKER}\n")
    (root / "link").symlink_to(".git")
    (root / "modgit").symlink_to("mod/.git")
    (root / "gitlink").symlink_to("gitdirs/mod")
    (root / "outlink").symlink_to(outside, target_is_directory=True)
    outside.mkdir(exist_ok=True)
    write(outside / "secret.txt", f"{MARKER}\n")


Digest = dict[str, tuple[str, int, int]]


def digest(*folders: Path) -> Digest:
    """Every file and link under ``folders``, not following links: content, mode, mtime."""
    out: Digest = {}
    for folder in folders:
        for where, dirs, files in os.walk(folder):
            for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(where, d)))]:
                path = os.path.join(where, name)
                info = os.lstat(path)
                data = (
                    os.readlink(path).encode() if os.path.islink(path) else Path(path).read_bytes()
                )
                out[path] = (hashlib.sha256(data).hexdigest(), info.st_mode, info.st_mtime_ns)
    return out


def guarded(digests: Digest, root: Path) -> Digest:
    """The part of a digest that is git's data: any .git spelling, and the gitfile target."""
    prefix = str(root) + "/"
    return {
        p: d
        for p, d in digests.items()
        if not p.startswith(prefix)
        or names_git(p[len(prefix) :])
        or p.startswith(prefix + "gitdirs/")
    }


# --- running the modes -----------------------------------------------------------------------


@dataclass
class Run:
    """One mode's answers by (operation, case id), and each operation's root and outside."""

    results: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    places: dict[str, tuple[Path, Path]] = field(default_factory=dict)

    def error(self, op: str, case: str) -> str | None:
        """The error, with this run's root and outside folder spelt as in CASES."""
        error: str | None = self.results[(op, case)].get("error")
        root, outside = self.places[op]
        if error is None:
            return None
        return error.replace(str(outside), OUTSIDE).replace(str(root), ROOT)


def run_jsonl(
    args: list[str], requests: list[dict[str, Any]], cwd: Path, env: dict[str, str]
) -> list[dict[str, Any]]:
    payload = "".join(json.dumps(r) + "\n" for r in requests)
    proc = inproc.run_bytes(["apply", "--jsonl", *args], input=payload, cwd=cwd, env=env)
    assert proc.returncode in (0, 1, 2), proc.stderr.decode()
    assert "Traceback" not in proc.stderr.decode(), proc.stderr.decode()
    results = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    assert len(results) == len(requests), proc.stderr.decode()
    return results


def check_op_results(op: str, results: list[dict[str, Any]], root: Path) -> None:
    """Per operation: refused paths are invalid and named; accepted ones applied and relative."""
    for case, result in zip(cases_for(op), results, strict=True):
        where = f"{op} {case.id}"
        if case.refused:
            assert result["status"] == "invalid", (where, result)
            assert result["error"], where
            # Git mode commits the worktree's external changes first; never the edit.
            assert all(c["source"] == "external" for c in result.get("commits", [])), where
        else:
            expected = "read" if op == "read" else "applied"
            assert result["status"] == expected, (where, result["error"])
            if op in PATH_TOOLS:
                assert result["path"] == case.reported, where
            else:
                # Embedded mode lists the groups it wrote, git mode the ones it committed.
                groups = [g["paths"] for g in result.get("written", result.get("committed", []))]
                assert [case.reported] in groups or [victim(case), case.reported] in groups, (
                    where,
                    groups,
                )
            assert str(root) not in json.dumps(result), where


Send = Callable[[Path, dict[str, str], str, list[dict[str, Any]]], list[Any]]


def run_in_folders(base: Path, ops: tuple[str, ...], send: Send) -> Run:
    """Each operation's requests sent (``send(root, env, op, requests)``) to a folder of its
    own holding the hostile layout; checked, and nothing but what they name changed."""
    (base / "home").mkdir()
    env = scrubbed_env(base / "home", base / "home")
    run = Run()
    for op in ops:
        root, outside = base / op / "root", base / op / "outside"
        root.mkdir(parents=True)
        git(root, "init", "-q", env=env)
        for name, content in committed_files(with_targets=op not in NO_TARGETS).items():
            write(root / name, content)
        hostile_layout(root, outside, env)
        before = digest(root, outside)
        answers = send(root, env, op, [request(op, c, root, outside) for c in cases_for(op)])
        check_op_results(op, answers, root)
        after = digest(root, outside)
        assert guarded(after, root) == guarded(before, root), op
        changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
        expected = set() if op.endswith("-dry") else _expected_changes(op, root)
        assert changed == expected, op
        run.results.update({(op, c.id): r for c, r in zip(cases_for(op), answers, strict=True)})
        run.places[op] = (root, outside)
    assert os.listdir(base / "home") == []
    return run


@pytest.fixture(scope="module")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    base = tmp_path_factory.mktemp("embedded")

    def send(root: Path, env: dict[str, str], op: str, requests: list[dict[str, Any]]) -> Any:
        args = ["--root", str(root), *(["--dry-run"] if op.endswith("-dry") else [])]
        return run_jsonl(args, requests, base, env)

    yield run_in_folders(base, OPS, send)


def _expected_changes(op: str, root: Path) -> set[str]:
    if op == "read":
        return set()
    touched = {str(root / c.reported) for c in ACCEPTED if c.reported}
    if op == "move":
        touched |= {str(root / victim(c)) for c in ACCEPTED}
    return touched


@pytest.fixture(scope="module")
def gitmode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    base = tmp_path_factory.mktemp("gitmode")
    with _targets_committed(base) as (gm, bare):
        yield _run_git_mode(gm, base, bare, OPS, _apply_session)


@contextlib.contextmanager
def _targets_committed(base: Path) -> Iterator[tuple[GitMode, str]]:
    """A git-mode repository whose HEAD holds the targets, and the commit before them
    (for the operations whose accepted paths must not exist yet)."""
    home = base / "home"
    home.mkdir()
    with git_mode(base, home, committed_files(with_targets=False)) as gm:
        bare = gm.git("rev-parse", "HEAD").strip()
        for name, content in committed_files(with_targets=True).items():
            write(gm.repo / name, content)
        gm.git("add", "-A")
        gm.git("commit", "-q", "-m", "targets")
        # The nested repository's git directory is untracked data, not an external change.
        with (gm.repo / ".git" / "info" / "exclude").open("a") as exclude:
            exclude.write("gitdirs/\n")
        yield gm, bare


GitSend = Callable[[GitMode, str, str, list[dict[str, Any]]], list[Any]]


def _apply_session(gm: GitMode, name: str, op: str, requests: list[dict[str, Any]]) -> list[Any]:
    """``redline apply --session``: the CLI's way to the daemon."""
    args = [
        "--session",
        name,
        "--repo",
        str(gm.repo),
        *(["--dry-run"] if op.endswith("-dry") else []),
    ]
    return run_jsonl(args, requests, gm.repo, gm.env)


def _raw_socket(gm: GitMode, name: str, op: str, requests: list[dict[str, Any]]) -> list[Any]:
    """A socket client of the daemon (``daemon.client.Client``): the daemon's own checks,
    with no front end in front of them."""
    dry = {"dry_run": True} if op.endswith("-dry") else {}
    with Client(gm.socket()) as client:
        return [client.call("apply", {"session": name, "request": r, **dry}) for r in requests]


def _mcp_session(gm: GitMode, name: str, op: str, requests: list[dict[str, Any]]) -> list[Any]:
    """``redline mcp --session``: the MCP server's way to the daemon."""
    return mcp_answers(gm.repo, gm.env, requests, "--session", name, "--repo", str(gm.repo))


def _run_git_mode(
    gm: GitMode, base: Path, bare: str, ops: tuple[str, ...], send: GitSend, prefix: str = ""
) -> Run:
    run = Run()
    main_git = gm.repo / ".git"
    watched = [main_git / "config", main_git / "hooks"]
    for op in ops:
        name = prefix + op.replace("-", "")
        extra = ["--base", bare] if op in NO_TARGETS else []
        worktree = Path(gm.cli.open_session(name, *extra)["worktree"])
        outside = base / (prefix + op) / "outside"
        outside.parent.mkdir(parents=True)
        hostile_layout(worktree, outside, gm.env)
        before = digest(worktree, outside, *watched)
        requests = [request(op, c, worktree, outside) for c in cases_for(op)]
        answers = send(gm, name, op, requests)
        check_op_results(op, answers, worktree)
        after = digest(worktree, outside, *watched)
        assert guarded(after, worktree) == guarded(before, worktree), op
        # No commit of the session carries a path in git's data, nor git's data itself.
        branch = gm.git("log", "--format=", "--name-only", f"{bare}..redline/{name}")
        for path in branch.split():
            assert not names_git(path) and not path.startswith("gitdirs/"), (op, path)
        # Every commit names one edit in one trailer, as git reads trailers: no file name
        # (the worktree holds files named with a newline, committed as external changes)
        # reaches a trailer of a message.
        trailers = gm.git(
            "log", "--format=%H %(trailers:key=Redline-Edit,valueonly,separator=%x2C)",
            f"{bare}..redline/{name}",
        )  # fmt: skip
        for line in trailers.splitlines():
            commit, _, edits = line.partition(" ")
            assert len(edits.split(",")) == 1 and "deadbeef" not in edits, (op, commit, edits)
        messages = gm.git("log", "--format=%B", f"{bare}..redline/{name}")
        assert "\nRedline-Edit: deadbeef0000" not in messages, op
        run.results.update({(op, c.id): r for c, r in zip(cases_for(op), answers, strict=True)})
        run.places[op] = (worktree, outside)
    return run


@pytest.fixture(scope="module")
def raw_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """Every operation sent by a raw socket client of the daemon."""
    base = tmp_path_factory.mktemp("socket")
    with _targets_committed(base) as (gm, bare):
        yield _run_git_mode(gm, base, bare, OPS, _raw_socket, prefix="r")


MCP_OPS = ("edit", "write", "delete-file", "read", "update", "delete", "add", "move")
PATCH_OPS = ("update", "delete", "add", "move")  # shown to a patch-native model only


def mcp_answers(
    root: Path, env: dict[str, str], requests: list[dict[str, Any]], *where: str
) -> list[Any]:
    """The structured results of ``requests`` as tool calls of ``redline mcp`` (``where``:
    ``--embedded`` under ``root`` unless told) for a patch-native model for apply_patch."""
    patch = requests[0]["tool"] == "apply_patch"
    args = (*(where or ("--embedded",)), *(("--model", "gpt-5") if patch else ()))

    async def main() -> list[Any]:
        async with mcp_client.connect(env, root, *args) as session:
            answers = []
            for r in requests:
                arguments = {k: v for k, v in r.items() if k != "tool"}
                answers.append(mcp_client.structured(await session.call_tool(r["tool"], arguments)))
            return answers

    return anyio.run(main)


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The operations an MCP client can call, through ``redline mcp --embedded``."""
    base = tmp_path_factory.mktemp("mcp")
    yield run_in_folders(base, MCP_OPS, lambda root, env, op, rs: mcp_answers(root, env, rs))


@pytest.fixture(scope="module")
def mcp_gitmode(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """The operations an MCP client can call, through ``redline mcp --session``."""
    base = tmp_path_factory.mktemp("mcp-gitmode")
    with _targets_committed(base) as (gm, bare):
        yield _run_git_mode(gm, base, bare, MCP_OPS, _mcp_session, prefix="m")


# --- the verdicts ---------------------------------------------------------------------------


def same_answers(mine: Run, theirs: Run, ops: tuple[str, ...] = OPS, session: bool = True) -> None:
    """``theirs`` answered each of ``ops`` as ``mine`` did: the same status and message,
    and (``session``) named the session it applied in."""
    assert set(theirs.results) == {k for k in mine.results if k[0] in ops}
    for key, answer in theirs.results.items():
        ours = mine.results[key]
        assert ours["status"] == answer["status"], (key, ours["error"], answer["error"])
        assert mine.error(*key) == theirs.error(*key), key
        if session:
            assert answer["session"] is not None, key


def test_mcp_gives_the_same_verdict_and_message_as_apply(embedded: Run, mcp: Run) -> None:
    same_answers(embedded, mcp, MCP_OPS, session=False)


def test_mcp_in_git_mode_gives_the_same_verdict_and_message_as_apply(
    gitmode: Run, mcp_gitmode: Run
) -> None:
    same_answers(gitmode, mcp_gitmode, MCP_OPS)


def test_a_raw_socket_client_gives_the_same_verdict_and_message_as_apply(
    gitmode: Run, raw_socket: Run
) -> None:
    same_answers(gitmode, raw_socket)


def test_every_mode_gives_the_same_verdict_and_message(embedded: Run, gitmode: Run) -> None:
    same_answers(embedded, gitmode)


@pytest.mark.parametrize("case", [c for c in CASES if c.refused], ids=lambda c: c.id)
def test_each_refusal_names_the_path_and_says_what_to_do(embedded: Run, case: Case) -> None:
    for op in (o for o in OPS if case.ops is None or o in case.ops):
        error = embedded.results[(op, case.id)]["error"]
        assert isinstance(error, str)
        says = case.says if op in PATH_TOOLS or case.patch_says is None else case.patch_says
        for phrase in says:
            assert phrase in error, (op, error)
        assert any(action in error for action in ACTIONS), (op, error)
        assert "Traceback" not in error and len(error) < 600, (op, error)
        if not op.startswith("edit") and case.patch_says is None:
            # A patch refuses a path the way an edit does (policy refusals say 'apply_patch:').
            edit_error = embedded.error("edit", case.id)
            mine = embedded.error(op, case.id) or ""
            assert mine.removeprefix("apply_patch: ") == edit_error, (op, mine, edit_error)


def test_dry_run_refuses_what_a_real_run_refuses(
    embedded: Run, gitmode: Run, raw_socket: Run
) -> None:
    for run in (embedded, gitmode, raw_socket):
        for real, dry in (("edit", "edit-dry"), ("add", "add-dry"), ("write", "write-dry")):
            for case in cases_for(real):
                answers = run.results[(real, case.id)], run.results[(dry, case.id)]
                assert answers[0]["status"] == answers[1]["status"], (real, case.id)
                assert run.error(real, case.id) == run.error(dry, case.id), (real, case.id)
                if not case.refused:  # (a request refused while parsing is not marked)
                    assert answers[1]["dry_run"] is True, (dry, case.id)
