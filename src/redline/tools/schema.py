"""The JSON Schema of the format: requests and the result every caller gets.

The request's comes from the one table the requests are read by
(:mod:`redline.tools.request`); the result's from the engine's own records (their dataclass
twins), read by pydantic here (``redline schema`` only: no request is read with it), so
neither can drift from what callers send and get.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from redline.engine.match_types import MATCH_TYPES
from redline.engine.records import as_dataclass
from redline.engine.result import Result
from redline.tools.request import request_schema

# Results are the engine's own records; pydantic reads their dataclass twins, so the
# schema cannot drift from what callers get.
RESULT: TypeAdapter[Any] = TypeAdapter(as_dataclass(Result))


def json_schema() -> dict[str, Any]:
    """JSON Schemas of the requests and of the result every caller gets."""
    return {
        "request": request_schema(),
        "result": result_schema(),
    }


def result_schema() -> dict[str, Any]:
    """The result's JSON Schema: the model's, with every ``match_type`` (the result's, each
    match's, hunk's and file group's) one of the names of engine.match_types' table."""
    schema = RESULT.json_schema()
    tables = [schema, *schema.get("$defs", {}).values()]
    for table in tables:
        field = table.get("properties", {}).get("match_type")
        if field is None:
            continue
        names = {"type": "string", "enum": list(MATCH_TYPES)}
        if "anyOf" in field:  # optional: a name or null
            field["anyOf"] = [names if f.get("type") == "string" else f for f in field["anyOf"]]
        else:
            field.pop("type", None)
            field.update(names)
    return schema
