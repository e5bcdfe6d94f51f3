"""The wire format of requests and results (pydantic), and its JSON Schema.

Requests arrive as JSON from the CLI's stdin or the daemon's socket; they are
validated here and turned into the engine's plain dataclasses.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, ValidationError

from redline.engine.edit import DEFAULT_THRESHOLD, EditItem, EditRequest
from redline.engine.errors import RequestError

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


class MatchModel(_Wire):
    match_type: str
    confidence: float
    matched_text: str
    start_line: int
    end_line: int


class FailureModel(_Wire):
    index: int
    status: str
    error: str


class ResultModel(_Wire):
    status: Literal[
        "applied",
        "no_change",
        "no_match",
        "ambiguous",
        "invalid",
        "rejected",
        "partially_applied",
        "failed",
        "validation_failed",
    ]
    path: str | None = None
    match_type: str | None = None
    confidence: float | None = None
    matched_text: str | None = None
    matches: list[MatchModel] = []
    error: str | None = None
    hint: str | None = None
    cleaned: list[str] = []
    diff: str | None = None
    skipped: list[int] = []
    failures: list[FailureModel] = []


REQUEST_EXAMPLE = '{"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}'


def parse_request(obj: Any, default_threshold: float | None = None) -> tuple[EditRequest, object]:
    """Validate a decoded JSON request; return the engine request and its turn."""
    if not isinstance(obj, dict):
        raise RequestError(f"a request must be a JSON object, like {REQUEST_EXAMPLE}")
    tool = obj.get("tool")
    if tool != "edit":
        raise RequestError(
            f'unknown tool {tool!r}; this build accepts "edit", e.g. {REQUEST_EXAMPLE}',
            "tool",
        )
    try:
        model = EditRequestModel.model_validate(obj)
    except ValidationError as exc:
        raise RequestError(_explain(exc)) from None
    threshold = model.threshold or default_threshold or DEFAULT_THRESHOLD
    single = (model.old_string, model.new_string, model.replace_all)
    if model.edits is not None:
        if any(field is not None for field in single):
            raise RequestError(
                "give either old_string/new_string/replace_all or edits, not both", "edits"
            )
        items = tuple(EditItem(e.old_string, e.new_string, e.replace_all) for e in model.edits)
        return EditRequest(model.path, items, batch=True, threshold=threshold), model.turn
    missing = [n for n, v in (("old_string", single[0]), ("new_string", single[1])) if v is None]
    if missing:
        raise RequestError(
            f"missing field {' and '.join(missing)}; an edit needs old_string and new_string "
            f"(or a list of edits), e.g. {REQUEST_EXAMPLE}",
            missing[0],
        )
    assert model.old_string is not None and model.new_string is not None
    item = EditItem(model.old_string, model.new_string, bool(model.replace_all))
    return EditRequest(model.path, (item,), threshold=threshold), model.turn


def _explain(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "request"
        problems.append(f"{where}: {error['msg']}")
    return "invalid request: " + "; ".join(problems) + f". Expected e.g. {REQUEST_EXAMPLE}"


def json_schema() -> dict[str, Any]:
    """JSON Schemas of the requests and of the result every caller gets."""
    return {
        "request": EditRequestModel.model_json_schema(),
        "result": ResultModel.model_json_schema(),
    }
