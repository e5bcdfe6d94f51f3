"""Permissions for MCP calls, with what a person allowed while the server runs."""

from __future__ import annotations

from pathlib import Path

from redline.mcp.allowances import Allowances
from redline.settings.tools import parse_config

RULES = """\
[permission.edit]
"**" = "allow"
"docs/**" = "ask"
"secret/**" = "deny"
[permission.write]
"docs/**" = "ask"
"""
PATCH = "*** Begin Patch\n*** Update File: {}\n@@\n-a\n+b\n*** End Patch\n"


def allowances() -> Allowances:
    return Allowances(parse_config(RULES, ".redline.toml").permissions)


def test_allowing_covers_both_edit_tools_on_that_path_only() -> None:
    g = allowances()
    edit = {"tool": "edit", "path": "docs/a.md", "old_string": "a", "new_string": "b"}
    patch = {"tool": "apply_patch", "patch": PATCH.format("docs/a.md")}
    assert g.decide(edit)[0].action == "ask"
    assert g.decide(patch) == (g.decide(edit)[0], "docs/a.md")
    g.allow("edit", "./docs/a.md")  # the spelling does not matter
    assert g.decide(edit)[0].action == "allow"
    assert g.decide(patch)[0].action == "allow"
    # Not another path, not another tool family.
    assert g.decide({**edit, "path": "docs/b.md"})[0].action == "ask"
    assert g.decide({"tool": "write", "path": "docs/a.md", "content": ""})[0].action == "ask"


def test_allowing_never_lifts_a_deny() -> None:
    g = allowances()
    g.allow("edit", "secret/key.txt")
    decision, path = g.decide({"tool": "edit", "path": "secret/key.txt"})
    assert decision.action == "deny" and path == "secret/key.txt"


def test_a_patch_asks_for_each_path_in_turn() -> None:
    g = allowances()
    two = "*** Begin Patch\n*** Add File: docs/x.md\n+x\n*** Update File: docs/y.md\n@@\n-a\n+b\n*** End Patch\n"
    request = {"tool": "apply_patch", "patch": two}
    first = g.decide(request)
    assert first[0].action == "ask"
    g.allow("apply_patch", str(first[1]))
    second = g.decide(request)
    assert second[0].action == "ask" and second[1] != first[1]
    g.allow("apply_patch", str(second[1]))
    assert g.decide(request)[0].action == "allow"


def test_an_absolute_path_is_judged_under_the_root_given(tmp_path: Path) -> None:
    g = allowances()
    inside = str(tmp_path / "docs" / "a.md")
    request = {"tool": "edit", "path": inside, "old_string": "a", "new_string": "b"}
    assert g.decide(request)[0].action == "allow"  # outside the rules' view: no glob matches
    assert g.decide(request, tmp_path) == (g.decide({**request, "path": "docs/a.md"})[0], inside)
    g.allow("edit", inside, tmp_path)
    assert g.decide({**request, "path": "docs/a.md"})[0].action == "allow"
