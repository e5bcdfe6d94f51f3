"""Records: classes of named fields, declared like dataclasses and made at a fraction of the cost.

``redline apply`` and the guard start a process for every edit and every commit, and
the classes those calls load were dataclasses: ``@dataclass`` compiles five or six
functions per class as its module is imported, and ``import dataclasses`` loads
``inspect`` — together about a third of an exact edit's start. :func:`record` reads
the same declaration (annotated fields, defaults, :func:`field` with ``default``,
``default_factory`` or ``repr=False``, ``ClassVar`` left out, ``frozen=True``) and
gives what the dataclass gave: the ``__init__`` (compiled on the class's first
instance, so a class never made costs nothing), ``__repr__``, ``__eq__`` (fields
compared in order, with an instance of the same class only), ``__hash__`` (from the
fields when frozen, none when not), ``__match_args__``, and for a frozen record a
:class:`FrozenRecordError` on any assignment. A subclass's fields follow its bases';
a method the class defines itself is kept. mypy reads a record as a dataclass
(``dataclass_transform``).

:func:`replace`, :func:`asdict` and :func:`defaults` stand for ``dataclasses.replace``,
``dataclasses.asdict`` and the defaults ``dataclasses.fields`` describes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T")
R = TypeVar("R")

_FIELDS = "__record_fields__"


class FrozenRecordError(AttributeError):
    """An assignment to a field of a frozen record (``dataclasses.FrozenInstanceError``)."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()  # no default
_FACTORY: Any = _Missing()  # the default is the factory's


class _Field:
    __slots__ = ("default", "default_factory", "name", "repr")

    def __init__(self, default: Any, default_factory: Any, repr: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.name = ""


@overload
def field(*, default: T, repr: bool = True) -> T: ...
@overload
def field(*, default_factory: Callable[[], T], repr: bool = True) -> T: ...
@overload
def field(*, repr: bool = True) -> Any: ...
def field(*, default: Any = MISSING, default_factory: Any = MISSING, repr: bool = True) -> Any:
    """A field's default (``default``, or made by ``default_factory`` for each instance)
    and whether ``repr`` shows it, as ``dataclasses.field`` takes them."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return _Field(default, default_factory, repr)


@overload
def record(cls: type[T], /) -> type[T]: ...
@overload
def record(*, frozen: bool = False) -> Callable[[type[T]], type[T]]: ...
@dataclass_transform(field_specifiers=(field,))
def record(cls: Any = None, /, *, frozen: bool = False) -> Any:
    """``cls`` made a record (see the module); ``@record(frozen=True)``: fields that
    cannot be assigned once made."""

    def make(cls: type[T]) -> type[T]:
        return _make(cls, frozen)

    return make if cls is None else make(cls)


def replace(obj: R, /, **changes: Any) -> R:
    """A copy of record ``obj`` with the fields named in ``changes`` set to their values
    (of a dataclass too: a request may be either)."""
    if hasattr(obj, "__dataclass_fields__"):
        import dataclasses

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    values = {f.name: getattr(obj, f.name) for f in getattr(obj, _FIELDS)}
    unknown = changes.keys() - values.keys()
    if unknown:
        raise TypeError(f"{type(obj).__qualname__} has no field {sorted(unknown)[0]!r}")
    values.update(changes)
    return type(obj)(**values)


def names(cls: type) -> tuple[str, ...]:
    """The names of the fields of record class ``cls``, in order."""
    return tuple(f.name for f in getattr(cls, _FIELDS))


def defaults(cls: type) -> dict[str, Any]:
    """Each field of record class ``cls`` and its default (a factory's is made now);
    :data:`MISSING` for a field without one."""
    return {
        f.name: f.default_factory() if f.default_factory is not MISSING else f.default
        for f in getattr(cls, _FIELDS)
    }


def _make(cls: type[T], frozen: bool) -> type[T]:
    own = cls.__dict__
    inherited: dict[str, _Field] = {}  # a record's fields come after its bases', as in dataclasses
    for base in reversed(cls.__mro__[1:]):
        inherited.update((f.name, f) for f in base.__dict__.get(_FIELDS, ()))
    fields: list[_Field] = []
    for name, annotation in own.get("__annotations__", {}).items():
        if _is_class_var(annotation):
            continue
        value = own.get(name, MISSING)
        made = value if isinstance(value, _Field) else _Field(value, MISSING, True)
        made.name = name
        fields.append(made)
        if isinstance(value, _Field):  # the class keeps a plain default, as a dataclass does
            if made.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, made.default)
    fields = [f for f in inherited.values() if f.name not in _own_names(fields)] + fields
    _check_order(cls, fields)
    values = tuple(f.name for f in fields)
    setattr(cls, _FIELDS, tuple(fields))
    _put(cls, "__match_args__", values)
    _put(cls, "__init__", _first_init(cls, fields, frozen))
    _put(cls, "__repr__", _repr)
    _put(cls, "__eq__", _eq)
    if frozen:
        _put(cls, "__hash__", _hash)
        _put(cls, "__setattr__", _frozen_setattr)
        _put(cls, "__delattr__", _frozen_delattr)
    elif own.get("__hash__") is None:
        type.__setattr__(cls, "__hash__", None)  # equal by value, changed in place: unhashable
    return cls


def _own_names(fields: list[_Field]) -> set[str]:
    return {f.name for f in fields}


def _is_class_var(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar", "t.ClassVar"))


def _check_order(cls: type, fields: list[_Field]) -> None:
    defaulted = False
    for f in fields:
        has_default = f.default is not MISSING or f.default_factory is not MISSING
        if defaulted and not has_default:
            raise TypeError(f"{cls.__qualname__}: non-default field {f.name!r} follows a default")
        defaulted = defaulted or has_default


def _put(cls: type, name: str, value: Any) -> None:
    """Set ``name`` on ``cls`` unless the class defines it itself."""
    if name not in cls.__dict__:
        setattr(cls, name, value)


def _first_init(cls: type, fields: list[_Field], frozen: bool) -> Callable[..., None]:
    """An ``__init__`` that compiles the record's own on the first instance and puts it
    in its place (one compile per class made, none for a class never made)."""

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        init = _compile_init(cls, fields, frozen)
        cls.__init__ = init  # type: ignore[misc]
        init(self, *args, **kwargs)

    return __init__


def _compile_init(cls: type, fields: list[_Field], frozen: bool) -> Callable[..., None]:
    space: dict[str, Any] = {"_FACTORY": _FACTORY, "_set": object.__setattr__}
    params, body = ["self"], []
    for index, f in enumerate(fields):
        param = f.name
        value = f.name
        if f.default_factory is not MISSING:
            space[f"_f{index}"] = f.default_factory
            param = f"{f.name}=_FACTORY"
            value = f"_f{index}() if {f.name} is _FACTORY else {f.name}"
        elif f.default is not MISSING:
            space[f"_d{index}"] = f.default
            param = f"{f.name}=_d{index}"
        params.append(param)
        if frozen:
            body.append(f"    _set(self, {f.name!r}, {value})")
        else:
            body.append(f"    self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, space)
    init: Callable[..., None] = space["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _values(obj: Any) -> tuple[Any, ...]:
    return tuple(getattr(obj, f.name) for f in getattr(obj, _FIELDS))


def _repr(self: Any) -> str:
    shown = ", ".join(
        f"{f.name}={getattr(self, f.name)!r}" for f in getattr(self, _FIELDS) if f.repr
    )
    return f"{type(self).__qualname__}({shown})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        return _values(self) == _values(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(_values(self))


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r}")


def as_dataclass(cls: type) -> type:
    """The dataclass twin of record class ``cls`` — the same name, fields, defaults and
    docstring, and the records its fields hold twinned too — for the readers that
    know dataclasses only (pydantic, for ``redline schema``)."""
    import dataclasses
    import types
    import typing

    twins: dict[type, type] = {}

    def twin(kind: type) -> type:
        if kind not in twins:
            hints = typing.get_type_hints(kind)
            made = []
            for f in getattr(kind, _FIELDS):
                spec: dict[str, Any] = {"repr": f.repr}
                if f.default is not MISSING:
                    spec["default"] = f.default
                if f.default_factory is not MISSING:
                    spec["default_factory"] = f.default_factory
                made.append((f.name, swap(hints[f.name]), dataclasses.field(**spec)))
            twins[kind] = dataclasses.make_dataclass(
                kind.__name__,
                made,
                namespace={"__doc__": kind.__doc__, "__module__": kind.__module__},
                frozen="__setattr__" in kind.__dict__,
            )
        return twins[kind]

    def swap(hint: Any) -> Any:
        if isinstance(hint, type) and _FIELDS in hint.__dict__:
            return twin(hint)
        args = typing.get_args(hint)
        origin = typing.get_origin(hint)
        if not args or origin is typing.Literal:
            return hint
        swapped = tuple(swap(arg) for arg in args)
        if origin is typing.Union or origin is types.UnionType:
            return typing.Union[swapped]  # noqa: UP007 (made at run time)
        return origin[swapped]

    return twin(cls)


def asdict(obj: Any) -> dict[str, Any]:
    """The fields of record (or dataclass) ``obj`` as a dict, what it holds copied: records
    and dataclasses as dicts, lists, tuples and dicts as new ones, anything else deep-copied
    (``dataclasses.asdict``, for both kinds)."""
    plain: dict[str, Any] = _plain(obj)
    return plain


def _plain(value: Any) -> Any:
    kind = type(value)
    if hasattr(kind, _FIELDS):
        return {f.name: _plain(getattr(value, f.name)) for f in getattr(kind, _FIELDS)}
    if hasattr(kind, "__dataclass_fields__"):
        import dataclasses

        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return kind(*[_plain(item) for item in value])
    if isinstance(value, list | tuple):
        return kind(_plain(item) for item in value)
    if isinstance(value, dict):
        return kind((_plain(key), _plain(item)) for key, item in value.items())
    import copy

    return copy.deepcopy(value)
