"""A record behaves as the dataclass it was declared like: each check runs a record and its
dataclass twin side by side (``dataclasses`` is the oracle)."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any, ClassVar

import pytest

from redline.engine.records import (
    MISSING,
    FrozenRecordError,
    as_dataclass,
    defaults,
    field,
    names,
    record,
    replace,
)


@record(frozen=True)
class Point:
    """A point."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str = field(default="", repr=False)
    kind: ClassVar[str] = "point"


@dataclasses.dataclass(frozen=True)
class PointDC:
    """A point."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)
    note: str = dataclasses.field(default="", repr=False)
    kind: ClassVar[str] = "point"


@record
class Box:
    size: int
    items: list[int] = field(default_factory=list)

    def grow(self) -> None:
        self.size += 1


@dataclasses.dataclass
class BoxDC:
    size: int
    items: list[int] = dataclasses.field(default_factory=list)


def astuple(made: Point) -> tuple[Any, ...]:
    return (made.x, made.y, made.tags, made.note)


def _same(made: Any, twin: Any) -> None:
    assert repr(made).replace("Point(", "PointDC(").replace("Box(", "BoxDC(") == repr(twin)


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [((1,), {}), ((1, 2), {}), ((1,), {"tags": ("a",), "note": "n"}), ((), {"x": 3, "y": 4})],
)
def test_a_frozen_record_is_made_compared_and_hashed_as_its_dataclass(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    made, twin = Point(*args, **kwargs), PointDC(*args, **kwargs)
    _same(made, twin)
    assert made == Point(*args, **kwargs)
    assert made != Point(99) and Point(99) != made
    assert made != twin  # another class is never equal, as between dataclasses
    assert hash(made) == hash(Point(*args, **kwargs)) == hash(astuple(made))
    assert Point.__match_args__ == PointDC.__match_args__
    assert Point.kind == "point" and "kind" not in names(Point)


def test_a_frozen_record_refuses_every_assignment() -> None:
    made = Point(1)
    with pytest.raises(FrozenRecordError):
        made.x = 2  # type: ignore[misc]
    with pytest.raises(FrozenRecordError):
        del made.y  # type: ignore[misc]
    with pytest.raises(AttributeError):  # caught where FrozenInstanceError was
        made.x = 3  # type: ignore[misc]
    assert made.x == 1


def test_a_mutable_record_is_changed_in_place_and_not_hashable() -> None:
    box, twin = Box(1), BoxDC(1)
    box.grow()
    twin.size += 1
    _same(box, twin)
    assert box.items is not Box(1).items  # a factory's default, made per instance
    with pytest.raises(TypeError):
        hash(box)
    with pytest.raises(TypeError):
        hash(twin)


def test_init_refuses_what_the_dataclass_refuses() -> None:
    for kind in (Point, PointDC):
        with pytest.raises(TypeError):
            kind()  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            kind(1, z=2)  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            kind(1, 2, (), "", 5)  # type: ignore[call-arg]


def test_replace_defaults_and_names() -> None:
    made = Point(1, tags=("a",))
    assert replace(made, y=5) == Point(1, 5, ("a",))
    assert made == Point(1, tags=("a",))
    with pytest.raises(TypeError):
        replace(made, z=1)
    assert replace(PointDC(1), y=2) == PointDC(1, 2)  # a dataclass too
    assert names(Point) == ("x", "y", "tags", "note")
    assert defaults(Point) == {"x": MISSING, "y": 0, "tags": (), "note": ""}


def test_a_field_without_a_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="follows a default"):

        @record
        class Wrong:
            a: int = 0
            b: int  # type: ignore[misc]


def test_a_record_pickles() -> None:
    made = Point(1, 2, ("t",), "n")
    assert pickle.loads(pickle.dumps(made)) == made


def test_the_dataclass_twin_has_the_same_fields_defaults_and_doc() -> None:
    twin = as_dataclass(Point)
    assert dataclasses.is_dataclass(twin)
    assert twin.__name__ == "Point" and twin.__doc__ == "A point."
    got = [(f.name, f.default, f.default_factory, f.repr) for f in dataclasses.fields(twin)]
    want = [(f.name, f.default, f.default_factory, f.repr) for f in dataclasses.fields(PointDC)]
    assert got == want


@record(frozen=True)
class Labelled(Point):
    label: str = "here"


@dataclasses.dataclass(frozen=True)
class LabelledDC(PointDC):
    label: str = "here"


def test_a_subclass_s_fields_follow_its_bases() -> None:
    made, twin = Labelled(1, 2, label="there"), LabelledDC(1, 2, label="there")
    assert names(Labelled) == tuple(f.name for f in dataclasses.fields(LabelledDC))
    assert repr(made).replace("Labelled(", "LabelledDC(") == repr(twin)
    assert replace(made, x=5) == Labelled(5, 2, label="there")
    assert made != Point(1, 2)
