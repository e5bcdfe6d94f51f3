"""A repository whose edits, approvals, refusals and later changes are known, for the
``redline stats`` tests.

Built through a real daemon (``redline apply --session`` subprocesses on a real
socket), approved with ``redline approve``, continued with plain ``git`` commits:
every figure ``redline stats`` prints can be worked out from the plan below.

History (each commit's distance after E1 in brackets)::

    main: initial (policy: review edits of migrations/** that are not exact)
    s1:   E1 exact b.py (+2)        [0]
          E2 whitespace util.py (+1) [1]
          E3 fuzzy app.py (+1)       [2]
          E4 fuzzy migration (+2), flagged, later approved [3]
          E5 apply_patch exact c.txt (+2) [4]
          E6 exact c.txt (+1): rewrites E5's "BETA" [5]
          (a no_match and an ambiguous request, and a whitespace edit of util.py
          that would not parse: logged, no commit)
    main: fast-forward to E6, then
          L1 rewrites E1's "OTHER = 3"         [6]
          L2 rewrites E3's inserted line       [7]
          L3 rewrites E4's "created_at" line   [8]
          L4 policy action = "reject"          [9]
    s2 (from L4):
          E7 exact b.py (+1): rewrites E1's "VALUE = 2" [10]
          (a fuzzy edit of the migration: rejected; an exact edit of b.py that would
          not parse: validation_failed; both logged)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmode_fixtures import GitMode, git_mode
from support.requests import edit

MIGRATION = "migrations/001_users.sql"
APP = "src/app.py"
UTIL = "pkg/util.py"
POLICY = '[guard]\naction = "review"\n\n[[guard.protect]]\npaths = ["migrations/**"]\nrequire = "exact"\n'
FILES: dict[str, str | bytes] = {
    MIGRATION: (
        "CREATE TABLE users (\n"
        "    id INTEGER PRIMARY KEY,\n"
        "    name TEXT NOT NULL,\n"
        "    email TEXT\n"
        ");\n"
    ),
    APP: (
        "def main():\n"
        "    config = load_config()\n"
        "    server = make_server(config)\n"
        "    server.serve_forever()\n"
    ),
    UTIL: "def helper(x):\n    if x:\n        return 1\n    return 0\n",
    "b.py": "VALUE = 1\n",
    "c.txt": "alpha\nbeta\ngamma\n",
    ".redline.toml": POLICY,
}


E1 = edit("b.py", "VALUE = 1\n", "VALUE = 2\nOTHER = 3\n")
E2 = edit(UTIL, "if x:\n  return 1\n", "if x:\n  return 2\n")  # indentation differs
E3 = edit(
    APP,
    "    config = load_confg()\n    server = make_server(config)\n    server.serve_forever()\n",
    "    config = load_confg()\n"
    "    server = make_server(config, port=8080)\n"
    "    server.serve_forever()\n",
)
E4 = edit(
    MIGRATION,
    "    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL,\n    email TEXT\n",
    "    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL,\n"
    "    email TEXT UNIQUE,\n    created_at TIMESTAMP\n",
)
E5 = {
    "tool": "apply_patch",
    "patch": "*** Begin Patch\n*** Update File: c.txt\n@@\n alpha\n-beta\n+BETA\n+delta\n gamma\n"
    "*** End Patch\n",
}
E6 = edit("c.txt", "BETA\n", "Beta\n")
NO_MATCH = edit("c.txt", "nothing like this\n", "x\n")
AMBIGUOUS = edit("c.txt", "a", "b")
E7 = edit("b.py", "VALUE = 2\n", "VALUE = 5\n")
# Edits asking for validation that would leave their file unparseable.
BROKEN_WHITESPACE = {
    **edit(UTIL, "if x:\n  return 2\n", "if x:\n  return (2\n"),  # indentation differs
    "validate": True,
}
BROKEN_EXACT = {**edit("b.py", "VALUE = 5\n", "VALUE = (5\n"), "validate": True}
REJECTED = edit(
    MIGRATION,
    "    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL,\n",
    "    id INTEGER PRIMARY KY,\n    name TEXT NOT NULL DEFAULT '',\n",
)


@dataclass
class Scenario:
    mode: GitMode
    results: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def repo(self) -> Path:
        return self.mode.repo

    def commit(self, name: str) -> str:
        [commit] = self.results[name]["commits"]
        return str(commit["commit"])

    def edit_id(self, name: str) -> str:
        [commit] = self.results[name]["commits"]
        return str(commit["edit"])

    def confidence(self, name: str) -> float:
        return float(self.results[name]["confidence"])


def change(mode: GitMode, path: str, old: str, new: str, message: str) -> None:
    """A plain git commit on main replacing ``old`` with ``new`` in ``path``."""
    file = mode.repo / path
    text = file.read_text()
    assert old in text, (path, old, text)
    file.write_text(text.replace(old, new, 1))
    mode.git("commit", "-q", "-am", message)


@contextlib.contextmanager
def built(base: Path, home: Path) -> Iterator[Scenario]:
    """The scenario of the module docstring; the daemon is stopped once it is built."""
    with git_mode(base, home, FILES) as mode:
        s = Scenario(mode)
        cli = mode.cli
        cli.open_session("s1")
        for name, request in [("E1", E1), ("E2", E2), ("E3", E3), ("E4", E4), ("E5", E5),
                              ("E6", E6), ("no_match", NO_MATCH), ("ambiguous", AMBIGUOUS),
                              ("broken_whitespace", BROKEN_WHITESPACE)]:  # fmt: skip
            _, s.results[name] = cli.apply("s1", request)
        cli.ok("approve", "--repo", str(mode.repo), s.edit_id("E4"))
        mode.git("merge", "-q", "--ff-only", "redline/s1")
        change(mode, "b.py", "OTHER = 3", "OTHER = 4", "L1")
        change(mode, APP, "make_server(config, port=8080)", "make_server(config, port=9090)", "L2")
        change(mode, MIGRATION, "created_at TIMESTAMP", "created_at TIMESTAMP NOT NULL", "L3")
        change(mode, ".redline.toml", 'action = "review"', 'action = "reject"', "L4")
        cli.open_session("s2")
        for name, request in [
            ("E7", E7),
            ("rejected", REJECTED),
            ("broken_exact", BROKEN_EXACT),
        ]:
            _, s.results[name] = cli.apply("s2", request)
        cli.stop()
        yield s
