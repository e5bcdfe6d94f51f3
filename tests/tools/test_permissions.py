"""tools.permissions: ``[permission]`` rules decided per tool and path.

Rules are written as users write them (TOML read by ``settings.tools``), so each
test also shows the syntax it exercises.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.settings.tools import parse_config
from redline.tools.permissions import (
    DEFAULT_RULE,
    Decision,
    Permissions,
    family,
    rejected_result,
    request_decision,
    request_paths,
)

SOURCE = ".redline.toml"
TOOLS = ("edit", "apply_patch", "write", "delete")


def rules(text: str, root: Path | None = None) -> Permissions:
    permissions = parse_config(text, SOURCE).permissions
    return Permissions(permissions.rules, str(root) if root else None)


def actions(permissions: Permissions, path: str = "src/app.py") -> dict[str, str]:
    return {tool: permissions.decide(tool, path).action for tool in TOOLS}


def test_no_rule_at_all_allows_everything() -> None:
    permissions = Permissions()
    for tool in TOOLS:
        assert permissions.decide(tool, "a.py") == Decision("allow", DEFAULT_RULE)
        assert permissions.available(tool)


# The five documented examples: edit and apply_patch share rules unless each has its
# own (deny included), and explicit tool rules beat "*".
EXAMPLES = [
    (
        'edit = "allow"',
        {"edit": "allow", "apply_patch": "allow", "write": "allow", "delete": "allow"},
    ),
    (
        'edit = "allow"\napply_patch = "deny"',
        {"edit": "allow", "apply_patch": "deny", "write": "allow", "delete": "allow"},
    ),
    (
        'apply_patch = "allow"\nedit = "deny"',
        {"edit": "deny", "apply_patch": "allow", "write": "allow", "delete": "allow"},
    ),
    (
        '"*" = "deny"\napply_patch = "allow"',
        {"edit": "allow", "apply_patch": "allow", "write": "deny", "delete": "deny"},
    ),
    (
        '"*" = "allow"\napply_patch = "deny"',
        {"edit": "deny", "apply_patch": "deny", "write": "allow", "delete": "allow"},
    ),
]


@pytest.mark.parametrize(("text", "expected"), EXAMPLES, ids=[t for t, _ in EXAMPLES])
def test_the_documented_examples(text: str, expected: dict[str, str]) -> None:
    permissions = rules(f"[permission]\n{text}\n")
    assert actions(permissions) == expected
    assert {tool: permissions.available(tool) for tool in TOOLS} == {
        tool: action != "deny" for tool, action in expected.items()
    }


def test_the_decision_names_the_rule_as_written_and_its_file() -> None:
    permissions = rules('[permission]\n"*" = "allow"\napply_patch = "deny"\n')
    assert permissions.decide("edit", "a.py") == Decision(
        "deny", 'permission.apply_patch = "deny"', SOURCE
    )
    assert permissions.decide("write", "a.py") == Decision(
        "allow", 'permission."*" = "allow"', SOURCE
    )


def test_patch_is_an_alias_of_apply_patch() -> None:
    permissions = rules('[permission]\npatch = "deny"\n')
    assert actions(permissions) == {
        "edit": "deny",
        "apply_patch": "deny",
        "write": "allow",
        "delete": "allow",
    }
    assert permissions.decide("patch", "a").rule == 'permission.patch = "deny"'


def test_read_needs_no_permission() -> None:
    permissions = rules('[permission]\n"*" = "deny"\n')
    assert permissions.decide("read", "a.py").action == "allow"
    assert permissions.available("read")


# --- path globs ---------------------------------------------------------------------------


GLOBS = """
[permission.edit]
"**" = "allow"
"migrations/**" = "deny"
"migrations/README.md" = "allow"
"*.lock" = "ask"
"""


@pytest.mark.parametrize(
    ("path", "action", "rule"),
    [
        ("src/app.py", "allow", 'permission.edit."**" = "allow"'),
        ("migrations/001.sql", "deny", 'permission.edit."migrations/**" = "deny"'),
        ("migrations/2024/001.sql", "deny", 'permission.edit."migrations/**" = "deny"'),
        ("migrations/README.md", "allow", 'permission.edit."migrations/README.md" = "allow"'),
        ("src/migrations/x.py", "allow", 'permission.edit."**" = "allow"'),  # anchored
        ("poetry.lock", "ask", 'permission.edit."*.lock" = "ask"'),
        ("deep/er/Cargo.lock", "ask", 'permission.edit."*.lock" = "ask"'),  # no slash: any depth
        ("./migrations//001.sql", "deny", 'permission.edit."migrations/**" = "deny"'),
    ],
)
def test_the_last_matching_glob_wins(path: str, action: str, rule: str) -> None:
    decision = rules(GLOBS).decide("edit", path)
    assert (decision.action, decision.rule) == (action, rule)


def test_the_order_of_globs_is_the_order_written() -> None:
    reordered = '[permission.edit]\n"migrations/**" = "deny"\n"**" = "allow"\n'
    assert rules(reordered).decide("edit", "migrations/001.sql").action == "allow"


def test_a_path_no_glob_of_the_tool_matches_falls_to_star_then_to_allow() -> None:
    text = '[permission]\n"*" = { "secrets/**" = "deny" }\n[permission.write]\n"docs/**" = "ask"\n'
    permissions = rules(text)
    assert permissions.decide("write", "docs/a.md").action == "ask"
    assert permissions.decide("write", "secrets/key").action == "deny"
    assert permissions.decide("write", "src/a.py").action == "allow"
    assert permissions.decide("write", "src/a.py").rule == DEFAULT_RULE
    # an explicit tool rule matching the same path beats "*"
    text = '[permission]\n"*" = { "secrets/**" = "deny" }\n[permission.delete]\n"secrets/old/**" = "allow"\n'
    assert rules(text).decide("delete", "secrets/old/key").action == "allow"
    assert rules(text).decide("delete", "secrets/new/key").action == "deny"


def test_the_sibling_inherits_a_table_too() -> None:
    permissions = rules(GLOBS)
    assert permissions.decide("apply_patch", "migrations/001.sql").action == "deny"
    own = rules(GLOBS + '\n[permission.apply_patch]\n"**" = "allow"\n')
    assert own.decide("apply_patch", "migrations/001.sql").action == "allow"
    assert own.decide("edit", "migrations/001.sql").action == "deny"


@pytest.mark.parametrize(
    ("text", "available"),
    [
        ('edit = "deny"', False),
        ('edit = { "**" = "deny" }', False),
        ('edit = { "*" = "deny" }', False),  # gitignore: a name at any depth, so every path
        ('edit = { "**" = "deny", "docs/**" = "allow" }', True),
        ('edit = { "**" = "deny", "docs/**" = "ask" }', True),
        ('edit = { "docs/**" = "allow", "**" = "deny" }', False),
        ('edit = { "src/**" = "deny" }', True),  # other paths fall to the default
        ('"*" = "deny"', False),
        ('"*" = "deny"\nedit = { "src/**" = "allow" }', True),
        ('"*" = { "**" = "deny" }\nedit = { "**" = "ask" }', True),
    ],
)
def test_a_tool_is_available_unless_denied_for_every_path(text: str, available: bool) -> None:
    assert rules(f"[permission]\n{text}\n").available("edit") is available


def test_an_absolute_path_inside_the_root_is_judged_by_its_relative_path(tmp_path: Path) -> None:
    permissions = rules('[permission.edit]\n"migrations/**" = "deny"\n', tmp_path)
    assert permissions.decide("edit", str(tmp_path / "migrations" / "001.sql")).action == "deny"
    assert permissions.decide("edit", f"{tmp_path}/./migrations//001.sql").action == "deny"
    assert permissions.decide("edit", str(tmp_path / "src" / "a.py")).action == "allow"


def test_an_absolute_path_through_a_link_to_the_root_is_judged_inside_it(tmp_path: Path) -> None:
    root = tmp_path / "real"
    root.mkdir()
    (tmp_path / "link").symlink_to(root)
    permissions = rules('[permission.edit]\n"migrations/**" = "deny"\n', root)
    assert (
        permissions.decide("edit", str(tmp_path / "link" / "migrations" / "1.sql")).action == "deny"
    )


def test_a_relative_path_through_a_link_is_judged_by_the_file_it_leads_to(
    tmp_path: Path,
) -> None:
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "1.sql").write_text("a\n")
    (tmp_path / "db").symlink_to("migrations")
    (tmp_path / "outside").symlink_to("/")
    permissions = rules('[permission.edit]\n"migrations/**" = "deny"\n', tmp_path)
    assert permissions.decide("edit", "db/1.sql").action == "deny"
    assert permissions.decide("edit", "db/new.sql").action == "deny"  # not there yet
    assert permissions.decide("edit", "outside/etc/hosts").action == "allow"  # refused later
    assert (
        rules('[permission.edit]\n"migrations/**" = "deny"\n').decide("edit", "db/1.sql").action
        == "allow"
    )  # no root: nothing to resolve against


# --- requests -----------------------------------------------------------------------------

PATCH = """*** Begin Patch
*** Add File: docs/new.md
+hello
*** Update File: src/app.py
*** Move to: migrations/app.py
@@
-x
+y
*** Delete File: poetry.lock
*** End Patch
"""


def test_a_patch_touches_every_path_in_its_headers_move_targets_too() -> None:
    request = {"tool": "apply_patch", "patch": PATCH}
    assert request_paths(request) == [
        "docs/new.md",
        "src/app.py",
        "migrations/app.py",
        "poetry.lock",
    ]


def test_a_request_gets_the_strictest_decision_over_its_paths() -> None:
    permissions = rules(GLOBS)
    decision, path = request_decision(permissions, {"tool": "apply_patch", "patch": PATCH})
    assert (decision.action, path) == ("deny", "migrations/app.py")
    only_ask = PATCH.replace("migrations/app.py", "src/main.py")
    decision, path = request_decision(permissions, {"tool": "apply_patch", "patch": only_ask})
    assert (decision.action, path) == ("ask", "poetry.lock")


@pytest.mark.parametrize(
    ("request_", "expected"),
    [
        (
            {"tool": "edit", "path": "migrations/1.sql", "old_string": "a", "new_string": "b"},
            ("deny", "migrations/1.sql"),
        ),
        (
            {"tool": "write", "path": "migrations/1.sql", "content": ""},
            ("deny", "migrations/1.sql"),
        ),
        ({"tool": "delete", "path": "x.lock"}, ("ask", "x.lock")),
        ({"tool": "read", "path": "migrations/1.sql"}, ("allow", None)),
        ({"tool": "apply_patch", "patch": "not a patch"}, ("allow", None)),  # invalid later
        ({"tool": "edit"}, ("allow", None)),
        ({"tool": "unknown", "path": "migrations/1.sql"}, ("allow", None)),
    ],
)
def test_request_decision(request_: dict[str, object], expected: tuple[str, str | None]) -> None:
    text = '[permission]\n"*" = { "migrations/**" = "deny", "*.lock" = "ask" }\n'
    decision, path = request_decision(rules(text), request_)
    assert (decision.action, path) == expected


def test_allowing_one_edit_tool_allows_both() -> None:
    assert family("edit") == family("apply_patch") == family("patch") == "edit"
    assert family("write") == "write"
    assert family("delete") == "delete"


def test_a_denied_request_is_a_rejected_result_naming_the_rule() -> None:
    decision = Decision("deny", 'permission.edit."migrations/**" = "deny"', SOURCE)
    result = rejected_result(decision, "edit", "migrations/1.sql")
    assert result["status"] == "rejected"
    assert result["path"] == "migrations/1.sql"
    error = result["error"]
    assert error.startswith(
        "edit of 'migrations/1.sql' is denied by the permission rule "
        'permission.edit."migrations/**" = "deny" (in .redline.toml); nothing was changed.'
    )
    assert "ask the user" in error
    assert '[permission.edit] "migrations/1.sql" = "allow"' in error


def test_ask_without_someone_to_ask_says_what_to_configure() -> None:
    decision = Decision("ask", 'permission.patch = "ask"', SOURCE)
    result = rejected_result(decision, "patch", "a.py")
    assert result["status"] == "rejected"
    error = result["error"]
    assert 'needs the user to allow it (rule permission.patch = "ask" (in .redline.toml))' in error
    assert "MCP client (`redline mcp`), which asks the user" in error
    assert '[permission.apply_patch] "a.py" = "allow"' in error
