"""The request format: one table of what each tool takes, read by hand, and its JSON Schema.

Every front end reads a request here — ``redline apply`` (embedded, and the daemon
for ``--session``), ``redline mcp`` — so a request means the same wherever it is
sent. :data:`TOOLS` says, per tool, each field's type, whether it is required,
its default and its bounds; :func:`parse_request` checks a decoded JSON request
against it, says everything that is wrong at once in the format's words (the
words pydantic used when it read the format: ``old_string: Input should be a
valid string``), and turns a good one into the engine's request.
:func:`request_schema` is the JSON Schema drawn from the same table, so what is
documented is what is read. No pydantic: ``redline apply`` starts for every edit.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from redline.engine.edit import DEFAULT_THRESHOLD, EditItem, EditRequest
from redline.engine.errors import RequestError
from redline.engine.paths import check_characters, has_control_character
from redline.engine.records import record

if TYPE_CHECKING:
    from redline.engine.requests import Request

REQUEST_EXAMPLE = '{"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}'
PATCH_EXAMPLE = '{"tool": "apply_patch", "patch": "*** Begin Patch\\n...\\n*** End Patch"}'
WRITE_EXAMPLE = '{"tool": "write", "path": "src/app.py", "content": "..."}'
DELETE_EXAMPLE = '{"tool": "delete", "path": "src/old.py"}'
READ_EXAMPLE = '{"tool": "read", "path": "src/app.py", "offset": 1, "limit": 200}'
TOOL_NAMES = '"edit", "apply_patch", "write", "delete" or "read"'
READ_LIMIT = 2000  # lines a read returns when it names no limit (engine.read)


# --- the table ------------------------------------------------------------------------


@record(frozen=True)
class Field:
    """One field of a request. ``kind``: ``tool`` (the tool's name), ``text``, ``flag``
    (a boolean), ``count`` (an integer), ``fraction`` (a number in (0, 1]), ``turn`` (text
    or an integer), ``choice`` (one of ``choices``), ``edits`` (a list of edit items)."""

    name: str
    kind: str
    required: bool = False
    nullable: bool = True  # null is read as "not given"
    default: Any = None
    least: int | None = None  # text: characters; count: the value; edits: items
    choices: tuple[str, ...] = ()


@record(frozen=True)
class Shape:
    """One object of the format: its name in the schema, its fields in order, what the
    schema says of it, and the example an error shows."""

    title: str
    fields: tuple[Field, ...]
    description: str | None = None
    example: str = ""


def _tool(name: str) -> Field:
    return Field("tool", "tool", required=True, nullable=False, default=name)


PATH = Field("path", "text", required=True, nullable=False, least=1)
TURN = Field("turn", "turn")
MODEL = Field("model", "text")
VALIDATE = Field("validate", "flag")

ITEM = Shape(
    "EditItemModel",
    (
        Field("old_string", "text", required=True, nullable=False),
        Field("new_string", "text", required=True, nullable=False),
        Field("replace_all", "flag", nullable=False, default=False),
    ),
)
TOOLS: dict[str, Shape] = {
    "edit": Shape(
        "EditRequestModel",
        (
            _tool("edit"),
            PATH,
            Field("old_string", "text"),
            Field("new_string", "text"),
            Field("replace_all", "flag"),
            Field("edits", "edits", least=1),
            Field("threshold", "fraction"),
            TURN,
            MODEL,
            VALIDATE,
        ),
        '``{"tool": "edit", "path", "old_string", "new_string", "replace_all"}`` or with '
        "``edits``.",
        REQUEST_EXAMPLE,
    ),
    "apply_patch": Shape(
        "ApplyPatchRequestModel",
        (
            _tool("apply_patch"),
            Field("patch", "text", required=True, nullable=False),
            TURN,
            MODEL,
            VALIDATE,
        ),
        '``{"tool": "apply_patch", "patch": "*** Begin Patch ... *** End Patch"}``.',
        PATCH_EXAMPLE,
    ),
    "write": Shape(
        "WriteRequestModel",
        (
            _tool("write"),
            PATH,
            Field("content", "text", required=True, nullable=False),
            Field("line_ending", "choice", choices=("lf", "crlf")),
            TURN,
            MODEL,
            VALIDATE,
        ),
        '``{"tool": "write", "path", "content", "line_ending"?}``: create or overwrite a '
        "file.\n\nWithout ``line_ending`` a new file gets LF and an existing one keeps its "
        "own style.",
        WRITE_EXAMPLE,
    ),
    "delete": Shape(
        "DeleteRequestModel",
        (_tool("delete"), PATH, TURN, MODEL),
        '``{"tool": "delete", "path"}``: remove one file (never a folder).',
        DELETE_EXAMPLE,
    ),
    "read": Shape(
        "ReadRequestModel",
        (
            _tool("read"),
            PATH,
            Field("offset", "count", nullable=False, default=1, least=1),
            Field("limit", "count", nullable=False, default=READ_LIMIT, least=1),
            TURN,
            MODEL,
        ),
        '``{"tool": "read", "path", "offset"?, "limit"?}``: numbered lines from ``offset``\n'
        "(1-based, default 1), at most ``limit`` (default 2000). Changes nothing.",
        READ_EXAMPLE,
    ),
}


# --- reading --------------------------------------------------------------------------


def parse_request(obj: Any, default_threshold: float | None = None) -> tuple[Request, object]:
    """Check a decoded JSON request; the engine's request and its turn (RequestError, saying
    what is wrong, when it is not one)."""
    if not isinstance(obj, dict):
        raise RequestError(f"a request must be a JSON object, like {REQUEST_EXAMPLE}")
    not_text = bad_text(obj)
    if not_text is not None:
        raise RequestError(not_text[1], not_text[0])
    tool = obj.get("tool")
    if not isinstance(tool, str) or tool not in TOOLS:
        raise RequestError(
            f"unknown tool {tool!r}; use {TOOL_NAMES}, e.g. {REQUEST_EXAMPLE}", "tool"
        )
    if tool == "apply_patch":
        _check_downgraded_patch(obj)
    else:
        _check_path_characters(obj)
    given = _read(TOOLS[tool], obj)
    if tool == "edit":
        return _edit(given, default_threshold), given["turn"]
    if tool == "apply_patch":
        from redline.engine.patch import PatchRequest  # the patch machinery, only for patches

        return PatchRequest(given["patch"], bool(given["validate"])), given["turn"]
    if tool == "read":
        from redline.engine.read import ReadRequest

        return ReadRequest(given["path"], given["offset"], given["limit"]), given["turn"]
    from redline.engine.write import DeleteRequest, WriteRequest

    if tool == "delete":
        return DeleteRequest(given["path"]), given["turn"]
    request = WriteRequest(
        given["path"], given["content"], given["line_ending"], bool(given["validate"])
    )
    return request, given["turn"]


def _edit(given: dict[str, Any], default_threshold: float | None) -> EditRequest:
    threshold = given["threshold"] or default_threshold or DEFAULT_THRESHOLD
    validate = bool(given["validate"])
    single = (given["old_string"], given["new_string"], given["replace_all"])
    if given["edits"] is not None:
        if any(field is not None for field in single):
            raise RequestError(
                "give either old_string/new_string/replace_all or edits, not both", "edits"
            )
        items = tuple(
            EditItem(e["old_string"], e["new_string"], e["replace_all"]) for e in given["edits"]
        )
        return EditRequest(given["path"], items, batch=True, threshold=threshold, validate=validate)
    missing = [n for n, v in (("old_string", single[0]), ("new_string", single[1])) if v is None]
    if missing:
        raise RequestError(
            f"missing field {' and '.join(missing)}; an edit needs old_string and new_string "
            f"(or a list of edits), e.g. {REQUEST_EXAMPLE}",
            missing[0],
        )
    item = EditItem(single[0], single[1], bool(single[2]))
    return EditRequest(given["path"], (item,), threshold=threshold, validate=validate)


Problem = tuple[tuple[str | int, ...], str]  # where (the field's path) and what


def _read(shape: Shape, obj: dict[str, Any]) -> dict[str, Any]:
    """The fields of ``obj`` by ``shape`` (defaults filled in); RequestError naming every
    problem when there is one."""
    problems: list[Problem] = []
    given = _fields(shape, obj, (), problems)
    if problems:
        said = "; ".join(
            f"{'.'.join(map(str, where)) or 'request'}: {what}" for where, what in problems
        )
        raise RequestError(f"invalid request: {said}. Expected e.g. {shape.example}")
    return given


def _named(where: tuple[str | int, ...]) -> str:
    return ".".join(map(str, where)) or "request"


def _fields(
    shape: Shape, obj: dict[str, Any], where: tuple[str | int, ...], problems: list[Problem]
) -> dict[str, Any]:
    given: dict[str, Any] = {}
    for field in shape.fields:
        at = (*where, field.name)
        if field.name not in obj:
            if field.required:
                problems.append((at, "Field required"))
            given[field.name] = field.default
            continue
        value = obj[field.name]
        if value is None and field.nullable:
            given[field.name] = None
            continue
        given[field.name] = _value(field, value, at, problems)
    names = {field.name for field in shape.fields}
    problems.extend(
        ((*where, key), "Extra inputs are not permitted") for key in obj if key not in names
    )
    return given


def _value(field: Field, value: Any, at: tuple[str | int, ...], problems: list[Problem]) -> Any:
    kind = field.kind
    if kind == "tool":
        return value
    if kind == "text":
        if type(value) is not str:
            problems.append((at, "Input should be a valid string"))
        elif field.least is not None and len(value) < field.least:
            plural = "" if field.least == 1 else "s"
            problems.append((at, f"String should have at least {field.least} character{plural}"))
        return value
    if kind == "flag":
        if type(value) is not bool:
            problems.append((at, "Input should be a valid boolean"))
        return value
    if kind == "count":
        value = _integral(value)
        if type(value) is not int:
            problems.append((at, "Input should be a valid integer"))
        elif field.least is not None and value < field.least:
            problems.append((at, f"Input should be greater than or equal to {field.least}"))
        return value
    if kind == "turn":
        value = _integral(value)
        if type(value) is not str and type(value) is not int:
            problems.append(((*at, "str"), "Input should be a valid string"))
            problems.append(((*at, "int"), "Input should be a valid integer"))
        return value
    if kind == "choice":
        if type(value) is not str or value not in field.choices:
            names = [repr(choice) for choice in field.choices]
            problems.append((at, f"Input should be {', '.join(names[:-1])} or {names[-1]}"))
        return value
    if kind == "fraction":
        return _fraction(value, at, problems)
    assert kind == "edits", kind
    return _edits(field, value, at, problems)


def _integral(value: Any) -> Any:
    """A number with no fractional part (``2.0``) as the integer it is — JSON, and the
    schema's ``integer``, do not tell them apart; anything else as it is."""
    if type(value) is float and value.is_integer():
        return int(value)
    return value


# A number as text, as the format reads one: decimal, with an exponent, signed, "inf" or
# "nan", spaces around it; underscores between digits.
_NUMBER = re.compile(
    r"[+-]?(?:(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?"
    r"|inf(?:inity)?|nan)",
    re.IGNORECASE | re.ASCII,
)


_NOT_A_NUMBER = "Input should be a valid number"


def _fraction(value: Any, at: tuple[str | int, ...], problems: list[Problem]) -> Any:
    """A similarity threshold: a number in (0, 1] (text and booleans read as numbers)."""
    if type(value) is str:
        text = value.strip()
        if not _NUMBER.fullmatch(text):
            problems.append(
                (at, "Input should be a valid number, unable to parse string as a number")
            )
            return value
        number = float(text)
    elif type(value) in (bool, int, float):
        try:
            number = float(value)
        except OverflowError:
            problems.append((at, _NOT_A_NUMBER))
            return value
    else:
        problems.append((at, _NOT_A_NUMBER))
        return value
    if not number <= 1.0:
        problems.append((at, "Input should be less than or equal to 1"))
    elif not number > 0.0:
        problems.append((at, "Input should be greater than 0"))
    return number


def _edits(field: Field, value: Any, at: tuple[str | int, ...], problems: list[Problem]) -> Any:
    if type(value) is not list:
        problems.append((at, "Input should be a valid list"))
        return value
    items = []
    for index, item in enumerate(value):
        if type(item) is not dict:
            problems.append(
                ((*at, index), f"Input should be a valid dictionary or instance of {ITEM.title}")
            )
            continue
        items.append(_fields(ITEM, item, (*at, index), problems))
    if field.least is not None and len(value) < field.least:
        problems.append(
            (at, f"List should have at least {field.least} item after validation, not {len(value)}")
        )
    return items


def _check_downgraded_patch(obj: dict[str, Any]) -> None:
    """A patch sent as ``{"input": ...}`` (a gateway downgraded the freeform tool): the
    error names the setting that shows the model the JSON form instead."""
    if "patch" in obj or not isinstance(obj.get("input"), str):
        return
    from redline.tools.surface import downgraded_patch_call

    model = obj.get("model")
    error = downgraded_patch_call(obj, model=model if isinstance(model, str) else None)
    if error is not None:
        raise RequestError(error, "input")


def _check_path_characters(obj: dict[str, Any]) -> None:
    path = obj.get("path")
    if isinstance(path, str) and not has_control_character(path):
        # Empty, or a lone surrogate: refused in the path policy's words rather than the
        # format's. (A NUL byte or another control character passes here; the path policy
        # refuses it later.)
        check_characters(path)


# --- what no text holds -----------------------------------------------------------------


def bad_text(obj: Any) -> tuple[str, str] | None:
    """The first field of request ``obj`` holding what no text holds, and the error saying
    so: a NUL character, or a lone surrogate (JSON's ``"\\ud800"``, or a byte that is not
    UTF-8 kept as a surrogate escape). The path is the path policy's to judge."""
    if type(obj) is not dict:
        return None
    for key, value in obj.items():
        if key != "path":
            found = _bad_in(value, str(key))
            if found is not None:
                return found
    return None


def _bad_in(value: Any, field: str) -> tuple[str, str] | None:
    if type(value) is str:
        if value.isascii() and "\x00" not in value:
            return None
        match = _first(value, headers=field == "patch")
        return None if match is None else (field, _not_text(value, field, match))
    if type(value) is list:
        for index, item in enumerate(value):
            found = _bad_in(item, f"{field}[{index}]")
            if found is not None:
                return found
    elif type(value) is dict:
        for key, item in value.items():
            found = _bad_in(item, f"{field}.{key}")
            if found is not None:
                return found
    return None


_NOT_TEXT = re.compile("[\x00\ud800-\udfff]")
_PATCH_HEADER = re.compile(r"\*\*\* (Add File|Update File|Delete File|Move to):")


def _first(value: str, headers: bool) -> re.Match[str] | None:
    """The first character no text holds; in a patch (``headers``), not on a line that
    names a path: the path policy judges those, in its own words."""
    at = 0
    while found := _NOT_TEXT.search(value, at):
        start = value.rfind("\n", 0, found.start()) + 1
        if not (headers and _PATCH_HEADER.match(value, start)):
            return found
        end = value.find("\n", found.start())
        if end < 0:
            return None
        at = end
    return None


def _not_text(value: str, field: str, found: re.Match[str]) -> str:
    at = found.start()
    line = value.count("\n", 0, at) + 1
    column = at - (value.rfind("\n", 0, at) + 1) + 1
    where = f"at line {line}, column {column}"
    code = ord(found.group())
    if code == 0:
        return (
            f"{field!r} holds a NUL character (U+0000) {where}; redline edits text, and text "
            f"holds none (a file with NUL bytes is binary): send {field} without it"
        )
    also = ""
    if code >= 0xDC80:  # how a byte that is not UTF-8 arrives (a surrogate escape)
        also = f", or the byte 0x{code - 0xDC00:02X}, which is not valid UTF-8"
    return (
        f"{field!r} holds a lone surrogate (U+{code:04X}{also}) {where}, which is not "
        f"text: send {field} as UTF-8 text"
    )


# --- the schema -----------------------------------------------------------------------


def request_schema() -> dict[str, Any]:
    """The JSON Schema of a request, drawn from :data:`TOOLS`."""
    shapes = [*TOOLS.values(), ITEM]
    return {
        "$defs": {shape.title: _object(shape) for shape in sorted(shapes, key=lambda s: s.title)},
        "discriminator": {
            "mapping": {tool: f"#/$defs/{TOOLS[tool].title}" for tool in sorted(TOOLS)},
            "propertyName": "tool",
        },
        "oneOf": [{"$ref": f"#/$defs/{shape.title}"} for shape in TOOLS.values()],
    }


def _object(shape: Shape) -> dict[str, Any]:
    schema: dict[str, Any] = {"additionalProperties": False}
    if shape.description is not None:
        schema["description"] = shape.description
    schema["properties"] = {field.name: _property(field) for field in shape.fields}
    schema["required"] = [field.name for field in shape.fields if field.required]
    schema["title"] = shape.title
    schema["type"] = "object"
    return schema


def _property(field: Field) -> dict[str, Any]:
    title = field.name.replace("_", " ").title()
    if field.kind == "tool":
        return {"const": field.default, "title": title, "type": "string"}
    types: dict[str, list[dict[str, Any]]] = {
        "text": [{"type": "string"}],
        "flag": [{"type": "boolean"}],
        "count": [{"type": "integer"}],
        "turn": [{"type": "string"}, {"type": "integer"}],
        "fraction": [{"exclusiveMinimum": 0.0, "maximum": 1.0, "type": "number"}],
        "choice": [{"enum": list(field.choices), "type": "string"}],
        "edits": [{"items": {"$ref": f"#/$defs/{ITEM.title}"}, "type": "array"}],
    }
    kinds = types[field.kind]
    if field.least is not None:
        bound = {"text": "minLength", "count": "minimum", "edits": "minItems"}[field.kind]
        kinds = [dict(sorted({**kinds[0], bound: field.least}.items()))]
    if field.nullable:
        return {"anyOf": [*kinds, {"type": "null"}], "default": None, "title": title}
    out = dict(kinds[0])
    if not field.required:
        out["default"] = field.default
    out["title"] = title
    return dict(sorted(out.items()))
