"""What ``redline apply`` prints of a result: the contract and the fields that say
something (engine.result.shown), every field with ``--full``; a patch's groups
under ``written`` (embedded mode commits nothing); the ``{"input": ...}`` error
worded for this front end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from redline.engine.result import CONTRACT, Result
from support import cli as inproc
from support.requests import edit, patch

A_PY = "def f(x):\n    return x + 1\n\n\ndef g(y):\n    return y * 2\n"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "a.py").write_text(A_PY)
    return folder


def apply(root: Path, request: dict[str, Any], *options: str) -> tuple[int, dict[str, Any], str]:
    done = inproc.run(["apply", "--root", str(root), *options], input=json.dumps(request))
    assert done.stderr == ""
    return done.returncode, json.loads(done.stdout), done.stdout


def test_an_exact_edit_answers_the_contract_and_its_lines(root: Path) -> None:
    code, answer, _ = apply(root, edit("a.py", "    return x + 1", "    return x + 2"))
    assert code == 0
    assert answer == {
        "status": "applied",
        "path": "a.py",
        "match_type": "exact",
        "confidence": 1.0,
        "matched_text": "    return x + 1",
        "start_line": 2,
        "end_line": 2,
    }
    assert (root / "a.py").read_text() == A_PY.replace("x + 1", "x + 2")


def test_full_prints_every_field_and_is_at_least_twice_the_size(root: Path) -> None:
    request = edit("a.py", "    return x + 1", "    return x + 2")
    _, brief, _ = apply(root, request, "--dry-run")
    _, full, full_line = apply(root, request, "--dry-run", "--full")
    assert list(full) == list(Result("applied").to_dict())  # every key, in its order
    assert {k: full[k] for k in CONTRACT} == {k: brief[k] for k in CONTRACT}
    assert full["diff"] == brief["diff"]  # a dry run shows its diff either way
    assert full["matches"] == [
        {
            "match_type": "exact",
            "confidence": 1.0,
            "matched_text": "    return x + 1",
            "start_line": 2,
            "end_line": 2,
        }
    ]
    _, applied, applied_line = apply(root, request)
    assert "diff" not in applied  # the file holds what was sent
    assert len(applied_line.encode()) * 2 <= len(full_line.encode())


def test_a_tolerant_edit_keeps_its_diff_and_says_what_it_tolerated(root: Path) -> None:
    code, answer, _ = apply(
        root, edit("a.py", "def f(x):\n  return x + 1", "def f(x):\n  return x + 3")
    )
    assert (code, answer["match_type"]) == (0, "whitespace")
    assert "+    return x + 3" in answer["diff"]
    assert [t["text"] for t in answer["tolerated"]] == [
        "indentation differed on 1 line (line 2): 2 spaces sent where the file has 4 spaces; "
        "the file's indentation kept"
    ]


def test_a_refusal_answers_the_contract_and_the_error(root: Path) -> None:
    code, answer, _ = apply(root, edit("a.py", "no such text", "x"))
    assert code == 1
    assert set(answer) == {*CONTRACT, "error"}
    assert answer["error"].startswith("old_string not found in file")


def test_an_embedded_patch_lists_its_groups_as_written_not_committed(root: Path) -> None:
    body = "*** Update File: a.py\n@@\n-    return y * 2\n+    return y * 3\n*** Add File: b.py\n+B = 1\n"
    code, answer, _ = apply(root, patch(body))
    assert code == 0
    assert answer["written"] == [
        {"paths": ["a.py"], "operations": ["update a.py"]},
        {"paths": ["b.py"], "operations": ["add b.py"]},
    ]
    assert "committed" not in answer
    _, full, _ = apply(root, patch("*** Add File: c.py\n+C = 1\n"), "--full")
    assert full["committed"] == [] and [g["paths"] for g in full["written"]] == [["c.py"]]


def test_a_partial_embedded_patch_says_written_in_words(root: Path) -> None:
    body = "*** Add File: a.py\n+taken\n*** Add File: n.py\n+N = 1\n"
    code, answer, _ = apply(root, patch(body))
    assert code == 3
    assert answer["error"] == (
        "apply_patch partially applied: 1 change written, 1 file group not applied: add a.py: "
        "cannot add file that already exists: a.py. The written changes are in place; do not "
        "redo them."
    )


def test_a_patch_sent_as_input_names_the_setting_for_the_harness(root: Path) -> None:
    request = {"tool": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "model": "gpt-5"}
    code, answer, _ = apply(root, request)
    assert (code, answer["status"]) == (2, "invalid")
    assert answer["error"].startswith(
        'apply_patch arguments arrived as {"input": "..."} instead of {"patch": "..."}: '
        "something between the model and redline (a gateway or proxy) turned the freeform "
        "apply_patch tool into a JSON function, and nothing was applied. Set "
        'compat.apply_patch.freeform: false — [compat.models."gpt-5".apply_patch] freeform = '
        "false — in the repository's .redline.toml or in "
    )
