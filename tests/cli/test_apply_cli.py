"""``redline apply`` end to end: requests on stdin, results on stdout, exit codes.

Most cases run in-process through click's ``CliRunner`` (``run`` gives them the
environment and working folder a process would have: ``support.cli``); the ones
about the process itself (the installed entry point, flushing in ``--jsonl``,
the locale's stdio encoding) run the real ``redline`` script in a subprocess
with a throwaway ``HOME`` and are marked ``e2e``.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli_support import redline_script
from redline.cli.main import cli
from redline.engine.result import CONTRACT
from redline.engine.similarity import ratio
from support import cli as inproc
from support.env import guarded_home, without_caller_variables

# The result contract (DESIGN "Results"): in every answer, null or not. The other fields
# come only when they say something; these tests read the engine's evidence, so they ask
# for every field (``--full``), and tests/cli/test_answer_fields.py tests the brief answer.
RESULT_FIELDS = set(CONTRACT)

A_PY = (
    b"import os\n"
    b"\n"
    b"\n"
    b"def greet(name):\n"
    b'    return "Hello, " + name\n'
    b"\n"
    b"\n"
    b"def total(items):\n"
    b"    subtotal = sum(item.price for item in items)\n"
    b"    return subtotal * 1.2\n"
)
DUP_PY = b"x = 1\nx = 1\ny = 2\n"
B_PY = b"def f():\n    return 1\n"


REDLINE = redline_script()


# --- fixtures and helpers -------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    with guarded_home(tmp_path / "home") as home:
        yield home


@pytest.fixture
def env(tmp_path: Path, home: Path) -> dict[str, str]:
    """The environment of a subprocess: our own HOME and TMPDIR, no git variables."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    clean = without_caller_variables(os.environ)
    clean.update(HOME=str(home), TMPDIR=str(scratch), PYTHONDONTWRITEBYTECODE="1")
    return clean


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project root with a few files, plus things just outside it."""
    root = tmp_path / "root"
    (root / "pkg").mkdir(parents=True)
    (root / "a.py").write_bytes(A_PY)
    (root / "dup.py").write_bytes(DUP_PY)
    (root / "b.py").write_bytes(B_PY)
    (root / "pkg" / "mod.py").write_bytes(b"VALUE = 1\n")
    (root / "blob.bin").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret = 1\n")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "alias.py").symlink_to("pkg/mod.py")
    old = 1_000_000_000
    for path in (root / "a.py", root / "dup.py", root / "b.py", outside / "secret.txt"):
        os.utime(path, (old, old))  # a rewrite cannot keep this mtime by accident
    return root


def snapshot(directory: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry under ``directory``: bytes, mode, mtime and inode of files, link targets."""
    entries: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames in os.walk(directory):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            key = str(path.relative_to(directory))
            st = path.lstat()
            if path.is_symlink():
                entries[key] = ("link", os.readlink(path))
            elif path.is_dir():
                entries[key] = ("dir", st.st_mode)
            else:
                entries[key] = ("file", path.read_bytes(), st.st_mode, st.st_mtime_ns, st.st_ino)
    return entries


def request(path: str = "a.py", **fields: Any) -> dict[str, Any]:
    return {"tool": "edit", "path": path, **fields}


def line(obj: dict[str, Any]) -> str:
    return json.dumps(obj) + "\n"


def invoke(root: Path, payload: str | bytes, *options: str) -> tuple[int, list[dict[str, Any]]]:
    """Run ``redline apply`` in-process; return the exit code and the parsed result lines."""
    args = ["apply", "--full", "--root", str(root), *options]
    outcome = CliRunner().invoke(cli, args, input=payload)
    if outcome.exception is not None and not isinstance(outcome.exception, SystemExit):
        raise outcome.exception
    results = [json.loads(text) for text in outcome.stdout.splitlines()]
    for result in results:
        assert set(result) >= RESULT_FIELDS
    return outcome.exit_code, results


def invoke_one(root: Path, obj: dict[str, Any], *options: str) -> tuple[int, dict[str, Any]]:
    code, results = invoke(root, json.dumps(obj), *options)
    assert len(results) == 1
    return code, results[0]


def run(
    root: Path,
    payload: bytes,
    env: dict[str, str],
    *options: str,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """``redline apply`` with ``env`` and ``cwd`` as a process would have them, run in this
    process (``support.cli``)."""
    args = ["apply", "--full", *options]
    if cwd is None:
        args[2:2] = ["--root", str(root)]
    return inproc.run_bytes(args, input=payload, env=env, cwd=cwd or root)


def process(
    root: Path,
    payload: bytes,
    env: dict[str, str],
    *options: str,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the installed ``redline apply`` as a real process."""
    args = [REDLINE, "apply", "--full", *options]
    if cwd is None:
        args[3:3] = ["--root", str(root)]
    return subprocess.run(
        args, input=payload, capture_output=True, env=env, cwd=cwd or root, timeout=120
    )


def results_of(proc: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    assert proc.stderr == b"", proc.stderr.decode(errors="replace")
    results = [json.loads(text) for text in proc.stdout.decode("utf-8").splitlines()]
    for result in results:
        assert set(result) >= RESULT_FIELDS
    return results


# --- an exact edit --------------------------------------------------------------


@pytest.mark.e2e  # the installed redline script, as a real process
def test_exact_edit_end_to_end(root: Path, env: dict[str, str]) -> None:
    old = '    return "Hello, " + name\n'
    new = '    return f"Hello, {name}!"\n'
    proc = process(root, json.dumps(request(old_string=old, new_string=new)).encode(), env)
    assert proc.returncode == 0
    [result] = results_of(proc)

    assert (root / "a.py").read_bytes() == A_PY.replace(old.encode(), new.encode())
    assert result["status"] == "applied"
    assert result["path"] == "a.py"
    assert result["match_type"] == "exact"
    assert result["confidence"] == 1.0
    assert isinstance(result["confidence"], float)
    assert re.search(rb'"confidence": 1\.0[,}]', proc.stdout)  # a JSON number, not "1.0"
    assert result["matched_text"] == old
    assert result["matches"] == [
        {
            "match_type": "exact",
            "confidence": 1.0,
            "matched_text": old,
            "start_line": 5,
            "end_line": 5,
        }
    ]
    assert result["error"] is None
    assert result["hint"] is None
    assert result["cleaned"] == []
    assert result["skipped"] == []
    assert result["failures"] == []
    diff = result["diff"]
    assert diff.startswith("--- a/a.py\n+++ b/a.py\n@@ ")
    assert '\n-    return "Hello, " + name\n' in diff
    assert '\n+    return f"Hello, {name}!"\n' in diff


def test_multi_line_exact_edit_reports_its_lines(root: Path) -> None:
    old = "def total(items):\n    subtotal = sum(item.price for item in items)\n"
    new = "def total(items, rate):\n    subtotal = sum(item.price for item in items)\n"
    code, result = invoke_one(root, request(old_string=old, new_string=new))
    assert code == 0
    assert result["status"] == "applied"
    [match] = result["matches"]
    assert (match["start_line"], match["end_line"]) == (8, 9)
    assert isinstance(match["start_line"], int)
    assert (root / "a.py").read_bytes() == A_PY.replace(old.encode(), new.encode())


def test_default_root_is_the_current_directory(root: Path, env: dict[str, str]) -> None:
    payload = json.dumps(request("pkg/mod.py", old_string="VALUE = 1", new_string="VALUE = 2"))
    proc = run(root, payload.encode(), env, cwd=root)
    assert proc.returncode == 0
    assert results_of(proc)[0]["status"] == "applied"
    assert (root / "pkg" / "mod.py").read_bytes() == b"VALUE = 2\n"


def test_symlink_inside_the_root_edits_its_target(root: Path) -> None:
    code, result = invoke_one(root, request("alias.py", old_string="1", new_string="3"))
    assert (code, result["status"]) == (0, "applied")
    assert (root / "pkg" / "mod.py").read_bytes() == b"VALUE = 3\n"
    assert (root / "alias.py").is_symlink()


# --- tolerant edits -------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "match_type", "confidence", "expected"),
    [
        pytest.param(
            "def total(items):\n  subtotal = sum(item.price for item in items)\n"
            "  return subtotal * 1.2\n",
            "def total(items):\n  subtotal = sum(item.price for item in items)\n"
            "  return subtotal * 1.25\n",
            "whitespace",
            0.95,
            A_PY.replace(b"* 1.2\n", b"* 1.25\n"),
            id="whitespace",
        ),
        pytest.param(
            "return \u201cHello, \u201d + name",
            "return \u201cHello, \u201d + name.title()",
            "punctuation",
            0.97,
            A_PY.replace(b"+ name\n", b"+ name.title()\n"),
            id="punctuation",
        ),
    ],
)
def test_tolerant_edit_reports_its_match_type(
    root: Path, old: str, new: str, match_type: str, confidence: float, expected: bytes
) -> None:
    code, result = invoke_one(root, request(old_string=old, new_string=new))
    assert code == 0
    assert result["status"] == "applied"
    assert result["match_type"] == match_type
    assert result["confidence"] == confidence
    [match] = result["matches"]
    assert match["match_type"] == match_type
    # matched_text is the file's own text, and the file keeps its own style.
    assert result["matched_text"] != old
    assert result["matched_text"].encode() in A_PY
    assert (root / "a.py").read_bytes() == expected


# --- --dry-run ------------------------------------------------------------------


def test_dry_run_computes_the_diff_and_writes_nothing(
    root: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    before = snapshot(tmp_path)
    payload = json.dumps(request(old_string="import os", new_string="import sys")).encode()
    proc = run(root, payload, env, "--dry-run")
    assert proc.returncode == 0
    [result] = results_of(proc)
    assert result["status"] == "applied"
    assert result["match_type"] == "exact"
    assert "\n-import os\n+import sys\n" in result["diff"]
    assert snapshot(tmp_path) == before  # bytes, mtime and inode unchanged, no temp file


def test_dry_run_with_jsonl_and_a_batch(root: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    payload = line(request(old_string="import os", new_string="import sys")) + line(
        request(
            "dup.py",
            edits=[{"old_string": "y = 2", "new_string": "y = 3"}],
        )
    )
    code, results = invoke(root, payload, "--jsonl", "--dry-run")
    assert code == 0
    assert [r["status"] for r in results] == ["applied", "applied"]
    assert all(r["diff"] for r in results)
    assert snapshot(tmp_path) == before


# --- exit codes -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "status", "code"),
    [
        (request(old_string="import os", new_string="import re"), "applied", 0),
        # whitespace-tolerant match whose merged result is the file as it is
        (request("b.py", old_string="return  1", new_string="return 1"), "no_change", 0),
        (
            request("b.py", edits=[{"old_string": "return 1", "new_string": "return 1"}]),
            "no_change",
            0,
        ),
        (request(old_string="def missing_function():\n", new_string="x"), "no_match", 1),
        (request("dup.py", old_string="x = 1", new_string="x = 2"), "ambiguous", 1),
        (request(old_string="import os", new_string="import os"), "invalid", 2),
        (request(old_string="", new_string="x"), "invalid", 2),
    ],
)
def test_exit_code_follows_status(root: Path, obj: dict[str, Any], status: str, code: int) -> None:
    got_code, result = invoke_one(root, obj)
    assert (result["status"], got_code) == (status, code)
    if status != "applied":
        assert result["diff"] is None
    if code:
        assert result["error"]


def test_ambiguous_lists_every_candidate(root: Path) -> None:
    code, result = invoke_one(root, request("dup.py", old_string="x = 1", new_string="x = 2"))
    assert code == 1
    assert "found 2 times" in result["error"]
    assert "replace_all" in result["error"]
    assert [(m["start_line"], m["end_line"]) for m in result["matches"]] == [(1, 1), (2, 2)]
    assert (root / "dup.py").read_bytes() == DUP_PY


def test_replace_all_changes_every_occurrence(root: Path) -> None:
    code, result = invoke_one(
        root, request("dup.py", old_string="x = 1", new_string="x = 2", replace_all=True)
    )
    assert (code, result["status"]) == (0, "applied")
    assert [m["start_line"] for m in result["matches"]] == [1, 2]
    assert (root / "dup.py").read_bytes() == b"x = 2\nx = 2\ny = 2\n"


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["applied", "no_change"], 0),
        (["applied", "no_match"], 1),
        (["ambiguous", "applied"], 1),
        (["no_match", "invalid", "applied"], 2),
        (["invalid", "no_match"], 2),
    ],
)
def test_jsonl_exit_code_is_the_highest(root: Path, statuses: list[str], code: int) -> None:
    by_status = {
        "applied": request(old_string="import os", new_string="import os.path"),
        "no_change": request("b.py", old_string="return  1", new_string="return 1"),
        "no_match": request(old_string="nothing like this at all", new_string="x"),
        "ambiguous": request("dup.py", old_string="x = 1", new_string="x = 2"),
        "invalid": request("missing.py", old_string="a", new_string="b"),
    }
    payload = "".join(line(by_status[s]) for s in statuses)
    got_code, results = invoke(root, payload, "--jsonl")
    assert [r["status"] for r in results] == statuses
    assert got_code == code


def test_jsonl_skips_blank_lines_and_keeps_order(root: Path) -> None:
    payload = (
        "\n"
        + line(request(old_string="import os", new_string="import sys"))
        + "   \n"
        + line(request(old_string="import sys", new_string="import re"))
        + "\r\n"
        + line(request("pkg/mod.py", old_string="VALUE = 1", new_string="VALUE = 5"))
    )
    code, results = invoke(root, payload, "--jsonl")
    assert code == 0
    assert [r["path"] for r in results] == ["a.py", "a.py", "pkg/mod.py"]
    # The second request saw the first one's write: requests run in order.
    assert [r["matched_text"] for r in results] == ["import os", "import sys", "VALUE = 1"]
    assert (root / "a.py").read_bytes().startswith(b"import re\n")


def test_jsonl_empty_input_exits_zero(root: Path) -> None:
    assert invoke(root, "", "--jsonl") == (0, [])


@pytest.mark.e2e  # a real pipe: each result flushed as it is made
def test_jsonl_results_are_flushed_one_at_a_time(root: Path, env: dict[str, str]) -> None:
    """Send one request, read its result back, only then send the next."""
    proc = subprocess.Popen(
        [REDLINE, "apply", "--jsonl", "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[bytes] = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout], daemon=True)
    reader.start()
    steps = [
        (request(old_string="import os", new_string="import sys"), "applied"),
        # only matches if the previous result was written before this was read
        (request(old_string="import sys", new_string="import re"), "applied"),
        (request(old_string="import os", new_string="import os"), "invalid"),
        (request(old_string="no such text in the file", new_string="x"), "no_match"),
        (request(old_string="import re", new_string="import json"), "applied"),
    ]
    try:
        for obj, status in steps:
            proc.stdin.write(line(obj).encode())
            proc.stdin.flush()
            try:
                result = json.loads(lines.get(timeout=60))
            except queue.Empty:
                pytest.fail(f"no result for {obj} while stdin is still open: not flushed")
            assert result["status"] == status
            assert lines.empty()
        proc.stdin.close()
        assert proc.wait(timeout=60) == 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    reader.join(timeout=10)
    assert lines.empty()
    assert proc.stderr is not None
    assert proc.stderr.read() == b""
    proc.stdout.close()
    proc.stderr.close()
    assert (root / "a.py").read_bytes().startswith(b"import json\n")


# --- invalid requests -----------------------------------------------------------

Case = Callable[[Path], bytes]


def _obj(**fields: Any) -> Case:
    return lambda outside: json.dumps(fields).encode()


INVALID: list[Any] = [
    pytest.param(lambda o: b'{"tool": "edit", "path": "a.py",', ["not valid JSON"], id="bad-json"),
    pytest.param(lambda o: b"", ["not valid JSON", "send one JSON object"], id="empty"),
    pytest.param(lambda o: b'["edit"]', ["must be a JSON object"], id="not-an-object"),
    pytest.param(lambda o: b"[" * 100_000 + b"]" * 100_000, ["nested too deeply"], id="too-deep"),
    pytest.param(
        lambda o: b'{"tool": "edit", "path": "a.py", "old_string": "\xff", "new_string": "x"}',
        ["not valid UTF-8"],
        id="not-utf8",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", old_string="import os"),
        ["missing field new_string", "needs old_string and new_string"],
        id="missing-new",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py"),
        ["missing field old_string and new_string"],
        id="missing-both",
    ),
    pytest.param(
        _obj(tool="edit", old_string="a", new_string="b"), ["path", "Expected e.g."], id="no-path"
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", old_string="import os", new_string="x", replace_all="yes"),
        ["replace_all", "Expected e.g."],
        id="replace_all-string",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", old_string=5, new_string="x"),
        ["old_string", "valid string"],
        id="old_string-int",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", edits=[{"old_string": "import os", "new_string": 1}]),
        ["edits.0.new_string"],
        id="edit-item-type",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", edits=[]), ["edits", "at least 1"], id="empty-edits"
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", old_str="import os", new_string="x"),
        ["old_str", "Expected e.g."],
        id="misspelt-field",
    ),
    pytest.param(
        _obj(tool="rename", path="a.py", old_string="import os", new_string="x"),
        ["unknown tool 'rename'", '"edit"', '"write", "delete" or "read"'],
        id="unknown-tool",
    ),
    pytest.param(
        _obj(path="a.py", old_string="import os", new_string="x"),
        ["unknown tool None"],
        id="no-tool",
    ),
    pytest.param(
        _obj(
            tool="edit",
            path="a.py",
            old_string="import os",
            new_string="x",
            edits=[{"old_string": "import os", "new_string": "y"}],
        ),
        ["either old_string/new_string/replace_all or edits, not both"],
        id="mixed",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", old_string="import os", new_string="x", threshold=1.5),
        ["threshold"],
        id="threshold-range",
    ),
    pytest.param(
        _obj(tool="edit", path="../outside/secret.txt", old_string="secret", new_string="x"),
        ["contains '..', which could leave the root", "'..' is not allowed"],
        id="dotdot",
    ),
    pytest.param(
        lambda o: json.dumps(
            request(str(o / "secret.txt"), old_string="secret", new_string="x")
        ).encode(),
        ["is absolute", "relative to the root"],
        id="absolute",
    ),
    pytest.param(
        _obj(tool="edit", path="escape.txt", old_string="secret", new_string="x"),
        ["outside the root through a symbolic link", "name a file inside it"],
        id="symlink-escape",
    ),
    pytest.param(
        _obj(tool="edit", path="pkg", old_string="VALUE", new_string="x"),
        ["is a directory; name a file"],
        id="directory",
    ),
    pytest.param(
        _obj(tool="edit", path="nope.py", old_string="a", new_string="b"),
        ["does not exist", "check the path"],
        id="missing-file",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py\x00.txt", old_string="a", new_string="b"),
        ["NUL byte"],
        id="nul-in-path",
    ),
    pytest.param(
        lambda o: b'{"tool": "edit", "path": "a.py", "old_string": ' + b"7" * 5000 + b"}",
        ["could not be decoded", "too large to read"],
        id="number-too-long",
    ),
    pytest.param(
        _obj(tool="apply_patch", patch="*** Begin Patch\n*** Add File: \ud800.txt\n+x\n"),
        ["lone surrogate", "as the file's name is spelt"],
        id="lone-surrogate-in-patch-path",
    ),
    pytest.param(
        _obj(tool="edit", path="blob.bin", old_string="IHDR", new_string="x"),
        ["binary", "another tool"],
        id="binary",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", old_string="", new_string="x"),
        ["old_string is empty"],
        id="empty-old",
    ),
    pytest.param(
        _obj(tool="edit", path="a.py", old_string="import os", new_string="import os"),
        ["old_string and new_string are identical"],
        id="identical",
    ),
]


@pytest.mark.parametrize(("payload", "phrases"), INVALID)
def test_invalid_request_is_explained_and_changes_nothing(
    root: Path, tmp_path: Path, payload: Case, phrases: list[str]
) -> None:
    before = snapshot(tmp_path)
    code, results = invoke(root, payload(tmp_path / "outside"))
    assert code == 2
    [result] = results
    assert result["status"] == "invalid"
    for phrase in phrases:
        assert phrase in result["error"]
    assert result["matches"] == [] and result["diff"] is None
    assert snapshot(tmp_path) == before


def test_invalid_requests_in_one_jsonl_stream(
    root: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    """The real process: each bad request gets its own result; none stops the stream."""
    outside = tmp_path / "outside"
    cases = [p.values for p in INVALID if p.id != "empty"]  # an empty line is skipped
    payload = b"".join(make(outside) + b"\n" for make, _ in cases)
    before = snapshot(tmp_path)
    proc = run(root, payload, env, "--jsonl")
    assert proc.returncode == 2
    results = results_of(proc)
    assert len(results) == len(cases)
    for result, (_, phrases) in zip(results, cases, strict=True):
        assert result["status"] == "invalid"
        for phrase in phrases:
            assert phrase in result["error"]
    assert snapshot(tmp_path) == before


def test_invalid_result_names_the_path_it_was_given(root: Path) -> None:
    _, result = invoke_one(root, request("pkg", old_string="a", new_string="b"))
    assert result["path"] == "pkg"
    _, result = invoke_one(root, {"tool": "write", "path": "a.py"})
    assert result["path"] == "a.py"
    _, result = invoke_one(root, {"tool": "edit", "path": 7})
    assert result["path"] is None


@pytest.mark.parametrize("value", ["0", "-1", "1.5", "high"])
def test_threshold_option_is_checked_by_the_cli(root: Path, value: str) -> None:
    outcome = CliRunner().invoke(
        cli, ["apply", "--root", str(root), "--threshold", value], input="{}"
    )
    assert outcome.exit_code == 2
    assert "--threshold" in outcome.output
    assert (root / "a.py").read_bytes() == A_PY


def test_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    outcome = CliRunner().invoke(cli, ["apply", "--root", str(tmp_path / "nope")], input="{}")
    assert outcome.exit_code == 2
    assert "--root" in outcome.output


# --- newlines and non-ASCII text survive JSON -------------------------------------


def test_newlines_in_old_and_new_are_kept(root: Path) -> None:
    old = 'def greet(name):\n    return "Hello, " + name\n\n\n'
    new = 'def greet(name):\n    greeting = "Hello, "\n\n    return greeting + name\n\n\n'
    code, result = invoke_one(root, request(old_string=old, new_string=new))
    assert (code, result["status"], result["match_type"]) == (0, "applied", "exact")
    assert result["matched_text"] == old
    assert (root / "a.py").read_bytes() == A_PY.replace(old.encode(), new.encode())


def test_crlf_file_is_matched_and_written_in_its_own_style(root: Path) -> None:
    (root / "w.txt").write_bytes(b"line one\r\nline two\r\nline three\r\n")
    old = "line one\nline two\n"
    new = "line one\nline 2\nextra\n"
    code, result = invoke_one(root, request("w.txt", old_string=old, new_string=new))
    assert (code, result["status"], result["match_type"]) == (0, "applied", "exact")
    assert result["matched_text"] == "line one\r\nline two\r\n"  # the file's own bytes
    assert (result["matches"][0]["start_line"], result["matches"][0]["end_line"]) == (1, 2)
    assert (root / "w.txt").read_bytes() == b"line one\r\nline 2\r\nextra\r\nline three\r\n"


def test_crlf_in_the_request_matches_a_crlf_file(root: Path) -> None:
    (root / "w.txt").write_bytes(b"line one\r\nline two\r\n")
    code, result = invoke_one(
        root, request("w.txt", old_string="line one\r\nline two", new_string="line one\r\nline 2")
    )
    assert (code, result["status"]) == (0, "applied")
    assert (root / "w.txt").read_bytes() == b"line one\r\nline 2\r\n"


NON_ASCII = "名前 = '太郎'  # 😀 greeting\nprint(名前)\n"


@pytest.mark.parametrize("ensure_ascii", [False, True], ids=["raw-utf8", "escaped"])
def test_non_ascii_round_trips(root: Path, env: dict[str, str], ensure_ascii: bool) -> None:
    (root / "jp.py").write_bytes(NON_ASCII.encode())
    old = "名前 = '太郎'  # 😀"
    new = "名前 = '花子'  # 🎉"
    payload = json.dumps(
        request("jp.py", old_string=old, new_string=new), ensure_ascii=ensure_ascii
    )
    proc = run(root, payload.encode(), env)
    assert proc.returncode == 0
    [result] = results_of(proc)
    assert result["status"] == "applied"
    assert result["matched_text"] == old
    assert "+名前 = '花子'  # 🎉 greeting\n" in result["diff"]
    assert "🎉".encode() in proc.stdout  # readable UTF-8 on stdout, not \ud83c escapes
    assert (root / "jp.py").read_bytes() == NON_ASCII.replace(old, new).encode()


@pytest.mark.e2e  # the locale of a real process's stdio
def test_non_ascii_whatever_the_locale_says(root: Path, env: dict[str, str]) -> None:
    """JSON on stdin/stdout is UTF-8 even when the stdio encoding is not."""
    (root / "jp.py").write_bytes(NON_ASCII.encode())
    old, new = "太郎", "花子"
    payload = json.dumps(request("jp.py", old_string=old, new_string=new), ensure_ascii=False)
    proc = process(root, payload.encode(), {**env, "PYTHONIOENCODING": "latin-1"})
    assert proc.returncode == 0
    [result] = results_of(proc)
    assert result["matched_text"] == "太郎"
    assert (root / "jp.py").read_bytes() == NON_ASCII.replace(old, new).encode()


@pytest.mark.e2e  # what a real process's stdout can encode
def test_lone_surrogate_is_answered_not_crashed(
    root: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    """JSON may carry "\\ud800"; the result must still be one valid JSON line."""
    before = snapshot(tmp_path)
    payload = (
        b'{"tool": "edit", "path": "a\\ud800.py", "old_string": "a", "new_string": "b"}\n'
        b'{"tool": "edit", "path": "a.py", "old_string": "import os", "new_string": "x\\udc80"}\n'
    )
    proc = process(root, payload, env, "--jsonl")
    assert proc.returncode == 2
    first, second = results_of(proc)
    assert first["status"] == "invalid"
    assert first["path"] == "a\ud800.py"
    assert second["status"] == "invalid"
    assert snapshot(tmp_path) == before


# --- thresholds -----------------------------------------------------------------

# Slips of the pen on two lines and one line that really differs: the most a
# fuzzy match absorbs.
# Slips on every line, and the middle one also drifted (a block's first and last
# lines are never the drifted one).
FUZZY_OLD = (
    "def totla(itmes):\n    sbutotal = sum(itme.prcie for itme in itmes + extra)\n"
    "    return sbutotal * 1.2\n"
)
FUZZY_NEW = (
    "def total(items, rate):\n    sbutotal = sum(itme.prcie for itme in itmes + extra)\n"
    "    return sbutotal * 1.2\n"
)
FUZZY_BLOCK = (
    "def total(items):\n    subtotal = sum(item.price for item in items)\n"
    "    return subtotal * 1.2\n"
)


def test_fuzzy_case_is_borderline() -> None:
    """The case below sits between the default threshold 0.8 and 0.9."""
    assert FUZZY_BLOCK.encode() in A_PY
    assert 0.8 <= ratio(FUZZY_OLD, FUZZY_BLOCK) < 0.9


def _fuzzy(**fields: Any) -> dict[str, Any]:
    return request(old_string=FUZZY_OLD, new_string=FUZZY_NEW, **fields)


def test_fuzzy_edit_applies_at_the_default_threshold(root: Path) -> None:
    code, result = invoke_one(root, _fuzzy())
    assert (code, result["status"], result["match_type"]) == (0, "applied", "fuzzy")
    assert result["matched_text"] == FUZZY_BLOCK
    assert result["confidence"] == ratio(FUZZY_OLD, FUZZY_BLOCK)  # unrounded
    assert (root / "a.py").read_bytes() == A_PY.replace(
        b"def total(items):", b"def total(items, rate):"
    )


def test_threshold_option_turns_it_into_no_match(root: Path) -> None:
    code, result = invoke_one(root, _fuzzy(), "--threshold", "0.9")
    assert (code, result["status"]) == (1, "no_match")
    assert "not found" in result["error"]
    assert "lines 8-10" in result["error"]  # the nearest block is pointed out
    assert (root / "a.py").read_bytes() == A_PY


def test_request_threshold_wins_over_the_option(root: Path) -> None:
    code, result = invoke_one(root, _fuzzy(threshold=0.9))
    assert (code, result["status"]) == (1, "no_match")
    code, result = invoke_one(root, _fuzzy(threshold=0.8), "--threshold", "0.9")
    assert (code, result["status"], result["match_type"]) == (0, "applied", "fuzzy")


# --- the repeated-failure hint --------------------------------------------------

MISS = {"old_string": "def nowhere_in_this_file():\n    pass\n", "new_string": "x"}
HINT_MARK = "re-read the target range"


def _hints(root: Path, steps: list[dict[str, Any]]) -> list[str | None]:
    _, results = invoke(root, "".join(line(s) for s in steps), "--jsonl")
    assert len(results) == len(steps)
    return [r["hint"] for r in results]


def test_hint_from_the_second_failure_on_a_file(root: Path) -> None:
    hints = _hints(
        root,
        [
            request("dup.py", **MISS),  # 1st failure on dup.py
            request("dup.py", **MISS),  # 2nd
            request("b.py", **MISS),  # another file counts on its own
            request("dup.py", old_string="x = 1", new_string="x = 3"),  # ambiguous: 3rd
            request("dup.py", old_string="y = 2", new_string="y = 3"),  # success resets
            request("dup.py", **MISS),  # 1st again
            request("dup.py", **MISS),  # 2nd again
        ],
    )
    assert hints[0] is None
    assert hints[1] is not None and HINT_MARK in hints[1]
    assert "failed attempt 2 on dup.py" in hints[1]
    assert hints[2] is None
    assert hints[3] is not None and "failed attempt 3" in hints[3]
    assert hints[4] is None
    assert hints[5] is None
    assert hints[6] is not None and "failed attempt 2" in hints[6]


def test_hint_resets_when_the_turn_changes(root: Path) -> None:
    hints = _hints(
        root,
        [
            request("dup.py", turn=1, **MISS),
            request("dup.py", turn=1, **MISS),
            request("dup.py", turn=2, **MISS),
            request("dup.py", turn=2, **MISS),
            request("dup.py", turn="t3", **MISS),
        ],
    )
    assert [h is not None for h in hints] == [False, True, False, True, False]


def test_without_a_turn_no_hint_across_separate_invocations(root: Path) -> None:
    """Nothing says that two calls without a turn belong to one turn."""
    for _ in range(3):
        _, result = invoke_one(root, request("dup.py", **MISS))
        assert result["status"] == "no_match"
        assert result["hint"] is None


def test_the_hint_of_a_turn_lasts_across_separate_invocations(root: Path) -> None:
    """Two ``redline apply`` calls (an agent that starts one per edit) with one turn: the
    second failure on the file gets the hint; another turn, or a success, starts over."""
    hints = [
        invoke_one(root, request("dup.py", turn="t1", **MISS))[1]["hint"],
        invoke_one(root, request("dup.py", turn="t1", **MISS))[1]["hint"],
        invoke_one(root, request("b.py", turn="t1", **MISS))[1]["hint"],
        invoke_one(root, request("dup.py", turn="t1", **MISS))[1]["hint"],
        invoke_one(root, request("dup.py", turn="t2", **MISS))[1]["hint"],
        invoke_one(root, request("dup.py", turn="t2", old_string="y = 2", new_string="y = 3"))[1][
            "hint"
        ],
        invoke_one(root, request("dup.py", turn="t2", **MISS))[1]["hint"],
    ]
    assert hints[0] is None
    assert hints[1] == (
        "this is failed attempt 2 on dup.py in this turn: re-read the target range of the "
        "file and copy old_string from what you read (or rewrite the whole section) instead "
        "of retyping old text from memory"
    )
    assert hints[2] is None  # another file counts on its own
    assert hints[3] is not None and "failed attempt 3 on dup.py" in hints[3]
    assert hints[4:] == [None, None, None]  # a new turn; a success; the count starts over


# --- batch edits ----------------------------------------------------------------

ABC = b"a = 1\nb = 2\nc = 3\n"


@pytest.fixture
def abc(root: Path) -> Path:
    (root / "abc.py").write_bytes(ABC)
    return root


def _batch(*edits: tuple[str, str]) -> dict[str, Any]:
    return request("abc.py", edits=[{"old_string": o, "new_string": n} for o, n in edits])


def test_batch_is_all_or_nothing(abc: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    code, result = invoke_one(
        abc, _batch(("a = 1", "a = 10"), ("zzz = 0", "z"), ("c = 3", "c = 3"), ("b = 2", "b = 20"))
    )
    assert code == 1
    assert result["status"] == "no_match"
    assert result["error"].startswith("1 of 4 edits failed, nothing was written")
    [failure] = result["failures"]
    assert failure["index"] == 1
    assert failure["status"] == "no_match"
    assert "not found" in failure["error"]
    assert result["skipped"] == [2]
    assert result["diff"] is None
    assert snapshot(tmp_path) == before


def test_batch_lists_every_failure(abc: Path) -> None:
    code, result = invoke_one(
        abc, _batch(("a = 1", "a = 10"), ("zzz", "z"), ("b = 2", "b = 20"), (" = ", " := "))
    )
    assert code == 1
    assert [(f["index"], f["status"]) for f in result["failures"]] == [
        (1, "no_match"),
        (3, "ambiguous"),
    ]
    assert "found 3 times" in result["failures"][1]["error"]
    assert (abc / "abc.py").read_bytes() == ABC


def test_batch_matches_exactly_only(abc: Path) -> None:
    code, result = invoke_one(abc, _batch(("a  =  1", "a = 10")))
    assert (code, result["status"]) == (1, "no_match")
    assert "batch edits match exactly" in result["failures"][0]["error"]
    assert (abc / "abc.py").read_bytes() == ABC


def test_batch_overlap_is_refused(abc: Path) -> None:
    code, result = invoke_one(abc, _batch(("a = 1\nb", "A = 1\nB"), ("b = 2", "b = 20")))
    assert result["failures"][0]["index"] == 1
    assert "overlaps" in result["failures"][0]["error"]
    assert (code, result["status"]) == (2, "invalid")  # a malformed batch
    assert (abc / "abc.py").read_bytes() == ABC


def test_batch_applies_with_a_skipped_item(abc: Path) -> None:
    code, result = invoke_one(
        abc, _batch(("c = 3", "c = 30"), ("b = 2", "b = 2"), ("a = 1", "a = 10"))
    )
    assert (code, result["status"]) == (0, "applied")
    assert result["skipped"] == [1]
    assert result["failures"] == []
    # matches are in file order, lines from the file before the edit
    assert [(m["matched_text"], m["start_line"]) for m in result["matches"]] == [
        ("a = 1", 1),
        ("c = 3", 3),
    ]
    assert (abc / "abc.py").read_bytes() == b"a = 10\nb = 2\nc = 30\n"


def test_batch_of_only_skipped_items_is_no_change(abc: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    code, result = invoke_one(abc, _batch(("a = 1", "a = 1"), ("c = 3", "c = 3")))
    assert (code, result["status"]) == (0, "no_change")
    assert result["skipped"] == [0, 1]
    assert snapshot(tmp_path) == before


# --- internal errors answer the request; the stream goes on ---------------------------


def _raise_for(path: str, exc: Exception, real: Callable[..., Any]) -> Callable[..., Any]:
    def fake(data: bytes, request: Any) -> Any:
        if request.path == path:
            raise exc
        return real(data, request)

    return fake


def test_internal_error_becomes_a_failed_result_and_the_stream_goes_on(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redline.engine.edit_plan as edit_plan

    boom = RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(edit_plan, "apply_edit", _raise_for("a.py", boom, edit_plan.apply_edit))
    before = snapshot(tmp_path)
    payload = line(request("a.py", old_string="import os", new_string="import json")) + line(
        request("b.py", old_string="return 1", new_string="return 2")
    )
    code, (failed, applied) = invoke(root, payload, "--jsonl")
    assert code == 1
    assert failed["status"] == "failed"
    assert failed["path"] == "a.py"
    assert failed["error"].startswith(
        "internal error: RecursionError: maximum recursion depth exceeded; nothing was written"
    )
    assert applied["status"] == "applied"
    assert (root / "b.py").read_bytes() == b"def f():\n    return 2\n"
    after = snapshot(tmp_path)
    del before["root/b.py"], after["root/b.py"]
    assert after == before


def test_internal_error_in_a_single_request_prints_a_result_and_exits_1(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redline.engine.edit_plan as edit_plan

    boom = KeyError("lost")
    monkeypatch.setattr(edit_plan, "apply_edit", _raise_for("a.py", boom, edit_plan.apply_edit))
    before = snapshot(tmp_path)
    outcome = CliRunner().invoke(
        cli,
        ["apply", "--root", str(root)],
        input=json.dumps(request("a.py", old_string="import os", new_string="import json")),
    )
    assert isinstance(outcome.exception, SystemExit)
    assert outcome.exit_code == 1
    [result] = [json.loads(text) for text in outcome.stdout.splitlines()]
    assert result["status"] == "failed"
    assert result["error"].startswith("internal error: KeyError: 'lost'; nothing was written")
    assert "Traceback" not in outcome.output
    assert snapshot(tmp_path) == before


def test_internal_error_while_a_patch_writes_rolls_back_and_reports_failed(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import redline.fsops.patch as fs_patch

    real = fs_patch.write_atomic
    calls: list[Path] = []

    def flaky(path: Path, data: bytes) -> None:
        calls.append(path)
        if len(calls) == 2:  # the second file of the request
            raise ValueError("disk gremlin")
        real(path, data)

    monkeypatch.setattr(fs_patch, "write_atomic", flaky)
    before = snapshot(tmp_path)
    patch = (
        "*** Begin Patch\n*** Update File: a.py\n@@\n-import os\n+import json\n"
        "*** Update File: b.py\n@@\n-    return 1\n+    return 2\n*** End Patch\n"
    )
    code, [result] = invoke(root, json.dumps({"tool": "apply_patch", "patch": patch}))
    assert code == 1
    assert result["status"] == "failed"
    assert result["error"].startswith("internal error: ValueError: disk gremlin; nothing was")
    after = snapshot(tmp_path)
    # a.py was written, then put back: same bytes and mode (a new inode and mtime).
    assert after["root/a.py"][1:3] == before["root/a.py"][1:3]
    del before["root/a.py"], after["root/a.py"]
    assert after == before


def test_jsonl_odd_requests_then_a_valid_one_are_all_answered(
    root: Path, env: dict[str, str]
) -> None:
    """The real process: requests that once killed the stream, then one that applies."""
    payload = (
        b'{"tool": "edit", "path": "a.py", "old_string": ' + b"9" * 5000 + b"}\n"
        + line(
            {"tool": "apply_patch", "patch": "*** Begin Patch\n*** Delete File: \udfff\n"}
        ).encode()
        + line(request("b.py", old_string="return 1", new_string="return 2")).encode()
    )  # fmt: skip
    proc = run(root, payload, env, "--jsonl")
    odd_number, odd_path, valid = results_of(proc)
    assert proc.returncode == 2
    assert odd_number["status"] == "invalid" and "too large to read" in odd_number["error"]
    assert odd_path["status"] == "invalid" and "lone surrogate" in odd_path["error"]
    assert valid["status"] == "applied"
    assert (root / "b.py").read_bytes() == b"def f():\n    return 2\n"


# --- absolute paths inside the root -----------------------------------------------------


def _patch_request(*sections: str) -> dict[str, Any]:
    return {
        "tool": "apply_patch",
        "patch": "*** Begin Patch\n" + "".join(sections) + "*** End Patch",
    }


def test_absolute_edit_path_inside_the_root_is_accepted_and_reported_relative(
    root: Path,
) -> None:
    target = root.resolve() / "pkg" / "mod.py"
    code, result = invoke_one(
        root, request(str(target), old_string="VALUE = 1", new_string="V = 2")
    )
    assert (code, result["status"], result["path"]) == (0, "applied", "pkg/mod.py")
    assert target.read_bytes() == b"V = 2\n"
    assert "a/pkg/mod.py" in result["diff"] and str(root) not in result["diff"]


def test_absolute_paths_in_every_patch_operation_are_reported_relative(root: Path) -> None:
    base = root.resolve()
    payload = _patch_request(
        f"*** Add File: {base}/pkg/new.py\n+NEW = 1\n",
        f"*** Update File: {base}/b.py\n*** Move to: {base}/pkg/moved.py\n"
        "@@\n-    return 1\n+    return 2\n",
        f"*** Delete File: {base}/dup.py\n",
        f"*** Update File: {base}/a.py\n@@\n-import os\n+import json\n",
    )
    code, result = invoke_one(root, payload)
    assert (code, result["status"]) == (0, "applied"), result["error"]
    assert result["committed"] == []  # embedded mode writes the files; nothing is committed
    assert [g["paths"] for g in result["written"]] == [
        ["pkg/new.py"],
        ["b.py", "pkg/moved.py"],
        ["dup.py"],
        ["a.py"],
    ]
    assert {h["path"] for h in result["hunks"]} == {"b.py", "a.py"}
    assert str(base) not in json.dumps(result)
    assert (root / "pkg" / "new.py").read_bytes() == b"NEW = 1\n"
    assert (root / "pkg" / "moved.py").read_bytes() == b"def f():\n    return 2\n"
    assert not (root / "b.py").exists() and not (root / "dup.py").exists()
    assert (root / "a.py").read_bytes().startswith(b"import json\n")


def test_relative_and_absolute_spellings_of_one_file_in_a_patch_are_one_path(root: Path) -> None:
    payload = _patch_request(
        f"*** Update File: {root.resolve()}/a.py\n@@\n-import os\n+import json\n",
        "*** Update File: a.py\n@@\n-import json\n+import sys\n",
    )
    code, result = invoke_one(root, payload)
    assert (code, result["path"]) == (0, "a.py")
    assert (root / "a.py").read_bytes().startswith(b"import sys\n")


def test_absolute_path_with_a_root_given_relative(root: Path, env: dict[str, str]) -> None:
    """The real process, run beside the root and given ``--root root``."""
    edit = request(str(root.resolve() / "a.py"), old_string="import os", new_string="import re")
    patch = _patch_request(f"*** Add File: {root.resolve()}/pkg/x.py\n+X = 1\n")
    proc = run(
        root,
        (line(edit) + line(patch)).encode(),
        env,
        "--root",
        "root",
        "--jsonl",
        cwd=root.parent,
    )
    edited, added = results_of(proc)
    assert (edited["status"], edited["path"]) == ("applied", "a.py")
    assert (added["status"], added["written"][0]["paths"]) == ("applied", ["pkg/x.py"])
    assert (root / "a.py").read_bytes().startswith(b"import re\n")
    assert (root / "pkg" / "x.py").read_bytes() == b"X = 1\n"


@pytest.mark.parametrize("spelling", ["link", "resolved"])
def test_absolute_path_with_a_root_reached_through_a_symlink(
    root: Path, tmp_path: Path, env: dict[str, str], spelling: str
) -> None:
    link = tmp_path / "link"
    link.symlink_to(root, target_is_directory=True)
    base = link if spelling == "link" else root.resolve()
    edit = request(str(base / "a.py"), old_string="import os", new_string="import re")
    patch = _patch_request(f"*** Update File: {base}/b.py\n@@\n-    return 1\n+    return 3\n")
    proc = run(root, (line(edit) + line(patch)).encode(), env, "--root", str(link), "--jsonl")
    edited, patched = results_of(proc)
    assert (edited["status"], edited["path"]) == ("applied", "a.py")
    assert (patched["status"], patched["path"]) == ("applied", "b.py")
    assert (root / "b.py").read_bytes() == b"def f():\n    return 3\n"


def test_absolute_paths_outside_the_root_stay_refused(root: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    secret = tmp_path.resolve() / "outside" / "secret.txt"
    code, result = invoke_one(root, request(str(secret), old_string="secret", new_string="x"))
    assert (code, result["status"]) == (2, "invalid")
    assert "is absolute; give it relative to the root" in result["error"]
    for section in (
        f"*** Update File: {secret}\n@@\n-secret = 1\n+x\n",
        f"*** Add File: {secret.parent}/new.txt\n+x\n",
        f"*** Delete File: {secret}\n",
        f"*** Update File: a.py\n*** Move to: {secret.parent}/a.py\n@@\n-import os\n+import re\n",
        f"*** Add File: {root.resolve()}/../outside/new.txt\n+x\n",
    ):
        code, result = invoke_one(root, _patch_request(section))
        assert (code, result["status"]) == (2, "invalid"), section
        assert "is absolute" in result["error"] or "'..'" in result["error"]
    # Inside the root by spelling, outside through a symbolic link.
    escape = str(root.resolve() / "escape.txt")
    code, result = invoke_one(root, request(escape, old_string="secret", new_string="x"))
    assert (code, result["status"]) == (2, "invalid")
    assert "outside the root through a symbolic link" in result["error"]
    assert snapshot(tmp_path) == before


def test_paths_into_any_git_directory_stay_refused(root: Path, tmp_path: Path) -> None:
    for git_dir in (root / ".git", root / "pkg" / ".git"):  # the root's, a nested repository's
        git_dir.mkdir()
        (git_dir / "config").write_bytes(b"[core]\n")
    (root / "config-link").symlink_to(".git/config")
    before = snapshot(tmp_path)
    base = root.resolve()
    for path in (
        ".git/config",
        f"{base}/.git/config",
        "pkg/.git/config",
        f"{base}/pkg/.git/config",
        ".GIT/config",
        "config-link",
    ):
        code, result = invoke_one(root, request(path, old_string="[core]", new_string="[x]"))
        assert (code, result["status"]) == (2, "invalid"), path
        where = "leads into .git" if path == "config-link" else "inside a .git directory"
        assert where in result["error"], path
    for section in (
        f"*** Add File: {base}/.git/hooks/pre-commit\n+echo\n",
        "*** Update File: pkg/.git/config\n@@\n-[core]\n+[x]\n",
        f"*** Delete File: {base}/.git/config\n",
    ):
        code, result = invoke_one(root, _patch_request(section))
        assert (code, result["status"]) == (2, "invalid"), section
        assert "inside a .git directory" in result["error"], section
    assert snapshot(tmp_path) == before


# --- the tolerant budget -----------------------------------------------------------


def test_a_request_past_the_tolerant_budget_is_refused_at_once(
    root: Path, env: dict[str, str]
) -> None:
    """A 100 KB old_string with a slip against a 1.4 MB file: minutes of tolerant
    matching before the budget (110 s measured); now a refusal that says what to send."""
    lines = [f"    value_{i} = compute(alpha_{i}, beta_{i % 7})\n" for i in range(28_000)]
    big = "".join(lines).encode()
    (root / "big.py").write_bytes(big)
    block = "".join(lines[10_000:12_000])
    old = block.replace("compute(alpha_11000", "compte(alpha_11000")
    new = block.replace("alpha_11000", "ALPHA_11000")
    payload = json.dumps(request("big.py", old_string=old, new_string=new)).encode()
    started = time.monotonic()
    proc = run(root, payload, env)
    assert time.monotonic() - started < 30  # a process start, and a refusal
    assert proc.returncode == 1
    [result] = results_of(proc)
    assert result["status"] == "no_match"
    assert result["error"].startswith(
        "old_string not found in file exactly, and too large for tolerant matching: "
        "send the exact text or a smaller block (old_string: "
        f"{len(old):,} characters in 2,000 lines; the file: {len(big):,} characters in "
        "28,000 lines; matching them with tolerance would take about "
    )
    assert result["error"].endswith("character comparisons, and the limit is 1.0e11)")
    assert (root / "big.py").read_bytes() == big
    # The exact text of the same block, as the message advises, applies.
    exact = json.dumps(request("big.py", old_string=block, new_string=new)).encode()
    [result] = results_of(run(root, exact, env))
    assert result["status"] == "applied"
    assert result["match_type"] == "exact"
    assert (root / "big.py").read_bytes() == big.replace(block.encode(), new.encode())
