"""tools.request: the one reader of the request format, and its JSON Schema.

Every front end reads requests here. Its error texts are the format's contract
(a model reads them, and they are the words pydantic gave when it read the
format): the table below pins them. The JSON Schema is drawn from the same table
of fields as the reading, and a request the schema describes is one the reader
takes.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from redline.engine.edit import EditRequest
from redline.engine.errors import RequestError
from redline.engine.patch import PatchRequest
from redline.engine.read import ReadRequest
from redline.engine.write import DeleteRequest, WriteRequest
from redline.tools.request import TOOLS, parse_request, request_schema

TEXT = st.sampled_from(["", "a", "src/app.py", "x = 1\n", "\ud800", "é", "\x00"])
VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, 2, -5, 10**30, 0.0, 0.5, 1.0, 1.5, 5e-324, float("nan"), "0.5"]),
    TEXT,
    st.lists(st.none(), max_size=1),
)
GOOD_ITEM = st.fixed_dictionaries(
    {"old_string": TEXT, "new_string": TEXT}, optional={"replace_all": st.booleans()}
)
ITEM = st.one_of(
    GOOD_ITEM,
    st.dictionaries(
        st.sampled_from(["old_string", "new_string", "replace_all", "other"]), VALUE, max_size=4
    ),
)
OPTIONAL = {
    "threshold": st.one_of(VALUE, st.floats(0.01, 1.0)),
    "turn": st.one_of(VALUE, st.integers()),
    "model": VALUE,
    "validate": VALUE,
}
EDIT = st.fixed_dictionaries(
    {"tool": st.just("edit"), "path": TEXT, "old_string": TEXT, "new_string": TEXT},
    optional={"replace_all": VALUE, **OPTIONAL},
)
BATCH = st.fixed_dictionaries(
    {"tool": st.just("edit"), "path": TEXT, "edits": st.lists(ITEM, max_size=3)},
    optional=OPTIONAL,
)
PATCH = st.fixed_dictionaries(
    {"tool": st.just("apply_patch"), "patch": TEXT},
    optional={"turn": OPTIONAL["turn"], "model": VALUE, "validate": VALUE},
)
FIELDS = [
    "tool", "path", "old_string", "new_string", "replace_all", "edits", "threshold", "turn",
    "model", "patch", "validate", "extra",
]  # fmt: skip


@st.composite
def requests(draw: st.DrawFn) -> Any:
    """An edit, a batch or a patch, often with one field changed, added or removed."""
    obj: Any = draw(st.one_of(EDIT, BATCH, PATCH))
    change = draw(st.sampled_from(["none", "none", "set", "drop", "other"]))
    name = draw(st.sampled_from(FIELDS))
    if change == "set":
        obj[name] = draw(st.one_of(VALUE, st.lists(ITEM, max_size=2), st.sampled_from(["edit"])))
    elif change == "drop":
        obj.pop(name, None)
    elif change == "other":
        obj = draw(st.one_of(VALUE, st.lists(VALUE, max_size=2)))
    return obj


E = (
    " Expected e.g. "
    + '{"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}'
)
W = " Expected e.g. " + '{"tool": "write", "path": "src/app.py", "content": "..."}'
R = " Expected e.g. " + '{"tool": "read", "path": "src/app.py", "offset": 1, "limit": 200}'
P = " Expected e.g. " + '{"tool": "apply_patch", "patch": "*** Begin Patch\\n...\\n*** End Patch"}'
D = " Expected e.g. " + '{"tool": "delete", "path": "src/old.py"}'
ED = {"tool": "edit", "path": "a", "old_string": "a", "new_string": "b"}

# (request, the whole error) — the texts the format has always answered with.
ERRORS: list[tuple[Any, str]] = [
    ({**ED, "old_string": 1}, "invalid request: old_string: Input should be a valid string." + E),
    (
        {**ED, "x": 1, "y": 2},
        "invalid request: x: Extra inputs are not permitted; y: Extra inputs are not permitted."
        + E,
    ),
    (
        {"x": 1, **ED, "path": 1},
        "invalid request: path: Input should be a valid string; x: Extra inputs are not permitted."
        + E,
    ),
    (
        {**ED, "threshold": "abc"},
        "invalid request: threshold: Input should be a valid number, unable to parse string as a number."
        + E,
    ),
    ({**ED, "threshold": 0}, "invalid request: threshold: Input should be greater than 0." + E),
    (
        {**ED, "threshold": -math.inf},
        "invalid request: threshold: Input should be greater than 0." + E,
    ),
    (
        {**ED, "threshold": math.nan},
        "invalid request: threshold: Input should be less than or equal to 1." + E,
    ),
    (
        {**ED, "threshold": 10**30},
        "invalid request: threshold: Input should be less than or equal to 1." + E,
    ),
    (
        {**ED, "threshold": 10**400},
        "invalid request: threshold: Input should be a valid number." + E,
    ),
    ({**ED, "threshold": [1]}, "invalid request: threshold: Input should be a valid number." + E),
    (
        {**ED, "turn": 1.5},
        "invalid request: turn.str: Input should be a valid string; turn.int: Input should be a valid integer."
        + E,
    ),
    (
        {**ED, "turn": True},
        "invalid request: turn.str: Input should be a valid string; turn.int: Input should be a valid integer."
        + E,
    ),
    ({**ED, "model": 1}, "invalid request: model: Input should be a valid string." + E),
    ({**ED, "validate": 1}, "invalid request: validate: Input should be a valid boolean." + E),
    (
        {"tool": "edit", "path": "a", "edits": []},
        "invalid request: edits: List should have at least 1 item after validation, not 0." + E,
    ),
    (
        {"tool": "edit", "path": "a", "edits": "x"},
        "invalid request: edits: Input should be a valid list." + E,
    ),
    (
        {"tool": "edit", "path": "a", "edits": [1]},
        "invalid request: edits.0: Input should be a valid dictionary or instance of EditItemModel."
        + E,
    ),
    (
        {"tool": "edit", "path": "a", "edits": [{"z": 1, "old_string": 1}], "turn": []},
        "invalid request: edits.0.old_string: Input should be a valid string; edits.0.new_string: Field required; edits.0.z: Extra inputs are not permitted; turn.str: Input should be a valid string; turn.int: Input should be a valid integer."
        + E,
    ),
    (
        {
            "tool": "edit",
            "path": "a",
            "edits": [{"old_string": "a", "new_string": "b", "replace_all": None}],
        },
        "invalid request: edits.0.replace_all: Input should be a valid boolean." + E,
    ),
    ({"tool": "write", "path": "a"}, "invalid request: content: Field required." + W),
    (
        {"tool": "write", "path": "a", "content": None},
        "invalid request: content: Input should be a valid string." + W,
    ),
    (
        {"tool": "write", "path": "a", "content": "x", "line_ending": "cr"},
        "invalid request: line_ending: Input should be 'lf' or 'crlf'." + W,
    ),
    (
        {"tool": "read", "path": "a", "offset": 0},
        "invalid request: offset: Input should be greater than or equal to 1." + R,
    ),
    (
        {"tool": "read", "path": "a", "offset": None, "limit": "3"},
        "invalid request: offset: Input should be a valid integer; limit: Input should be a valid integer."
        + R,
    ),
    (
        {"tool": "read", "path": "a", "limit": 1.5},
        "invalid request: limit: Input should be a valid integer." + R,
    ),
    (
        {"tool": "delete", "path": "a", "content": "x"},
        "invalid request: content: Extra inputs are not permitted." + D,
    ),
    ({"tool": "apply_patch"}, "invalid request: patch: Field required." + P),
    (
        {"tool": "apply_patch", "patch": 1, "path": "x"},
        "invalid request: patch: Input should be a valid string; path: Extra inputs are not permitted."
        + P,
    ),
    (
        {"tool": "edit", "path": "a"},
        'missing field old_string and new_string; an edit needs old_string and new_string (or a list of edits), e.g. {"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}',
    ),
    (
        {
            "tool": "edit",
            "path": "a",
            "edits": [{"old_string": "a", "new_string": "b"}],
            "old_string": "x",
        },
        "give either old_string/new_string/replace_all or edits, not both",
    ),
    (
        {"tool": "edit", "path": "", "old_string": "a", "new_string": "b"},
        "path is empty; name a file relative to the root",
    ),
    (
        {"tool": "nope"},
        'unknown tool \'nope\'; use "edit", "apply_patch", "write", "delete" or "read", e.g. {"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}',
    ),
    (
        [1],
        'a request must be a JSON object, like {"tool": "edit", "path": "src/app.py", "old_string": "...", "new_string": "..."}',
    ),
]


@pytest.mark.parametrize(("obj", "error"), ERRORS)
def test_every_error_says_what_the_format_always_said(obj: Any, error: str) -> None:
    with pytest.raises(RequestError) as caught:
        parse_request(obj)
    assert str(caught.value) == error


@pytest.mark.parametrize(
    ("threshold", "read"),
    [(" 0.5", 0.5), ("1e-1", 0.1), (".5", 0.5), ("+0.5", 0.5), ("1E0", 1.0), (True, 1.0), (1, 1.0)],
)
def test_a_threshold_is_read_as_a_number(threshold: Any, read: float) -> None:
    request, _ = parse_request({**ED, "threshold": threshold})
    assert isinstance(request, EditRequest)
    assert type(request.threshold) is float and request.threshold == read


def test_each_tool_is_read_into_its_engine_request() -> None:
    kinds = {
        "edit": (ED, EditRequest),
        "apply_patch": (
            {"tool": "apply_patch", "patch": "*** Begin Patch\n*** End Patch", "turn": 3},
            PatchRequest,
        ),
        "write": (
            {"tool": "write", "path": "a", "content": "x", "line_ending": "crlf"},
            WriteRequest,
        ),
        "delete": ({"tool": "delete", "path": "a"}, DeleteRequest),
        "read": ({"tool": "read", "path": "a", "offset": 5}, ReadRequest),
    }
    assert set(kinds) == set(TOOLS)
    for obj, kind in kinds.values():
        request, turn = parse_request(obj)
        assert type(request) is kind
        assert turn == obj.get("turn")
    read, _ = parse_request(kinds["read"][0])
    assert (read.offset, read.limit) == (5, 2000)
    batch, _ = parse_request(
        {"tool": "edit", "path": "a", "edits": [{"old_string": "a", "new_string": "b"}]}, 0.5
    )
    assert isinstance(batch, EditRequest) and batch.batch and batch.threshold == 0.5


@given(requests(), st.sampled_from([None, 0.5]))
def test_a_request_is_read_or_refused_and_the_schema_says_which(
    obj: Any, default: float | None
) -> None:
    """Nothing but a RequestError escapes; and a request the schema describes is one the
    reader takes (the schema is drawn from the reader's own table) — unless its text holds
    what no text holds, or it is an edit that does not say either old and new strings or
    a list of edits (rules a JSON Schema does not draw)."""
    try:
        parse_request(obj, default)
    except RequestError:
        read = False
    else:
        read = True
    if _described(obj) and _clean(obj) and _either_or(obj):
        assert read, obj


def _clean(value: Any) -> bool:
    """Whether every text in ``value`` is text (no NUL, no lone surrogate)."""
    if isinstance(value, str):
        return "\x00" not in value and not any("\ud800" <= c <= "\udfff" for c in value)
    if isinstance(value, list):
        return all(_clean(v) for v in value)
    if isinstance(value, dict):
        return all(_clean(v) for v in value.values())
    return True


def _either_or(obj: dict[str, Any]) -> bool:
    if obj.get("tool") != "edit":
        return True
    single = [obj.get(n) for n in ("old_string", "new_string", "replace_all")]
    if obj.get("edits") is not None:
        return all(v is None for v in single)
    return single[0] is not None and single[1] is not None


@functools.cache
def _request_validator() -> jsonschema.protocols.Validator:
    """The request schema's validator, its schema checked once (``jsonschema.validate``
    would check the schema again, and build a new validator, for every example)."""
    schema = request_schema()
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _described(obj: Any) -> bool:
    return _request_validator().is_valid(obj)


def test_a_patch_sent_as_input_names_the_freeform_setting() -> None:
    """A gateway that downgraded the freeform tool sends ``{"input": ...}``: whichever
    caller reads it (redline apply, the daemon) answers with the setting to change."""
    obj = {"tool": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "model": "gpt-5"}
    with pytest.raises(RequestError) as caught:
        parse_request(obj)
    assert caught.value.field == "input"
    error = str(caught.value)
    assert error.startswith('apply_patch arguments arrived as {"input": "..."}')
    assert '[compat.models."gpt-5".apply_patch] freeform = false' in error
    # With the patch given too, it is an ordinary unknown field.
    with pytest.raises(RequestError, match="input: Extra inputs are not permitted"):
        parse_request({**obj, "patch": "*** Begin Patch\n*** End Patch"})


def test_a_whole_number_written_with_a_point_is_the_integer_the_schema_allows() -> None:
    # JSON Schema's "integer" takes 5.0 (a number with no fractional part), so the reader
    # does too; 5.5 is still refused.
    read, turn = parse_request({"tool": "read", "path": "a.py", "offset": 5.0, "turn": 0.0})
    assert (read.offset, turn) == (5, 0)
    assert type(read.offset) is int and type(turn) is int
    with pytest.raises(RequestError, match="valid integer"):
        parse_request({"tool": "read", "path": "a.py", "offset": 5.5})
