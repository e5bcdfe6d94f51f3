"""``redline apply`` (embedded) with write, delete and read, as the command line runs them
(in this process, with the environment a subprocess would get: ``support.cli``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gitmode_fixtures import scrubbed_env
from support import cli as inproc


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return scrubbed_env(home, home)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_bytes(b"def main():\r\n    pass\r\n")
    return root


def run(
    root: Path, env: dict[str, str], *requests: dict[str, Any], args: tuple[str, ...] = ()
) -> tuple[int, list[dict[str, Any]]]:
    payload = "".join(json.dumps(r) + "\n" for r in requests)
    proc = inproc.run(
        ["apply", "--root", str(root), "--jsonl", *args], input=payload, env=env, cwd=root
    )
    assert "Traceback" not in proc.stderr
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()]


def test_each_tool_prints_its_result_as_json(root: Path, env: dict[str, str]) -> None:
    code, results = run(
        root,
        env,
        {"tool": "write", "path": "docs/notes.md", "content": "# Notes\n\nhello\n"},
        {"tool": "write", "path": "src/app.py", "content": "def main():\n    return 0\n"},
        {"tool": "read", "path": "src/app.py", "offset": 2},
        {"tool": "delete", "path": "docs/notes.md"},
    )
    assert code == 0
    created, overwritten, read, deleted = results
    assert (created["status"], created["path"], created["line_ending"]) == (
        "applied",
        "docs/notes.md",
        "lf",
    )
    assert overwritten["line_ending"] == "crlf"
    assert (root / "src" / "app.py").read_bytes() == b"def main():\r\n    return 0\r\n"
    assert read == {
        **read,
        "status": "read",
        "path": "src/app.py",
        "content": "     2\t    return 0",
        "start_line": 2,
        "end_line": 2,
        "total_lines": 2,
        "truncated": False,
        "encoding": "utf-8",
        "line_ending": "crlf",
    }
    assert deleted["status"] == "applied" and not (root / "docs" / "notes.md").exists()


def test_a_read_alone_exits_0(root: Path, env: dict[str, str]) -> None:
    code, [result] = run(root, env, {"tool": "read", "path": "src/app.py"})
    assert (code, result["status"]) == (0, "read")


def test_dry_run_writes_nothing(root: Path, env: dict[str, str]) -> None:
    code, results = run(
        root,
        env,
        {"tool": "write", "path": "new.txt", "content": "x\n"},
        {"tool": "delete", "path": "src/app.py"},
        args=("--dry-run",),
    )
    assert code == 0
    assert all(r["status"] == "applied" and r["dry_run"] and r["diff"] for r in results)
    assert sorted(p.name for p in root.rglob("*")) == ["app.py", "src"]


@pytest.mark.parametrize(
    ("request_obj", "says"),
    [
        ({"tool": "write", "path": "a.txt"}, "content: Field required"),
        ({"tool": "write", "path": "a.txt", "content": "x", "line_ending": "cr"}, "line_ending"),
        ({"tool": "write", "path": "a.txt", "content": "x", "mode": 1}, "mode: Extra inputs"),
        ({"tool": "delete", "path": ""}, "path is empty"),
        ({"tool": "delete", "path": "src"}, "'src' is a directory; delete works on one file"),
        ({"tool": "read", "path": "src/app.py", "limit": 0}, "limit: Input should be greater"),
        ({"tool": "read", "path": "src/app.py", "offset": True}, "offset: Input should be a valid"),
        ({"tool": "read", "path": "missing.py"}, "does not exist; to create it, use write"),
    ],
)
def test_bad_requests_are_invalid_with_exit_2(
    root: Path, env: dict[str, str], request_obj: dict[str, Any], says: str
) -> None:
    code, [result] = run(root, env, request_obj)
    assert (code, result["status"]) == (2, "invalid")
    assert says in result["error"], result["error"]


def test_redline_schema_describes_the_requests_and_real_results_conform(
    root: Path, env: dict[str, str]
) -> None:
    import jsonschema

    proc = inproc.run(["schema"], env=env, cwd=root)
    assert proc.returncode == 0, proc.stderr
    schema = json.loads(proc.stdout)
    defs = schema["request"]["$defs"]
    shapes = {
        d["properties"]["tool"]["const"]: (set(d["properties"]), set(d["required"]))
        for d in defs.values()
        if "tool" in d.get("properties", {})
    }
    assert shapes["write"] == (
        {"tool", "path", "content", "line_ending", "turn", "model", "validate"},
        {"tool", "path", "content"},
    )
    assert shapes["delete"] == ({"tool", "path", "turn", "model"}, {"tool", "path"})
    assert shapes["read"] == (
        {"tool", "path", "offset", "limit", "turn", "model"},
        {"tool", "path"},
    )
    assert "read" in schema["result"]["properties"]["status"]["enum"]
    requests = [
        {"tool": "write", "path": "n.txt", "content": "x\n", "line_ending": "crlf", "turn": 1},
        {"tool": "read", "path": "src/app.py", "offset": 1, "limit": 1, "model": "m"},
        {"tool": "delete", "path": "src/app.py"},
        {"tool": "read", "path": "src"},
    ]
    for request in requests:
        jsonschema.validate(request, schema["request"])
    _, results = run(root, env, *requests, args=("--dry-run",))
    assert [r["status"] for r in results] == ["applied", "read", "applied", "invalid"]
    for result in results:
        jsonschema.validate(result, schema["result"])


def test_creating_a_file_is_advised_with_the_write_tool_every_edit_caller_is_offered(
    root: Path, env: dict[str, str]
) -> None:
    # Every surface that offers edit offers write too (tools.surface): the advice names it.
    code, (missing, empty) = run(
        root,
        env,
        {"tool": "edit", "path": "src/new.py", "old_string": "x", "new_string": "y"},
        {"tool": "edit", "path": "src/app.py", "old_string": "", "new_string": "y"},
    )
    assert code == 2
    assert missing["error"] == (
        f"file 'src/new.py' does not exist under {root}; check the path (to create a file, "
        "use the write tool)"
    )
    assert empty["error"] == (
        "old_string is empty; give the text to replace (to create a file, use the write tool)"
    )
