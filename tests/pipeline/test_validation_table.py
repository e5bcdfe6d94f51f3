"""One table of validation cases, the same verdicts through every front end.

Every case of :data:`CASES` is sent through every front end (``front_ends``):
``redline apply`` embedded and ``--session``, a raw socket client of the daemon,
and ``redline mcp`` embedded and in git mode. Validation is asked for by the
request (``validate: true``) or by the policy's ``[[validate]]`` paths (committed
on main, and the folder's file in embedded mode). Only errors an edit introduces
count; a refused change writes nothing and names the parser's message, line and
column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from front_ends import FRONT_ENDS

from gitmode_fixtures import GitMode

POLICY = '[[validate]]\npaths = ["conf/*.json"]\n'
FILES = {
    "app.py": "def total(items):\n    return sum(items)\n",
    "conf/settings.json": '{"debug": false}\n',
    "conf/other.txt": "plain\n",
    "old.py": "def broken(:\n    pass\nVALUE = 1\n",
}


@dataclass(frozen=True)
class Case:
    id: str
    request: dict[str, Any]
    status: str
    message: str = ""  # validation_failed: the parser's message, as reported
    line: int | None = None
    untouched: str | None = None  # validation_failed: the file that must be as it was


CASES = [
    Case(
        "asked-by-the-request",
        {"tool": "edit", "path": "app.py", "old_string": "sum(items)", "new_string": "sum(items",
         "validate": True},
        "validation_failed",
        "'(' was never closed",
        2,
        "app.py",
    ),
    Case(
        "asked-by-the-policy",
        {"tool": "write", "path": "conf/settings.json", "content": '{"debug": true,}\n'},
        "validation_failed",
        "",
        1,
        "conf/settings.json",
    ),
    Case(
        "a-path-the-policy-does-not-name",
        {"tool": "write", "path": "conf/other.txt", "content": "{not json\n"},
        "applied",
    ),
    Case(
        "an-error-the-file-had-already",
        {"tool": "edit", "path": "old.py", "old_string": "VALUE = 1", "new_string": "VALUE = 2",
         "validate": True},
        "applied",
    ),
    Case(
        "a-valid-change",
        {"tool": "write", "path": "conf/new.json", "content": '{"debug": true}\n'},
        "applied",
    ),
]  # fmt: skip


@pytest.fixture
def validated(gm: GitMode) -> GitMode:
    """``gm`` with the files of the table and the policy committed on main."""
    for name, content in FILES.items():
        (gm.repo / name).parent.mkdir(parents=True, exist_ok=True)
        (gm.repo / name).write_text(content)
    (gm.repo / ".redline.toml").write_text(POLICY)
    gm.git("add", "-A")
    gm.git("commit", "-q", "-m", "files to validate")
    return gm


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_every_front_end_gives_the_tables_verdicts(validated: GitMode, front_end: str) -> None:
    target = FRONT_ENDS[front_end](validated)
    results = target.send([case.request for case in CASES])
    assert len(results) == len(CASES), results
    for case, result in zip(CASES, results, strict=True):
        assert result["status"] == case.status, (case.id, result["error"])
        if case.status != "validation_failed":
            continue
        [error, *_] = result["validation"]["errors"]
        assert case.message in error["message"], (case.id, error)
        assert error["line"] == case.line and error["column"] >= 1, (case.id, error)
        assert case.untouched is not None
        assert (target.root / case.untouched).read_text() == FILES[case.untouched], case.id
    assert (target.root / "conf" / "other.txt").read_text() == "{not json\n"
    assert (target.root / "conf" / "new.json").read_text() == '{"debug": true}\n'
    assert (target.root / "old.py").read_text() == FILES["old.py"].replace("VALUE = 1", "VALUE = 2")
