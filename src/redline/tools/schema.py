"""The wire format of requests and results (pydantic), and its JSON Schema.

Requests arrive as JSON from the CLI's stdin or the daemon's socket; they are
validated here and turned into the engine's plain dataclasses.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    TypeAdapter,
    ValidationError,
)

from redline.engine.edit import DEFAULT_THRESHOLD, EditItem, EditRequest
from redline.engine.errors import RequestError
from redline.engine.patch import PatchRequest
from redline.engine.paths import check_characters
from redline.engine.result import Result

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


RequestModel = Annotated[EditRequestModel | ApplyPatchRequestModel, Field(discriminator="tool")]


# Results are the engine's own dataclasses; pydantic reads them directly, so the
# schema cannot drift from what callers get.
RESULT: TypeAdapter[Result] = TypeAdapter(Result)


REQUEST_EXAMPLE = '{"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}'
PATCH_EXAMPLE = '{"tool": "apply_patch", "patch": "*** Begin Patch\\n...\\n*** End Patch"}'


def parse_request(
    obj: Any, default_threshold: float | None = None
) -> tuple[EditRequest | PatchRequest, object]:
    """Validate a decoded JSON request; return the engine request and its turn."""
    if not isinstance(obj, dict):
        raise RequestError(f"a request must be a JSON object, like {REQUEST_EXAMPLE}")
    tool = obj.get("tool")
    if tool == "apply_patch":
        try:
            patch = ApplyPatchRequestModel.model_validate(obj)
        except ValidationError as exc:
            raise RequestError(_explain(exc, PATCH_EXAMPLE)) from None
        return PatchRequest(patch.patch, bool(patch.validate_)), patch.turn
    if tool != "edit":
        raise RequestError(
            f'unknown tool {tool!r}; use "edit" or "apply_patch", e.g. {REQUEST_EXAMPLE}',
            "tool",
        )
    path = obj.get("path")
    if isinstance(path, str) and "\x00" not in path:
        # Empty, or a lone surrogate: refused in the path policy's words rather than
        # the wire format's. (A NUL byte passes here, and the policy refuses it later.)
        check_characters(path)
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
        "result": RESULT.json_schema(),
    }
