"""``redline schema``: the JSON Schemas, and real results that conform to them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from redline.cli.main import cli
from redline.engine.match_types import MATCH_TYPES
from redline.tools.schema import RESULT, json_schema
from support import cli as inproc


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    clean.update(HOME=str(home), TMPDIR=str(tmp_path))
    return clean


@pytest.fixture
def schema(env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    proc = inproc.run(["schema"], env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    loaded: dict[str, Any] = json.loads(proc.stdout)
    return loaded


def test_schema_has_request_and_result(schema: dict[str, Any]) -> None:
    assert set(schema) >= {"request", "result"}
    assert schema["result"]["type"] == "object"
    assert schema["request"].get("properties") or schema["request"].get("oneOf")


def _edit_request(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema of ``tool: "edit"`` requests: the request itself, or one of its variants."""
    request = schema["request"]
    defs = request.get("$defs", {})
    candidates = [request] if "properties" in request else []
    for variant in request.get("oneOf", request.get("anyOf", [])):
        ref = variant.get("$ref", "")
        candidates.append(defs[ref.rsplit("/", 1)[1]] if ref else variant)
    for candidate in candidates:
        tool = candidate["properties"].get("tool", {})
        if tool.get("const") == "edit" or tool.get("enum") == ["edit"]:
            return candidate
    raise AssertionError(f"no edit request in {request}")


def _resolve_ref(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    resolved: dict[str, Any] = schema["request"]["$defs"][ref.rsplit("/", 1)[1]]
    return resolved


def test_request_schema_names_its_fields(schema: dict[str, Any]) -> None:
    edit = _edit_request(schema)
    properties = edit["properties"]
    for name in ("tool", "path", "old_string", "new_string", "replace_all", "edits"):
        assert name in properties
    assert set(edit["required"]) == {"tool", "path"}
    assert edit.get("additionalProperties") is False
    # the items of a batch
    [listed] = [v for v in properties["edits"]["anyOf"] if v.get("type") == "array"]
    item = _resolve_ref(schema, listed["items"])
    assert set(item["properties"]) >= {"old_string", "new_string", "replace_all"}
    assert set(item["required"]) == {"old_string", "new_string"}
    assert item.get("additionalProperties") is False


def test_result_schema_names_its_fields(schema: dict[str, Any]) -> None:
    properties = schema["result"]["properties"]
    for name in (
        "status",
        "path",
        "match_type",
        "confidence",
        "matched_text",
        "matches",
        "error",
        "hint",
        "cleaned",
        "diff",
        "skipped",
        "failures",
    ):
        assert name in properties
    statuses = set(properties["status"]["enum"])
    assert statuses >= {"applied", "no_change", "no_match", "ambiguous", "invalid"}


def test_schema_is_what_the_models_say(schema: dict[str, Any]) -> None:
    assert schema == json_schema()
    model = RESULT.json_schema()
    # The model's schema, but for the match types' names (engine.match_types' one table).
    for table in (schema["result"], *schema["result"]["$defs"].values()):
        table.get("properties", {}).pop("match_type", None)
    for table in (model, *model["$defs"].values()):
        table.get("properties", {}).pop("match_type", None)
    assert schema["result"] == model


def test_every_match_type_in_the_schema_is_one_of_the_tables_names(schema: dict[str, Any]) -> None:
    result = schema["result"]
    found = []
    for name, table in [("Result", result), *result["$defs"].items()]:
        field = table.get("properties", {}).get("match_type")
        if field is None:
            continue
        found.append(name)
        choices = field.get("anyOf", [field])
        [names] = [c for c in choices if c.get("type") == "string"]
        assert names["enum"] == list(MATCH_TYPES), name
        assert "strip" in names["enum"] and "escaped" in names["enum"]
    assert sorted(found) == ["GroupReport", "HunkReport", "Match", "Result"]


def test_schema_output_is_stable() -> None:
    first = CliRunner().invoke(cli, ["schema"])
    second = CliRunner().invoke(cli, ["schema"])
    assert first.exit_code == second.exit_code == 0
    assert first.stdout == second.stdout


# --- real results conform to the result model ------------------------------------


def _edit(path: str = "a.py", **fields: Any) -> dict[str, Any]:
    return {"tool": "edit", "path": path, **fields}


REQUESTS = [
    _edit(old_string="x = 1", new_string="x = 2"),  # applied, exact
    _edit(old_string="def  f( ):\n  return  1\n", new_string="def f():\n  return 2\n"),
    _edit(old_string="nothing like this here", new_string="y"),  # no_match
    _edit("dup.py", old_string="z = 0", new_string="z = 9"),  # ambiguous
    _edit("dup.py", old_string="z = 0", new_string="z = 0"),  # invalid (identical)
    _edit("missing.py", old_string="a", new_string="b"),  # invalid path
    {"tool": "nope"},  # invalid request
    _edit("dup.py", edits=[{"old_string": "z = 0", "new_string": "z = 0"}]),  # no_change
    _edit(
        "dup.py",
        edits=[
            {"old_string": "w = 5", "new_string": "w = 6"},
            {"old_string": "absent", "new_string": "q"},
        ],
    ),  # batch failure
    _edit("dup.py", edits=[{"old_string": "w = 5", "new_string": "w = 6"}]),  # batch applied
    # a patch: its written group and its hunk, as brief answers give their records
    {
        "tool": "apply_patch",
        "patch": "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 3\n",
    },
]


def test_real_results_validate_against_the_result_model(
    env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "a.py").write_text("x = 1\n\n\ndef f():\n    return 1\n")
    (tmp_path / "dup.py").write_text("z = 0\nz = 0\nw = 5\n")
    payload = "".join(json.dumps(r) + "\n" for r in REQUESTS) + "{not json\n"
    proc = inproc.run(["apply", "--jsonl", "--dry-run"], input=payload, env=env, cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stdout.splitlines()
    assert len(lines) == len(REQUESTS) + 1
    statuses = []
    for text in lines:
        model = RESULT.validate_python(json.loads(text))
        assert RESULT.validate_json(text) == model
        statuses.append(model.status)
    assert statuses == [
        "applied",
        "applied",
        "no_match",
        "ambiguous",
        "invalid",
        "invalid",
        "invalid",
        "no_change",
        "no_match",
        "applied",
        "applied",
        "invalid",
    ]
