"""``redline mcp`` as an MCP client sees it, through the SDK's own clients.

The server runs in this process over the SDK's in-memory streams (``mcp_client``);
the ``e2e`` tests run a real server subprocess over stdio.

Git mode goes through a real daemon (started by the server) and is checked with
the git binary: one commit per change on ``redline/<session>``, its note naming
the tool and the model. Embedded mode changes the folder's files. Bad calls are
tool errors and the next call still works.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pytest
from mcp_fixtures import Folder

from gitmode_fixtures import REDLINE, GitMode, branch_commits, git, note_of, rev
from redline.engine.result import Result
from redline.tools.definitions import DEFINITIONS
from support import cli as inproc
from support.mcp_client import answering, connect, connect_modern, structured, text

T = TypeVar("T")
EDIT_SURFACE = ["edit", "write", "delete", "read"]
PATCH_SURFACE = ["apply_patch", "read"]
PATCH = (
    "*** Begin Patch\n*** Update File: a.py\n@@ def greet(name):\n"
    "-    return 'Hello, ' + name\n+    return 'Hi, ' + name\n*** End Patch\n"
)


def run(main: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(main)


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"path": path, "old_string": old, "new_string": new}


# --- the tools a model is shown ---------------------------------------------------------


def test_the_tools_follow_the_model(folder: Folder) -> None:
    async def main() -> dict[str, list[types.Tool]]:
        shown = {}
        for model in (None, "gpt-5", "gpt-4o", "claude-sonnet-4-5"):
            args = ("--model", model) if model else ()
            async with connect(folder.env, folder.root, *args) as session:
                shown[str(model)] = (await session.list_tools()).tools
        return shown

    shown = run(main)
    assert [t.name for t in shown["None"]] == EDIT_SURFACE
    assert [t.name for t in shown["gpt-5"]] == PATCH_SURFACE
    assert [t.name for t in shown["gpt-4o"]] == EDIT_SURFACE
    assert [t.name for t in shown["claude-sonnet-4-5"]] == EDIT_SURFACE
    for tools in shown.values():
        for tool in tools:
            definition = DEFINITIONS[tool.name]
            assert tool.input_schema == definition.parameters
            assert tool.description == definition.description
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (tool.name == "read")


def test_the_users_agent_setting_names_the_model_and_the_flag_wins(
    folder: Folder, tmp_path: Path
) -> None:
    env = {**folder.env, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    config = tmp_path / "config" / "redline" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[agent]\nmodel = "gpt-5"\nprovider = "openai"\n')

    async def main() -> tuple[list[str], list[str]]:
        async with connect(env, folder.root) as session:
            configured = [t.name for t in (await session.list_tools()).tools]
        async with connect(env, folder.root, "--model", "gpt-4o") as session:
            flagged = [t.name for t in (await session.list_tools()).tools]
        return configured, flagged

    assert run(main) == (PATCH_SURFACE, EDIT_SURFACE)


# --- git mode ---------------------------------------------------------------------------


@pytest.mark.e2e  # a real `redline mcp` over stdio, starting a real daemon process
def test_git_mode_commits_each_change_with_its_note(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")

    async def main() -> list[types.CallToolResult]:
        async with connect(gm.env, gm.repo, "--model", "claude-sonnet-4-5") as session:
            results = [
                await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2")),
                await session.call_tool("write", {"path": "notes/todo.md", "content": "- one\n"}),
                await session.call_tool("read", {"path": "c.txt", "offset": 2, "limit": 1}),
                await session.call_tool("delete", {"path": "c.txt"}),
                await session.call_tool("read", {"path": "b.py"}),
            ]
        async with connect(gm.env, gm.repo, "--model", "gpt-5") as session:
            results.append(await session.call_tool("apply_patch", {"patch": PATCH}))
        return results

    edited, written, read, deleted, reread, patched = run(main)
    for result in (edited, written, read, deleted, reread, patched):
        assert not result.is_error, text(result)
    assert text(edited).splitlines()[0] == "applied: b.py (exact, confidence 1.00)"
    assert "-VALUE = 1\n+VALUE = 2" in text(edited)
    assert (
        text(read)
        == "     2\tbeta\n(c.txt: lines 2-2 of 3, encoding utf-8, line_ending lf; more below: read again with offset=3)"
    )
    assert structured(read)["content"] == "     2\tbeta"
    # read shows the session's worktree (the edit made there), not the user's checkout
    assert structured(reread)["content"] == "     1\tVALUE = 2"
    assert structured(reread)["session"] == "test-client"
    assert text(patched).splitlines()[0] == "applied: a.py (exact, confidence 1.00)"

    # One session named for the client, one commit per change, each with its note.
    commits = branch_commits(gm.repo, "redline/test-client", base)
    assert len(commits) == 4
    answers = [structured(r) for r in (edited, written, deleted, patched)]
    assert [a["session"] for a in answers] == ["test-client"] * 4
    assert [a["commits"][-1]["commit"] for a in answers] == commits
    notes = [note_of(gm.repo, c) for c in commits]
    assert [n["tool"] for n in notes] == ["edit", "write", "delete", "apply_patch"]
    assert [n["model"] for n in notes] == ["claude-sonnet-4-5"] * 3 + ["gpt-5"]
    assert git(gm.repo, "show", "redline/test-client:b.py") == "VALUE = 2\n"
    assert git(gm.repo, "show", "redline/test-client:notes/todo.md") == "- one\n"
    assert "Hi, " in git(gm.repo, "show", "redline/test-client:a.py")
    assert git(gm.repo, "ls-tree", "--name-only", "redline/test-client", "c.txt") == ""
    log = git(gm.repo, "log", "--format=%s", "redline/test-client")
    assert log.count("\n") == 5  # the four changes and the initial commit
    # The user's own checkout is untouched.
    assert (gm.repo / "b.py").read_text() == "VALUE = 1\n"
    assert git(gm.repo, "status", "--porcelain") == ""


def test_a_named_session_is_used_and_an_open_one_resumed(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")
    gm.cli.open_session("mine")

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connect(gm.env, gm.repo, "--session", "mine") as session:
            one = await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2"))
        # The daemon stops between the calls of one server: the next call starts it again.
        async with connect(gm.env, gm.repo, "--session", "mine") as session:
            await session.call_tool("read", {"path": "b.py"})
            gm.cli.ok("daemon", "stop", "--repo", str(gm.repo))
            two = await session.call_tool("edit", edit("b.py", "VALUE = 2", "VALUE = 3"))
        return one, two

    one, two = run(main)
    assert not one.is_error and not two.is_error, (text(one), text(two))
    commits = branch_commits(gm.repo, "redline/mine", base)
    assert [
        structured(one)["commits"][-1]["commit"],
        structured(two)["commits"][-1]["commit"],
    ] == commits
    assert git(gm.repo, "show", "redline/mine:b.py") == "VALUE = 3\n"
    assert not git(gm.repo, "branch", "--list", "redline/test-client").strip()


def test_embedded_mode_changes_the_folder(folder: Folder) -> None:
    async def main() -> list[types.CallToolResult]:
        async with connect(folder.env, folder.root) as session:
            return [
                await session.call_tool("edit", edit("a.py", "'Hello, '", "'Hi, '")),
                await session.call_tool("write", {"path": "new/file.txt", "content": "x\n"}),
                await session.call_tool("delete", {"path": "c.txt"}),
                await session.call_tool("read", {"path": "a.py"}),
            ]

    edited, written, deleted, read = run(main)
    for result in (edited, written, deleted, read):
        assert not result.is_error, text(result)
    assert (folder.root / "a.py").read_text() == "def greet(name):\n    return 'Hi, ' + name\n"
    assert (folder.root / "new/file.txt").read_text() == "x\n"
    assert not (folder.root / "c.txt").exists()
    assert (
        structured(read)["content"] == "     1\tdef greet(name):\n     2\t    return 'Hi, ' + name"
    )
    assert "session" not in structured(edited) and "commits" not in structured(edited)
    assert not (folder.root / ".git").exists()


# --- what goes wrong --------------------------------------------------------------------


def test_bad_calls_are_tool_errors_and_the_server_goes_on(folder: Folder) -> None:
    async def main() -> list[types.CallToolResult]:
        async with connect(folder.env, folder.root) as session:
            return [
                await session.call_tool("edit", {"path": "b.py", "old_string": "VALUE = 1"}),
                await session.call_tool("edit", {"path": 5, "old_string": "a", "new_string": "b"}),
                await session.call_tool("frobnicate", {"path": "b.py"}),
                await session.call_tool("apply_patch", {"patch": PATCH}),  # not this model's
                await session.call_tool("edit", {**edit("b.py", "A", "B"), "tool": "write"}),
                await session.call_tool("read", {"path": "b.py", "offset": "two"}),
                await session.call_tool("edit", edit("b.py", "VALUE = 7", "VALUE = 8")),
                await session.call_tool("edit", edit("../outside.py", "a", "b")),
                await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2")),
            ]

    *bad, good = run(main)
    for result in bad:
        assert result.is_error
        answer = structured(result)
        assert answer["status"] in ("invalid", "no_match"), answer
        assert answer["error"] and f"error: {answer['error']}" in text(result)
    missing, wrong_type, unknown, not_offered, tool_key, offset, absent, outside = bad
    assert "new_string" in structured(missing)["error"]
    assert "path" in structured(wrong_type)["error"]
    assert structured(unknown)["error"].startswith(
        "unknown tool 'frobnicate': this server offers edit, write, delete, read"
    )
    assert structured(not_offered)["error"].startswith(
        "apply_patch is not offered to this model (no model named): this server offers edit, "
    )
    assert "'tool' is not an argument" in structured(tool_key)["error"]
    assert "offset" in structured(offset)["error"]
    assert structured(absent)["status"] == "no_match"
    assert "old_string not found" in text(absent)
    assert structured(outside)["status"] == "invalid"
    assert not good.is_error, text(good)
    assert (folder.root / "b.py").read_text() == "VALUE = 2\n"
    assert not (folder.root.parent / "outside.py").exists()


def test_a_tolerant_edit_tells_the_model_what_was_tolerated(folder: Folder) -> None:
    """The text the model reads names the tolerated difference in words; the structured
    content carries the contract and what says something, every field with --full."""
    old = "def greet(name):\n  return 'Hello, ' + name"
    new = "def greet(name):\n  return 'Hey, ' + name"

    async def main(*options: str) -> types.CallToolResult:
        async with connect(folder.env, folder.root, *options) as session:
            return await session.call_tool("edit", edit("a.py", old, new))

    result = anyio.run(main)
    assert not result.is_error, text(result)
    assert text(result).splitlines()[:2] == [
        "applied: a.py (whitespace, confidence 0.95)",
        "tolerated: indentation differed on 1 line (line 2): 2 spaces sent where the file "
        "has 4 spaces; the file's indentation kept",
    ]
    assert set(structured(result)) == {
        "status", "path", "match_type", "confidence", "matched_text",
        "diff", "tolerated", "start_line", "end_line",
    }  # fmt: skip
    (folder.root / "a.py").write_text("def greet(name):\n    return 'Hello, ' + name\n")
    full = anyio.run(main, "--full")
    assert list(structured(full)) == list(Result("applied").to_dict())
    assert structured(full)["tolerated"] == structured(result)["tolerated"]


def test_an_apply_patch_call_with_input_is_told_to_send_patch(folder: Folder) -> None:
    """Over MCP the model is shown apply_patch taking {"patch": ...} already: the answer
    says to send the patch under that name, not to change a setting."""

    async def main() -> types.CallToolResult:
        async with connect(folder.env, folder.root, "--model", "gpt-5") as session:
            return await session.call_tool("apply_patch", {"input": PATCH})

    result = run(main)
    assert result.is_error
    assert structured(result)["status"] == "invalid"
    assert text(result) == (
        'invalid\nerror: apply_patch arguments arrived as {"input": "..."}, but this '
        'server\'s apply_patch takes the patch text as {"patch": "..."} (see its '
        "inputSchema); nothing was applied. Call apply_patch again with the same patch text "
        'as the "patch" argument'
    )
    assert "freeform" not in text(result)
    assert (folder.root / "a.py").read_text().startswith("def greet(name):\n    return 'Hello")


# --- permissions ------------------------------------------------------------------------

RULES = """\
[permission]
delete = "deny"
[permission.edit]
"**" = "allow"
"docs/**" = "ask"
"""


def test_a_denied_call_is_rejected_naming_the_rule(folder: Folder) -> None:
    (folder.root / ".redline.toml").write_text(RULES)

    async def main() -> tuple[list[str], types.CallToolResult]:
        async with connect(folder.env, folder.root) as session:
            names = [t.name for t in (await session.list_tools()).tools]
            return names, await session.call_tool("delete", {"path": "c.txt"})

    names, result = run(main)
    assert "delete" not in names  # denied for every path: not shown
    assert result.is_error
    answer = structured(result)
    assert answer["status"] == "rejected"
    assert 'permission rule permission.delete = "deny"' in answer["error"]
    assert (folder.root / "c.txt").exists()


def test_an_agent_cannot_rewrite_the_rules_that_govern_it(folder: Folder) -> None:
    """Embedded: a write of .redline.toml that would allow what it denies is refused, and
    the next call is still denied (issue 20, reproduction 8)."""
    (folder.root / ".redline.toml").write_text('[permission.edit]\n"b.py" = "deny"\n')

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connect(folder.env, folder.root) as session:
            relax = await session.call_tool(
                "write", {"path": ".redline.toml", "content": '[permission]\nedit = "allow"\n'}
            )
            denied = await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2"))
            return relax, denied

    relax, denied = run(main)
    assert relax.is_error and structured(relax)["status"] == "rejected"
    assert "would change redline's own settings" in structured(relax)["error"]
    assert denied.is_error and 'permission.edit."b.py" = "deny"' in structured(denied)["error"]
    assert (folder.root / ".redline.toml").read_text() == '[permission.edit]\n"b.py" = "deny"\n'
    assert (folder.root / "b.py").read_text() == "VALUE = 1\n"


def test_a_path_rule_denies_one_path_and_names_the_rule(folder: Folder) -> None:
    (folder.root / ".redline.toml").write_text('[permission.edit]\n"b.py" = "deny"\n')

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connect(folder.env, folder.root) as session:
            denied = await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2"))
            allowed = await session.call_tool("edit", edit("c.txt", "beta", "BETA"))
            return denied, allowed

    denied, allowed = run(main)
    assert denied.is_error and structured(denied)["status"] == "rejected"
    assert 'permission.edit."b.py" = "deny"' in structured(denied)["error"]
    assert (folder.root / "b.py").read_text() == "VALUE = 1\n"
    assert not allowed.is_error
    assert (folder.root / "c.txt").read_text() == "alpha\nBETA\ngamma\n"


def test_ask_elicits_and_an_approval_lasts_for_the_path(gm: GitMode) -> None:
    (gm.repo / ".redline.toml").write_text(RULES)
    git(gm.repo, "add", ".redline.toml", env=gm.env)
    git(gm.repo, "commit", "-qm", "rules", env=gm.env)
    base = rev(gm.repo, "HEAD")
    asked: list[str] = []

    async def main() -> list[types.CallToolResult]:
        async with connect(gm.env, gm.repo, elicit=answering("accept", asked)) as session:
            return [
                await session.call_tool("edit", edit("docs/readme.md", "Some text.", "More text.")),
                await session.call_tool("edit", edit("docs/readme.md", "More text.", "Most text.")),
                await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2")),
            ]

    results = run(main)
    for result in results:
        assert not result.is_error, text(result)
    # Asked once, for the docs path: the approval covers the later call; b.py is allowed.
    assert asked == [
        'allow edit on docs/readme.md? (redline permission rule: permission.edit."docs/**" = "ask")'
    ]
    assert len(branch_commits(gm.repo, "redline/test-client", base)) == 3
    assert git(gm.repo, "show", "redline/test-client:docs/readme.md") == "# Title\n\nMost text.\n"


def test_declined_or_cancelled_asks_are_rejected(folder: Folder) -> None:
    (folder.root / ".redline.toml").write_text(RULES)
    asked: list[str] = []

    async def main(action: str) -> list[types.CallToolResult]:
        async with connect(folder.env, folder.root, elicit=answering(action, asked)) as session:
            return [
                await session.call_tool("edit", edit("docs/readme.md", "Some text.", "X")),
                await session.call_tool("edit", edit("docs/readme.md", "Some text.", "X")),
            ]

    for action, word in (("decline", "declined"), ("cancel", "did not answer (cancelled)")):
        asked.clear()
        results = anyio.run(main, action)
        assert len(asked) == 2  # a refusal is not remembered: the next call asks again
        for result in results:
            assert result.is_error
            answer = structured(result)
            assert answer["status"] == "rejected"
            assert f"the person {word} edit on docs/readme.md" in answer["error"]
    assert (folder.root / "docs/readme.md").read_text() == "# Title\n\nSome text.\n"


def test_ask_without_elicitation_says_what_to_configure(folder: Folder) -> None:
    (folder.root / ".redline.toml").write_text(RULES)

    async def main() -> types.CallToolResult:
        async with connect(folder.env, folder.root) as session:  # no elicitation callback
            return await session.call_tool("edit", edit("docs/readme.md", "Some text.", "X"))

    result = run(main)
    assert result.is_error
    error = structured(result)["error"]
    assert structured(result)["status"] == "rejected"
    assert "declared no elicitation capability" in error
    assert ".redline.toml" in error and '"allow"' in error
    assert (folder.root / "docs/readme.md").read_text() == "# Title\n\nSome text.\n"


def test_a_2026_client_is_asked_through_an_input_round(folder: Folder) -> None:
    (folder.root / ".redline.toml").write_text(RULES)
    asked: list[str] = []

    async def main() -> tuple[str, types.CallToolResult, types.CallToolResult]:
        async with connect_modern(
            folder.env, folder.root, elicit=answering("accept", asked)
        ) as client:
            first = await client.call_tool("edit", edit("docs/readme.md", "Some text.", "X"))
            again = await client.call_tool("edit", edit("docs/readme.md", "X", "Y"))
            return client.protocol_version, first, again

    version, first, again = run(main)
    assert version == "2026-07-28"
    assert not first.is_error and not again.is_error, (text(first), text(again))
    assert len(asked) == 1
    assert (folder.root / "docs/readme.md").read_text() == "# Title\n\nY\n"


def test_structured_content_is_the_apply_result(folder: Folder) -> None:
    """The structured content is what ``redline apply`` prints for the same request."""
    request = edit("c.txt", "beta", "BETA")

    async def main() -> types.CallToolResult:
        async with connect(folder.env, folder.root) as session:
            return await session.call_tool("edit", request)

    result = run(main)
    (folder.root / "c.txt").write_text("alpha\nbeta\ngamma\n")
    proc = inproc.run(
        ["apply", "--root", str(folder.root)],
        input=json.dumps({"tool": "edit", **request}),
        env=folder.env,
    )
    assert proc.returncode == 0, proc.stderr
    assert structured(result) == json.loads(proc.stdout)


def test_the_server_starts_no_daemon_for_a_folder(folder: Folder) -> None:
    async def main() -> types.CallToolResult:
        async with connect(folder.env, folder.root) as session:
            return await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2"))

    assert not run(main).is_error
    assert not list(Path(folder.env["XDG_RUNTIME_DIR"]).iterdir())


@pytest.mark.e2e  # raw lines on a real server's stdin: the stdio framing itself
def test_garbage_on_the_wire_leaves_the_server_answering(folder: Folder) -> None:
    """Raw JSON-RPC lines: a line that is no JSON, a call whose arguments are no object and
    a call without a name get protocol errors; the call after them is applied (more frames
    in test_mcp_wire.py)."""
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        "this is not json",
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "edit", "arguments": [1, 2]},
        },
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}},
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {"name": "edit", "arguments": edit("b.py", "VALUE = 1", "VALUE = 2")},
        },
    ]
    server = subprocess.Popen(
        [*REDLINE, "mcp", "--repo", str(folder.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=folder.env,
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        for line in lines:
            server.stdin.write(
                ((line if isinstance(line, str) else json.dumps(line)) + "\n").encode()
            )
        server.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        while 4 not in answers:  # the answers to 1-4, and to the line that is no JSON
            answer = json.loads(server.stdout.readline())
            answers[answer["id"]] = answer
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()
        if not server.stdin.closed:
            server.stdin.close()
    assert answers[None]["error"]["code"] == -32700  # parse error, id null
    assert answers[2]["error"]["code"] == -32602
    assert answers[3]["error"]["code"] == -32602
    assert answers[4]["result"]["isError"] is False
    assert answers[4]["result"]["structuredContent"]["status"] == "applied"
    assert (folder.root / "b.py").read_text() == "VALUE = 2\n"


def test_a_client_failing_to_ask_gets_the_call_rejected(folder: Folder) -> None:
    (folder.root / ".redline.toml").write_text(RULES)

    async def broken(context: Any, params: Any) -> types.ErrorData:
        return types.ErrorData(code=types.INTERNAL_ERROR, message="no user interface")

    async def main() -> tuple[types.CallToolResult, types.CallToolResult]:
        async with connect(folder.env, folder.root, elicit=broken) as session:
            asked = await session.call_tool("edit", edit("docs/readme.md", "Some text.", "X"))
            allowed = await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2"))
            return asked, allowed

    asked, allowed = run(main)
    assert asked.is_error and structured(asked)["status"] == "rejected"
    assert "answered the question with an error (no user interface)" in structured(asked)["error"]
    assert not allowed.is_error
    assert (folder.root / "docs/readme.md").read_text() == "# Title\n\nSome text.\n"


def test_options_that_cannot_work_are_refused_before_serving(folder: Folder, gm: GitMode) -> None:
    def refused(*args: str, env: dict[str, str], code: int = 2) -> str:
        proc = inproc.run(["mcp", *args], env=env, input=b"")
        assert proc.returncode == code, proc
        assert proc.stdout == ""  # stdout is the protocol's
        return proc.stderr

    both = refused("--session", "s", "--embedded", "--repo", str(gm.repo), env=gm.env)
    assert "--session and --embedded exclude each other" in both
    no_git = refused("--session", "s", "--repo", str(folder.root), env=folder.env)
    assert "--session needs a git repository" in no_git
    bad_name = refused("--session", "no way!", "--repo", str(gm.repo), env=gm.env, code=1)
    assert "invalid session name 'no way!'" in bad_name
    (folder.root / ".redline.toml").write_text('[permission]\nedit = "perhaps"\n')
    bad_config = refused("--repo", str(folder.root), env=folder.env, code=1)
    assert "invalid redline configuration" in bad_config and ".redline.toml" in bad_config
    assert gm.cli.pid() is None  # no daemon was started for any of them


def test_an_absolute_path_is_judged_by_the_path_it_names(gm: GitMode, folder: Folder) -> None:
    """A rule on ``docs/**`` holds for the session worktree's absolute path to docs/ too
    (git mode), and for the folder's (embedded)."""
    rules = '[permission.edit]\n"docs/**" = "deny"\n'
    (gm.repo / ".redline.toml").write_text(rules)
    git(gm.repo, "add", ".redline.toml", env=gm.env)
    git(gm.repo, "commit", "-qm", "rules", env=gm.env)  # git mode: the committed rules govern
    (folder.root / ".redline.toml").write_text(rules)

    async def main() -> list[types.CallToolResult]:
        async with connect(gm.env, gm.repo) as session:
            first = await session.call_tool("edit", edit("b.py", "VALUE = 1", "VALUE = 2"))
            (listed,) = gm.cli.json("session", "list", "--json")
            inside = str(Path(listed["worktree"]) / "docs" / "readme.md")
            git_mode = await session.call_tool("edit", edit(inside, "Some text.", "X"))
        async with connect(folder.env, folder.root) as session:
            inside = str(folder.root / "docs" / "readme.md")
            embedded = await session.call_tool("edit", edit(inside, "Some text.", "X"))
        return [first, git_mode, embedded]

    first, git_mode, embedded = run(main)
    assert not first.is_error, text(first)
    for result in (git_mode, embedded):
        assert result.is_error and structured(result)["status"] == "rejected", text(result)
        assert 'permission.edit."docs/**" = "deny"' in structured(result)["error"]
    assert (folder.root / "docs/readme.md").read_text() == "# Title\n\nSome text.\n"
    assert "Some text." in git(gm.repo, "show", "redline/test-client:docs/readme.md")
