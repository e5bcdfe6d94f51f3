"""tools.definitions: each tool's arguments are a valid JSON Schema, and say what the wire takes.

The schemas are checked with ``jsonschema`` (Draft 2020-12), then used: example
arguments of every tool validate, wrong ones do not, and arguments that
validate are requests the wire format (``tools.request``) accepts.
"""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest
from jsonschema import Draft202012Validator

from redline.engine.errors import RequestError
from redline.tools.definitions import DEFINITIONS, FREEFORM_PATCH_DESCRIPTION, TOOL_NAMES
from redline.tools.request import parse_request

PATCH = "*** Begin Patch\n*** Add File: docs/new.md\n+hello\n*** End Patch\n"

GOOD: dict[str, list[dict[str, Any]]] = {
    "edit": [
        {"path": "src/app.py", "old_string": "x = 1", "new_string": "x = 2"},
        {"path": "src/app.py", "old_string": "x", "new_string": "y", "replace_all": True},
        {
            "path": "src/app.py",
            "edits": [
                {"old_string": "a", "new_string": "b"},
                {"old_string": "c", "new_string": "", "replace_all": True},
            ],
        },
    ],
    "apply_patch": [{"patch": PATCH}],
    "write": [
        {"path": "docs/new.md", "content": "hello\n"},
        {"path": "win.bat", "content": "echo\r\n", "line_ending": "crlf"},
    ],
    "delete": [{"path": "old.txt"}],
    "read": [{"path": "a.py"}, {"path": "a.py", "offset": 10, "limit": 50}],
}

BAD: dict[str, list[dict[str, Any]]] = {
    "edit": [
        {"old_string": "a", "new_string": "b"},  # no path
        {"path": "", "old_string": "a", "new_string": "b"},
        {"path": "a.py", "old_string": 1, "new_string": "b"},
        {"path": "a.py", "edits": []},
        {"path": "a.py", "edits": [{"old_string": "a"}]},
        {"path": "a.py", "old_string": "a", "new_string": "b", "tool": "edit"},
    ],
    "apply_patch": [{}, {"input": PATCH}, {"patch": 3}],
    "write": [{"path": "a"}, {"path": "a", "content": "", "line_ending": "cr"}],
    "delete": [{}, {"path": "a", "recursive": True}],
    "read": [
        {"path": "a", "offset": 0},
        {"path": "a", "limit": "10"},
        {"path": "a", "offset": 1.5},
    ],
}


def test_every_tool_is_defined_once_under_its_name() -> None:
    assert tuple(DEFINITIONS) == TOOL_NAMES
    assert all(DEFINITIONS[name].name == name for name in TOOL_NAMES)


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_parameters_are_a_valid_draft_2020_12_schema_of_an_object(name: str) -> None:
    schema = DEFINITIONS[name].parameters
    Draft202012Validator.check_schema(schema)
    assert schema["type"] == "object"
    # The endpoints refuse combinators at the top of a tool's parameters.
    assert not {"oneOf", "anyOf", "allOf", "not", "enum"} & set(schema)
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize(("name", "arguments"), [(n, a) for n in GOOD for a in GOOD[n]])
def test_example_arguments_validate(name: str, arguments: dict[str, Any]) -> None:
    Draft202012Validator(DEFINITIONS[name].parameters).validate(arguments)


@pytest.mark.parametrize(("name", "arguments"), [(n, a) for n in BAD for a in BAD[n]])
def test_wrong_arguments_do_not_validate(name: str, arguments: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        Draft202012Validator(DEFINITIONS[name].parameters).validate(arguments)


@pytest.mark.parametrize(
    ("name", "arguments"), [(n, a) for n in ("edit", "apply_patch") for a in GOOD[n]]
)
def test_valid_arguments_are_requests_the_wire_format_accepts(
    name: str, arguments: dict[str, Any]
) -> None:
    parse_request({"tool": name, **arguments})


def test_the_schema_cannot_say_either_or_so_the_wire_format_does() -> None:
    both = {
        "path": "a.py",
        "old_string": "a",
        "new_string": "b",
        "edits": [{"old_string": "a", "new_string": "b"}],
    }
    with pytest.raises(RequestError, match="not both"):
        parse_request({"tool": "edit", **both})


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_every_field_the_schema_names_is_a_field_of_the_wire_request(name: str) -> None:
    from redline.tools.request import ITEM, TOOLS

    shape = TOOLS[name]
    fields = {field.name for field in shape.fields}
    properties = DEFINITIONS[name].parameters["properties"]
    assert set(properties) <= fields - {"tool", "turn", "model", "threshold"}
    required = {field.name for field in shape.fields if field.required} - {"tool"}
    assert set(DEFINITIONS[name].parameters["required"]) >= required
    if name == "edit":
        items = properties["edits"]["items"]["properties"]
        assert set(items) == {field.name for field in ITEM.fields}


# The tolerant tiers are never advertised: a model told near misses are repaired
# quotes less carefully.
TOLERANT_WORDS = re.compile(
    r"fuzz|toleran|similar|approximat|close enough|whitespace[- ]insensitive|"
    r"normali[sz]|forgiv|repair|threshold|confidence",
    re.IGNORECASE,
)


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_descriptions_never_advertise_the_tolerant_tiers(name: str) -> None:
    definition = DEFINITIONS[name]
    texts = [definition.description, *_descriptions(definition.parameters)]
    if name == "apply_patch":
        texts.append(FREEFORM_PATCH_DESCRIPTION)
    for text in texts:
        assert not TOLERANT_WORDS.search(text), text


def _descriptions(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return own + [d for value in schema.values() for d in _descriptions(value)]
    if isinstance(schema, list):
        return [d for value in schema for d in _descriptions(value)]
    return []


def test_descriptions_teach_the_habits_that_make_edits_land() -> None:
    edit = DEFINITIONS["edit"].description
    assert "smallest block" in edit and "only once" in edit
    assert "read the file again and retry" in edit
    assert "one file per call" in edit
    patch = DEFINITIONS["apply_patch"].description
    for marker in ("*** Begin Patch", "*** Update File:", "*** Move to:", "@@", "*** End Patch"):
        assert marker in patch
        assert marker in FREEFORM_PATCH_DESCRIPTION
    assert "read the files again" in patch
    assert "no JSON" in FREEFORM_PATCH_DESCRIPTION
    assert "again after a change fails" in DEFINITIONS["read"].description
