"""The wire format of requests and results (pydantic), and its JSON Schema.

Requests arrive as JSON from the CLI's stdin or the daemon's socket; they are
validated here and turned into the engine's plain dataclasses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from redline.engine.edit import DEFAULT_THRESHOLD, EditItem, EditRequest
from redline.engine.errors import RequestError
from redline.engine.match_types import MATCH_TYPES
from redline.engine.patch import PatchRequest
from redline.engine.paths import check_characters, has_control_character
from redline.engine.read import DEFAULT_LIMIT, ReadRequest
from redline.engine.result import Result
from redline.engine.write import DeleteRequest, WriteRequest
from redline.tools.request import bad_text

if TYPE_CHECKING:
    from redline.engine.requests import Request

Threshold = Annotated[float, Field(gt=0.0, le=1.0, strict=False)]


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class EditItemModel(_Wire):
    old_string: StrictStr
    new_string: StrictStr
    replace_all: StrictBool = False


class EditRequestModel(_Wire):
    """``{"tool": "edit", "path", "old_string", "new_string", "replace_all"}`` or with ``edits``."""

    tool: Literal["edit"]
    path: StrictStr = Field(min_length=1)
    old_string: StrictStr | None = None
    new_string: StrictStr | None = None
    replace_all: StrictBool | None = None
    edits: list[EditItemModel] | None = Field(default=None, min_length=1)
    threshold: Threshold | None = None
    turn: StrictStr | int | None = None
    model: StrictStr | None = None
    validate_: StrictBool | None = Field(default=None, alias="validate")  # must still parse


class ApplyPatchRequestModel(_Wire):
    """``{"tool": "apply_patch", "patch": "*** Begin Patch ... *** End Patch"}``."""

    tool: Literal["apply_patch"]
    patch: StrictStr
    turn: StrictStr | int | None = None
    model: StrictStr | None = None
    validate_: StrictBool | None = Field(default=None, alias="validate")  # must still parse


class WriteRequestModel(_Wire):
    """``{"tool": "write", "path", "content", "line_ending"?}``: create or overwrite a file.

    Without ``line_ending`` a new file gets LF and an existing one keeps its own style.
    """

    tool: Literal["write"]
    path: StrictStr = Field(min_length=1)
    content: StrictStr
    line_ending: Literal["lf", "crlf"] | None = None
    turn: StrictStr | int | None = None
    model: StrictStr | None = None
    validate_: StrictBool | None = Field(default=None, alias="validate")  # must still parse

    def request(self) -> WriteRequest:
        return WriteRequest(self.path, self.content, self.line_ending, bool(self.validate_))


class DeleteRequestModel(_Wire):
    """``{"tool": "delete", "path"}``: remove one file (never a folder)."""

    tool: Literal["delete"]
    path: StrictStr = Field(min_length=1)
    turn: StrictStr | int | None = None
    model: StrictStr | None = None

    def request(self) -> DeleteRequest:
        return DeleteRequest(self.path)


class ReadRequestModel(_Wire):
    """``{"tool": "read", "path", "offset"?, "limit"?}``: numbered lines from ``offset``
    (1-based, default 1), at most ``limit`` (default 2000). Changes nothing."""

    tool: Literal["read"]
    path: StrictStr = Field(min_length=1)
    offset: StrictInt = Field(default=1, ge=1)
    limit: StrictInt = Field(default=DEFAULT_LIMIT, ge=1)
    turn: StrictStr | int | None = None
    model: StrictStr | None = None

    def request(self) -> ReadRequest:
        return ReadRequest(self.path, self.offset, self.limit)


RequestModel = Annotated[
    EditRequestModel
    | ApplyPatchRequestModel
    | WriteRequestModel
    | DeleteRequestModel
    | ReadRequestModel,
    Field(discriminator="tool"),
]


# Results are the engine's own dataclasses; pydantic reads them directly, so the
# schema cannot drift from what callers get.
RESULT: TypeAdapter[Result] = TypeAdapter(Result)


REQUEST_EXAMPLE = '{"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}'
PATCH_EXAMPLE = '{"tool": "apply_patch", "patch": "*** Begin Patch\\n...\\n*** End Patch"}'
WRITE_EXAMPLE = '{"tool": "write", "path": "src/app.py", "content": "..."}'
DELETE_EXAMPLE = '{"tool": "delete", "path": "src/old.py"}'
READ_EXAMPLE = '{"tool": "read", "path": "src/app.py", "offset": 1, "limit": 200}'
_FileModel = WriteRequestModel | DeleteRequestModel | ReadRequestModel
_FILE_TOOLS: dict[str, tuple[type[_FileModel], str]] = {
    "write": (WriteRequestModel, WRITE_EXAMPLE),
    "delete": (DeleteRequestModel, DELETE_EXAMPLE),
    "read": (ReadRequestModel, READ_EXAMPLE),
}
TOOLS = '"edit", "apply_patch", "write", "delete" or "read"'


def parse_request(obj: Any, default_threshold: float | None = None) -> tuple[Request, object]:
    """Validate a decoded JSON request; return the engine request and its turn."""
    if not isinstance(obj, dict):
        raise RequestError(f"a request must be a JSON object, like {REQUEST_EXAMPLE}")
    not_text = bad_text(obj)
    if not_text is not None:
        raise RequestError(not_text[1], not_text[0])
    tool = obj.get("tool")
    if tool == "apply_patch":
        _check_downgraded_patch(obj)
        try:
            patch = ApplyPatchRequestModel.model_validate(obj)
        except ValidationError as exc:
            raise RequestError(_explain(exc, PATCH_EXAMPLE)) from None
        return PatchRequest(patch.patch, bool(patch.validate_)), patch.turn
    if isinstance(tool, str) and tool in _FILE_TOOLS:
        wire, example = _FILE_TOOLS[tool]
        _check_path_characters(obj)
        try:
            file_model: _FileModel = wire.model_validate(obj)
        except ValidationError as exc:
            raise RequestError(_explain(exc, example)) from None
        return file_model.request(), file_model.turn
    if tool != "edit":
        raise RequestError(f"unknown tool {tool!r}; use {TOOLS}, e.g. {REQUEST_EXAMPLE}", "tool")
    _check_path_characters(obj)
    try:
        model = EditRequestModel.model_validate(obj)
    except ValidationError as exc:
        raise RequestError(_explain(exc, REQUEST_EXAMPLE)) from None
    threshold = model.threshold or default_threshold or DEFAULT_THRESHOLD
    validate = bool(model.validate_)
    single = (model.old_string, model.new_string, model.replace_all)
    if model.edits is not None:
        if any(field is not None for field in single):
            raise RequestError(
                "give either old_string/new_string/replace_all or edits, not both", "edits"
            )
        items = tuple(EditItem(e.old_string, e.new_string, e.replace_all) for e in model.edits)
        request = EditRequest(model.path, items, batch=True, threshold=threshold, validate=validate)
        return request, model.turn
    missing = [n for n, v in (("old_string", single[0]), ("new_string", single[1])) if v is None]
    if missing:
        raise RequestError(
            f"missing field {' and '.join(missing)}; an edit needs old_string and new_string "
            f"(or a list of edits), e.g. {REQUEST_EXAMPLE}",
            missing[0],
        )
    assert model.old_string is not None and model.new_string is not None
    item = EditItem(model.old_string, model.new_string, bool(model.replace_all))
    return EditRequest(model.path, (item,), threshold=threshold, validate=validate), model.turn


def _check_downgraded_patch(obj: dict[str, Any]) -> None:
    """A patch sent as ``{"input": ...}`` (a gateway downgraded the freeform tool): the
    error names the setting that shows the model the JSON form instead."""
    from redline.tools.surface import downgraded_patch_call

    model = obj.get("model")
    error = downgraded_patch_call(obj, model=model if isinstance(model, str) else None)
    if error is not None:
        raise RequestError(error, "input")


def _check_path_characters(obj: dict[str, Any]) -> None:
    path = obj.get("path")
    if isinstance(path, str) and not has_control_character(path):
        # Empty, or a lone surrogate: refused in the path policy's words rather than
        # the wire format's. (A NUL byte or another control character passes here, and
        # the policy refuses it later, as the fast path does.)
        check_characters(path)


def _explain(exc: ValidationError, example: str) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "request"
        problems.append(f"{where}: {error['msg']}")
    return "invalid request: " + "; ".join(problems) + f". Expected e.g. {example}"


def json_schema() -> dict[str, Any]:
    """JSON Schemas of the requests and of the result every caller gets."""
    return {
        "request": TypeAdapter(RequestModel).json_schema(),
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
