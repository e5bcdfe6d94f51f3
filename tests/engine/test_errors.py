"""The exception tree: every RedlineError subclass in the package is drawn, where it is.

The drawing in ``redline.engine.errors``'s docstring is the one map of the errors
(STYLE 4); the classes live in their layers. Importing every module of the
package and walking ``__subclasses__()`` finds them all, so a new error that is
not drawn, or drawn under the wrong parent, fails here.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

import redline
from redline.engine import errors
from redline.engine.errors import RedlineError

_NODE = re.compile(r"^(?P<indent>(?:│   |    )*)(?:├── |└── )(?P<name>_?[A-Z]\w*)\s*(?P<note>.*)$")


def _import_everything() -> None:
    for module in pkgutil.walk_packages(redline.__path__, "redline."):
        if not module.name.endswith("__main__"):  # running the CLI is not importing it
            importlib.import_module(module.name)


def _subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        if sub.__module__.startswith("redline."):
            out |= {sub, *_subclasses(sub)}
    return out


def _drawing() -> dict[str, tuple[str, str]]:
    """Each drawn class -> (its parent in the drawing, the text beside it and below it)."""
    assert errors.__doc__ is not None
    lines = errors.__doc__.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("RedlineError"))
    drawn: dict[str, tuple[str, str]] = {}
    stack = ["RedlineError"]
    last = None
    for line in lines[start + 1 :]:
        text = line[4:]  # the docstring's indentation
        if not text.strip():
            break
        node = _NODE.match(text)
        if node is None:  # a note continued on the next line
            assert last is not None, line
            parent, note = drawn[last]
            drawn[last] = (parent, f"{note} {text.strip(' │')}")
            continue
        depth = len(node["indent"]) // 4
        del stack[depth + 1 :]
        assert node["name"] not in drawn, f"{node['name']} is drawn twice"
        drawn[node["name"]] = (stack[depth], node["note"])
        stack.append(node["name"])
        last = node["name"]
    return drawn


def test_every_redline_error_is_drawn_under_its_parent() -> None:
    _import_everything()
    drawn = _drawing()
    found = _subclasses(RedlineError)
    assert found, "no RedlineError subclass found"
    for cls in found:
        assert cls.__name__ in drawn, f"{cls.__module__}.{cls.__name__} is not in the drawing"
        parent, _ = drawn[cls.__name__]
        assert parent == cls.__base__.__name__, (
            f"{cls.__name__} is drawn under {parent} but derives from {cls.__base__.__name__}"
        )
    assert set(drawn) == {cls.__name__ for cls in found}, "the drawing shows a class that is gone"


def test_the_errors_redline_raises_across_layers_are_in_the_tree() -> None:
    _import_everything()
    names = {cls.__name__ for cls in _subclasses(RedlineError)}
    for name in (
        "MergeConflict",
        "HunkError",
        "PatchSyntaxError",
        "GitModeError",
        "SessionError",
        "CorruptNotes",
        "PolicyError",
        "ApprovalError",
        "InstallError",
        "DaemonError",
        "NoRepository",
        "RpcError",
    ):
        assert name in names, name


def test_exit_codes_follow_the_drawing() -> None:
    """1 unless the drawing says "exit 2" (usage and request errors), inherited below."""
    _import_everything()
    drawn = _drawing()
    assert RedlineError.exit_code == 1
    for cls in _subclasses(RedlineError):
        said = {n for n, (_, note) in drawn.items() if "exit 2" in note}
        two = any(base.__name__ in said for base in cls.__mro__)
        assert cls.exit_code == (2 if two else 1), cls.__name__
