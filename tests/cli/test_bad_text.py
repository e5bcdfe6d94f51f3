"""Text that is no text — a lone surrogate, a NUL character, bytes that are not UTF-8 inside a
JSON string — is ``invalid`` naming its field, in every tool, embedded and through a
session; nothing is written or committed. (``redline mcp``: tests/mcp/test_mcp_wire.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gitmode_fixtures import GitMode, branch_commits, gm, rev
from redline.cli.main import cli
from redline.tools.request import bad_text, parse_request

__all__ = ["gm"]

PATCH_ADD = "*** Begin Patch\n*** Add File: new.py\n+{text}\n*** End Patch\n"
PATCH_UPDATE = (
    "*** Begin Patch\n*** Update File: b.py\n@@\n-VALUE = 1\n+VALUE = {text}\n*** End Patch\n"
)


def requests(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(the field named, the request) for every tool, ``text`` in one field each."""
    return [
        (
            "new_string",
            {
                "tool": "edit",
                "path": "b.py",
                "old_string": "VALUE = 1",
                "new_string": f"V = {text}",
            },
        ),
        (
            "old_string",
            {"tool": "edit", "path": "b.py", "old_string": f"VALUE{text}", "new_string": "x"},
        ),
        (
            "edits[1].new_string",
            {
                "tool": "edit",
                "path": "b.py",
                "edits": [
                    {"old_string": "VALUE", "new_string": "V"},
                    {"old_string": "1", "new_string": text},
                ],
            },
        ),
        ("patch", {"tool": "apply_patch", "patch": PATCH_ADD.format(text=text)}),
        ("patch", {"tool": "apply_patch", "patch": PATCH_UPDATE.format(text=text)}),
        ("content", {"tool": "write", "path": "new.py", "content": f"x = {text}\n"}),
        ("content", {"tool": "write", "path": "b.py", "content": f"x = {text}\n"}),
        ("model", {"tool": "delete", "path": "b.py", "model": f"m{text}"}),
        ("turn", {"tool": "read", "path": "b.py", "turn": f"t{text}"}),
    ]


KINDS = {
    "lone surrogate": ("\ud800", "a lone surrogate (U+D800)"),
    "NUL": ("\x00", "a NUL character (U+0000)"),
}


def _lines(text: str) -> tuple[bytes, list[str]]:
    cases = requests(text)
    payload = b"".join(json.dumps(r).encode() + b"\n" for _, r in cases)
    return payload, [field for field, _ in cases]


def _invalid_bytes_lines() -> tuple[bytes, list[str]]:
    """The same requests with the byte 0xFF where the text goes: not UTF-8 at all."""
    cases = requests("@@BYTE@@")
    payload = b"".join(
        json.dumps(r).encode().replace(b"@@BYTE@@", b"\xff") + b"\n" for _, r in cases
    )
    return payload, [field for field, _ in cases]


def _check(answers: list[dict[str, Any]], fields: list[str], what: str) -> None:
    assert len(answers) == len(fields)
    for answer, field in zip(answers, fields, strict=True):
        assert answer["status"] == "invalid", answer
        assert answer["error"].startswith(f"{field!r} holds {what} at line "), answer["error"]
        assert answer["error"].endswith(f"send {field} as UTF-8 text") or answer["error"].endswith(
            f"send {field} without it"
        )


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_wire_format_names_the_field(kind: str) -> None:
    text, what = KINDS[kind]
    for field, request in requests(text):
        assert bad_text(request) is not None
        with pytest.raises(Exception) as refused:
            parse_request(request)
        assert getattr(refused.value, "field", None) == field
        assert str(refused.value).startswith(f"{field!r} holds {what}")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "b.py").write_text("VALUE = 1\n")
    return folder


@pytest.mark.parametrize("kind", [*KINDS, "not UTF-8"])
def test_embedded_every_tool_refuses_it_and_writes_nothing(root: Path, kind: str) -> None:
    if kind == "not UTF-8":
        payload, fields = _invalid_bytes_lines()
        what = "a lone surrogate (U+DCFF, or the byte 0xFF, which is not valid UTF-8)"
    else:
        payload, fields = _lines(KINDS[kind][0])
        what = KINDS[kind][1]
    outcome = CliRunner().invoke(cli, ["apply", "--root", str(root), "--jsonl"], input=payload)
    assert outcome.exit_code == 2, outcome.output
    _check([json.loads(x) for x in outcome.stdout.splitlines()], fields, what)
    assert sorted(p.name for p in root.iterdir()) == ["b.py"]
    assert (root / "b.py").read_text() == "VALUE = 1\n"


def test_through_a_session_every_tool_refuses_it_and_commits_nothing(gm: GitMode) -> None:
    base = rev(gm.repo, "HEAD")
    worktree = Path(gm.cli.open_session("s")["worktree"])
    for payload, fields, what in (
        (*_lines("\ud800"), "a lone surrogate (U+D800)"),
        (*_lines("\x00"), "a NUL character (U+0000)"),
        (
            *_invalid_bytes_lines(),
            "a lone surrogate (U+DCFF, or the byte 0xFF, which is not valid UTF-8)",
        ),
    ):
        proc = gm.cli.run(
            "apply", "--session", "s", "--jsonl", "--repo", str(gm.repo), input=payload
        )
        assert proc.returncode == 2, proc.stderr
        _check([json.loads(x) for x in proc.stdout.splitlines()], fields, what)
    assert branch_commits(gm.repo, "redline/s", base, gm.env) == []
    assert (worktree / "b.py").read_text() == "VALUE = 1\n"
    assert not (worktree / "new.py").exists()
