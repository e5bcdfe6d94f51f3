"""``redline apply`` with validation: the request's ``validate`` field and the root's
policy (``[[validate]]`` in ``.redline.toml`` or ``[tool.redline]``), exit codes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from cli_support import redline_script
from redline.cli.main import cli

APP_PY = "def total(items):\n    return sum(items)\n"
BREAK = {"tool": "edit", "path": "app.py", "old_string": "sum(items)", "new_string": "sum(items"}
POLICY = '[[validate]]\npaths = ["**/*.py"]\n'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "app.py").write_text(APP_PY)
    return folder


def apply(root: Path, *requests: dict[str, Any]) -> tuple[int, list[dict[str, Any]]]:
    payload = "\n".join(json.dumps(r) for r in requests)
    options = ["--jsonl"] if len(requests) > 1 else []
    outcome = CliRunner().invoke(cli, ["apply", "--root", str(root), *options], input=payload)
    if outcome.exception is not None and not isinstance(outcome.exception, SystemExit):
        raise outcome.exception
    return outcome.exit_code, [json.loads(line) for line in outcome.stdout.splitlines()]


def test_the_request_asks_for_validation_exit_1(root: Path) -> None:
    code, [result] = apply(root, {**BREAK, "validate": True})
    assert code == 1
    assert result["status"] == "validation_failed"
    assert result["validation"]["errors"][0]["message"] == "'(' was never closed"
    assert (root / "app.py").read_text() == APP_PY


def test_without_a_policy_or_the_field_nothing_is_validated(root: Path) -> None:
    code, [result] = apply(root, BREAK)
    assert (code, result["status"], result.get("validation")) == (0, "applied", None)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        (".redline.toml", POLICY),
        ("pyproject.toml", '[project]\nname = "x"\n\n[[tool.redline.validate]]\npaths = "*.py"\n'),
    ],
)
def test_the_roots_policy_turns_validation_on(root: Path, name: str, text: str) -> None:
    (root / name).write_text(text)
    code, [result] = apply(root, BREAK)
    assert (code, result["status"]) == (1, "validation_failed")
    assert (root / "app.py").read_text() == APP_PY


def test_a_pyproject_without_redline_is_no_policy(root: Path) -> None:
    (root / "pyproject.toml").write_text("[project\nthis is not even TOML")
    code, [result] = apply(root, BREAK)
    assert (code, result["status"]) == (0, "applied")


def test_a_policy_that_does_not_parse_refuses_every_edit(root: Path) -> None:
    (root / ".redline.toml").write_text('[[validate]]\npaths = ["*.py"]\nlanguages = 1\n')
    code, [result] = apply(root, BREAK)
    assert (code, result["status"]) == (1, "rejected")
    assert "validate[1].languages: unknown key; use paths" in result["error"]
    assert "no edit is applied until it is fixed" in result["error"]
    assert (root / "app.py").read_text() == APP_PY
    code, [result] = apply(root, {"tool": "read", "path": "app.py"})
    assert (code, result["status"]) == (0, "read")  # a read edits nothing: it still runs


def test_a_stream_mixes_validated_and_applied_edits(root: Path) -> None:
    (root / ".redline.toml").write_text(POLICY)
    fine = {**BREAK, "new_string": "sum(items, 0)"}
    code, results = apply(root, BREAK, fine)
    assert [r["status"] for r in results] == ["validation_failed", "applied"]
    assert results[1]["validation"] == {
        "path": "app.py",
        "language": "python",
        "parser": "compile",
        "ok": True,
    }
    assert code == 1


def test_the_installed_script_exits_1_on_validation_failure(root: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["HOME"] = str(tmp_path / "home")
    proc = subprocess.run(
        [redline_script(), "apply", "--root", str(root)],
        input=json.dumps({**BREAK, "validate": True}),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert proc.returncode == 1, proc.stderr
    assert json.loads(proc.stdout)["status"] == "validation_failed"
    assert proc.stderr == ""
