"""Requests in their common shapes, read without pydantic (it costs ~70 ms to import).

An embedded ``redline apply`` starts for every edit a hook or script sends. A
request made only of the fields and types the wire format allows is turned into
the engine's request here; anything else, including every request that is
wrong, goes to :func:`redline.tools.schema.parse_request`, so the answer, and
each error's wording, is the wire format's own.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from redline.engine.edit import DEFAULT_THRESHOLD, EditItem, EditRequest

if TYPE_CHECKING:
    from redline.engine.requests import Request

_EDIT_FIELDS = frozenset(
    [
        "tool",
        "path",
        "old_string",
        "new_string",
        "replace_all",
        "edits",
        "threshold",
        "turn",
        "model",
        "validate",
    ]
)
_PATCH_FIELDS = frozenset(["tool", "patch", "turn", "model", "validate"])
_FILE_FIELDS = {
    "write": frozenset(["tool", "path", "content", "line_ending", "turn", "model", "validate"]),
    "delete": frozenset(["tool", "path", "turn", "model"]),
    "read": frozenset(["tool", "path", "offset", "limit", "turn", "model"]),
}
_ITEM_FIELDS = frozenset(["old_string", "new_string", "replace_all"])


class _Unusual(Exception):
    """The request is not in a common shape: the wire format reads it."""


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


def parse_request(obj: Any, default_threshold: float | None = None) -> tuple[Request, object]:
    """As :func:`redline.tools.schema.parse_request`, which it calls for anything unusual."""
    try:
        return _common(obj, default_threshold)
    except _Unusual:
        from redline.tools.schema import parse_request as validate

        return validate(obj, default_threshold)


def _common(obj: Any, default_threshold: float | None) -> tuple[Request, object]:
    if type(obj) is not dict or bad_text(obj) is not None:
        raise _Unusual
    tool = obj.get("tool")
    if tool == "apply_patch" and obj.keys() <= _PATCH_FIELDS:
        from redline.engine.patch import PatchRequest  # the patch machinery, only for patches

        _optional(obj, "model", str)
        validate = bool(_optional(obj, "validate", bool))
        return PatchRequest(_text(obj.get("patch")), validate), _turn(obj)
    if type(tool) is str and tool in _FILE_FIELDS and obj.keys() <= _FILE_FIELDS[tool]:
        return _file_request(obj, tool), _turn(obj)
    if tool != "edit" or not obj.keys() <= _EDIT_FIELDS:
        raise _Unusual
    path = _path(obj)
    _optional(obj, "model", str)
    turn = _turn(obj)
    threshold = _threshold(obj) or default_threshold or DEFAULT_THRESHOLD
    validate = bool(_optional(obj, "validate", bool))
    old = _optional(obj, "old_string", str)
    new = _optional(obj, "new_string", str)
    replace_all = _optional(obj, "replace_all", bool)
    edits = obj.get("edits")
    if edits is not None:
        if old is not None or new is not None or replace_all is not None:
            raise _Unusual  # the wire format says which fields to drop
        items = tuple(_item(e) for e in _items(edits))
        return EditRequest(path, items, batch=True, threshold=threshold, validate=validate), turn
    if old is None or new is None:
        raise _Unusual  # the wire format names the missing field
    item = EditItem(old, new, bool(replace_all))
    return EditRequest(path, (item,), threshold=threshold, validate=validate), turn


def _file_request(obj: dict[str, Any], tool: str) -> Request:
    path = _path(obj)
    _optional(obj, "model", str)
    if tool == "read":
        from redline.engine.read import DEFAULT_LIMIT, ReadRequest

        offset = _optional(obj, "offset", int)
        limit = _optional(obj, "limit", int)
        if (offset is not None and offset < 1) or (limit is not None and limit < 1):
            raise _Unusual  # the wire format says which bound
        return ReadRequest(path, offset or 1, limit or DEFAULT_LIMIT)
    from redline.engine.write import DeleteRequest, WriteRequest

    if tool == "delete":
        return DeleteRequest(path)
    line_ending = _optional(obj, "line_ending", str)
    if line_ending not in (None, "lf", "crlf"):
        raise _Unusual
    validate = bool(_optional(obj, "validate", bool))
    return WriteRequest(path, _text(obj.get("content")), line_ending, validate)


def _path(obj: dict[str, Any]) -> str:
    path = _text(obj.get("path"))
    if not path or not (path.isascii() or _encodable(path)):
        raise _Unusual  # the wire format's length check refuses a lone surrogate
    return path


def _text(value: Any) -> str:
    if type(value) is not str:
        raise _Unusual
    return value


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _optional(obj: dict[str, Any], name: str, kind: type) -> Any:
    value = obj.get(name)
    if value is not None and type(value) is not kind:
        raise _Unusual
    return value


def _turn(obj: dict[str, Any]) -> object:
    turn = obj.get("turn")
    if turn is not None and type(turn) not in (str, int):
        raise _Unusual
    return turn


def _threshold(obj: dict[str, Any]) -> float | None:
    value = obj.get("threshold")
    if value is None:
        return None
    if type(value) not in (float, int) or not 0.0 < value <= 1.0:
        raise _Unusual
    return float(value)


def _items(edits: Any) -> list[Any]:
    if type(edits) is not list or not edits:
        raise _Unusual
    return edits


def _item(item: Any) -> EditItem:
    if type(item) is not dict or not item.keys() <= _ITEM_FIELDS:
        raise _Unusual
    replace_all = item.get("replace_all", False)
    if type(replace_all) is not bool:
        raise _Unusual
    return EditItem(_text(item.get("old_string")), _text(item.get("new_string")), replace_all)
