"""One table of ``[permission]`` cases, the same verdicts through every front end.

Every case of :data:`CASES` is sent through every front end (``front_ends``):
``redline apply`` embedded and ``--session``, a raw socket client of the daemon
(no front end stands in front of it: the daemon's own check is all there is),
and ``redline mcp`` embedded and in git mode, with a client that cannot ask a
person.

The rules are committed on main (git mode reads them there) and are the files
of the folder (embedded); the user's own config denies one path the
repository's file allows. Each refusal names its rule and leaves the file as
it was; what is allowed applies; a read needs no permission.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from front_ends import FRONT_ENDS

from gitmode_fixtures import FILES, GitMode
from redline.daemon.client import Client
from redline.daemon.protocol import INVALID_PARAMS, RpcError

RULES = """\
[permission]
"*" = "allow"
[permission.edit]
"docs/**" = "deny"
"c.txt" = "ask"
"a.py" = "allow"
[permission.write]
"secret/**" = "deny"
[permission.delete]
"**" = "deny"
"""
USER_RULES = '[permission.edit]\n"a.py" = "deny"\n'
ROOT = "{root}"  # in a case's path: the folder the front end applies under


@dataclass(frozen=True)
class Case:
    id: str
    request: dict[str, Any]
    status: str
    says: str = ""  # a refusal: the rule its error names
    untouched: str | None = None  # a refusal: the file that must be as it was


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"tool": "edit", "path": path, "old_string": old, "new_string": new}


CASES = [
    Case(
        "denied-edit",
        edit("docs/readme.md", "Some text.", "Other text."),
        "rejected",
        'permission.edit."docs/**" = "deny"',
        "docs/readme.md",
    ),
    Case(
        "denied-edit-absolute",
        edit(f"{ROOT}/docs/readme.md", "Some text.", "Other text."),
        "rejected",
        'permission.edit."docs/**" = "deny"',
        "docs/readme.md",
    ),
    Case(
        "ask-with-no-one-to-ask",
        edit("c.txt", "beta", "BETA"),
        "rejected",
        'permission.edit."c.txt" = "ask"',
        "c.txt",
    ),
    Case(
        "users-deny-stands",
        edit("a.py", "Hello", "Hi"),
        "rejected",
        'permission.edit."a.py" = "deny" (in {user})',
        "a.py",
    ),
    Case(
        "denied-write",
        {"tool": "write", "path": "secret/key.txt", "content": "leaked\n"},
        "rejected",
        'permission.write."secret/**" = "deny"',
    ),
    Case(
        "denied-delete",
        {"tool": "delete", "path": "tool.sh"},
        "rejected",
        'permission.delete."**" = "deny"',
        "tool.sh",
    ),
    Case("read-needs-no-permission", {"tool": "read", "path": "docs/readme.md"}, "read"),
    Case("allowed-edit", edit("b.py", "VALUE = 1", "VALUE = 2"), "applied"),
]


@pytest.fixture
def governed(gm: GitMode, tmp_path: Path) -> tuple[GitMode, Path]:
    """``gm`` with the rules committed on main and the user's config denying a.py."""
    user = tmp_path / "xdg" / "redline" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(USER_RULES)
    gm.env["XDG_CONFIG_HOME"] = str(tmp_path / "xdg")  # before any daemon starts
    (gm.repo / ".redline.toml").write_text(RULES)
    gm.git("add", ".redline.toml")
    gm.git("commit", "-q", "-m", "rules")
    return gm, user


@pytest.mark.parametrize("front_end", list(FRONT_ENDS))
def test_every_front_end_gives_the_tables_verdicts(
    governed: tuple[GitMode, Path], front_end: str
) -> None:
    gm, user = governed
    target = FRONT_ENDS[front_end](gm)
    requests = [
        {k: v.replace(ROOT, str(target.root)) if k == "path" else v for k, v in c.request.items()}
        for c in CASES
    ]
    results = target.send(requests)
    assert len(results) == len(CASES), results
    for case, result in zip(CASES, results, strict=True):
        assert result["status"] == case.status, (case.id, result)
        if case.says:
            assert case.says.format(user=user) in result["error"], (case.id, result["error"])
        if case.untouched is not None:
            original = FILES[case.untouched]
            assert (target.root / case.untouched).read_text() == original, case.id
    assert not (target.root / "secret").exists()
    assert (target.root / "b.py").read_text() == "VALUE = 2\n"


def test_a_socket_client_can_only_pass_an_ask_rule_by_saying_a_person_allowed_it(
    governed: tuple[GitMode, Path],
) -> None:
    """``asked`` is the front end's word that it asked a person (redline mcp sets it after
    an elicitation); it lifts no deny, and a client that does not say it is refused."""
    gm, _ = governed
    worktree = Path(gm.cli.open_session("s")["worktree"])
    with Client(gm.socket()) as client:

        def apply(request: dict[str, Any], **params: Any) -> dict[str, Any]:
            answer: dict[str, Any] = client.call(
                "apply", {"session": "s", "request": request, **params}
            )
            return answer

        denied = apply(edit("docs/readme.md", "Some text.", "X"), asked=True)
        assert denied["status"] == "rejected"
        assert 'permission.edit."docs/**" = "deny"' in denied["error"]
        with pytest.raises(RpcError) as bad:
            apply(edit("c.txt", "beta", "BETA"), asked="yes")
        assert bad.value.code == INVALID_PARAMS
        assert apply(edit("c.txt", "beta", "BETA"))["status"] == "rejected"
        assert (worktree / "c.txt").read_text() == FILES["c.txt"]
        assert apply(edit("c.txt", "beta", "BETA"), asked=True)["status"] == "applied"
    assert (worktree / "c.txt").read_text() == "alpha\nBETA\ngamma\n"
