"""Requests in their common shapes: read as the wire format reads them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from redline.engine.errors import RequestError
from redline.tools import request, schema

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


def outcome(parse: Any, obj: Any, default: float | None) -> tuple[str, Any]:
    try:
        return "ok", parse(obj, default)
    except RequestError as exc:
        return "error", (str(exc), exc.field)


@given(requests(), st.sampled_from([None, 0.5]))
def test_same_answer_as_the_wire_format(obj: Any, default: float | None) -> None:
    got = outcome(request.parse_request, obj, default)
    assert got == outcome(schema.parse_request, obj, default)
    if got[0] == "ok":  # the same types, not only equal values (1 and 1.0, True and 1)
        assert repr(got[1]) == repr(outcome(schema.parse_request, obj, default)[1])


def test_a_batch_and_a_patch() -> None:
    batch = {"tool": "edit", "path": "a", "edits": [{"old_string": "a", "new_string": "b"}]}
    patch = {"tool": "apply_patch", "patch": "*** Begin Patch\n*** End Patch", "turn": 3}
    for obj in (batch, patch):
        assert request.parse_request(obj) == schema.parse_request(obj)


def test_a_patch_sent_as_input_names_the_freeform_setting() -> None:
    """A gateway that downgraded the freeform tool sends ``{"input": ...}``: whichever
    caller reads it (redline apply, the daemon) answers with the setting to change."""
    obj = {"tool": "apply_patch", "input": "*** Begin Patch\n*** End Patch", "model": "gpt-5"}
    for parse in (request.parse_request, schema.parse_request):
        with pytest.raises(RequestError) as caught:
            parse(obj)
        assert caught.value.field == "input"
        error = str(caught.value)
        assert error.startswith('apply_patch arguments arrived as {"input": "..."}')
        assert '[compat.models."gpt-5".apply_patch] freeform = false' in error
    # With the patch given too, it is an ordinary unknown field.
    with pytest.raises(RequestError, match="input: Extra inputs are not permitted"):
        schema.parse_request({**obj, "patch": "*** Begin Patch\n*** End Patch"})
