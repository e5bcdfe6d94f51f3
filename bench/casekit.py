"""The case type and the helpers every category builder shares."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from mutations import Mod, touched
from redline.engine.edit import EditItem, EditRequest
from sources import Source
from textmodel import Doc


@dataclass(frozen=True)
class Case:
    """One edit request on one file, and what a careful tool does with it.

    ``expected`` holds the file's exact new bytes when the edit should apply;
    otherwise it is None and ``refuse`` lists the acceptable refusal statuses
    (empty: any status other than ``applied``, with nothing written).
    """

    name: str
    category: str
    data: bytes
    request: EditRequest
    expected: bytes | None
    refuse: frozenset[str] = frozenset()
    note: str = ""
    span: tuple[int, int] | None = None  # 0-based lines [i, j) of the edited block


Attempt = Callable[[Source, random.Random], Case | None]


def collect(
    category: str, n: int, sources: list[Source], rng: random.Random, attempt: Attempt
) -> list[Case]:
    """Up to ``n`` cases, visiting the sources round-robin so files vary."""
    order = list(sources)
    rng.shuffle(order)
    cases: list[Case] = []
    names: set[str] = set()
    for step in range(n * 60):
        if len(cases) >= n:
            break
        case = attempt(order[step % len(order)], rng)
        if case is None or case.name in names:
            continue
        names.add(case.name)
        cases.append(case)
    if len(cases) < n:
        raise RuntimeError(f"{category}: only {len(cases)} of {n} cases could be built")
    return cases


def case_name(category: str, src: Source, span: tuple[int, int] | None, note: str) -> str:
    """``category:file:first-last note`` (1-based lines of the original file)."""
    where = src.path.rsplit("/", 1)[-1]
    if span is not None:
        where += f":{span[0] + 1}-{span[1]}"
    return f"{category}:{where}" + (f" {note}" if note else "")


def single_request(path: str, old: str, new: str, replace_all: bool = False) -> EditRequest:
    return EditRequest(path=path, edits=(EditItem(old, new, replace_all),))


def block_case(
    category: str,
    src: Source,
    file: Doc,
    span: tuple[int, int],
    old_lines: list[str],
    new_lines: list[str],
    expected_lines: list[str],
    note: str = "",
) -> Case | None:
    """An edit of lines ``span`` of ``file``; expected = those lines replaced by position."""
    old, new = "\n".join(old_lines), "\n".join(new_lines)
    if old == new:
        return None
    i, j = span
    return Case(
        name=case_name(category, src, (i, j), note),
        category=category,
        data=file.encode(),
        request=single_request(src.path, old, new),
        expected=file.replace_block(i, j, expected_lines).encode(),
        note=note,
        span=span,
    )


def refusal_case(
    category: str,
    name: str,
    src: Source,
    file: Doc,
    request: EditRequest,
    refuse: frozenset[str],
    note: str = "",
) -> Case:
    return Case(name, category, file.encode(), request, None, refuse, note)


def same_touch(mod: Mod, a: list[str], b: list[str]) -> bool:
    """The edit rewrites the same lines of both views (and applies to both)."""
    try:
        return touched(mod, a) == touched(mod, b) and len(mod.apply(a)) == len(mod.apply(b))
    except ValueError:
        return False


def echo(mod: Mod, old_lines: list[str]) -> list[str]:
    """new_string as the agent writes it: its own old lines with the edit applied."""
    return mod.apply(old_lines)


def clean_changed(mod: Mod, old_lines: list[str], clean_lines: list[str]) -> list[str]:
    """new_string where the lines the edit rewrites are typed correctly (from ``clean_lines``)
    and every other line is the agent's old line, as it wrote it in old_string."""
    hit = touched(mod, clean_lines)
    mixed = [clean_lines[k] if k in hit else old_lines[k] for k in range(len(old_lines))]
    return mod.apply(mixed)
