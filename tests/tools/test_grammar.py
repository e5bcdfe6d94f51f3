"""The Lark grammar shown to models accepts exactly the strict patch form.

Every patch the grammar accepts must parse to the same operations with
``parse_patch``; the parser's extra leniency (missing markers, padding, heredocs,
blank lines) is deliberately not part of the grammar.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import lark
import pytest
from hypothesis import given

from conformance_paths import LENIENT_SCENARIOS, MALFORMED_SCENARIOS, SCENARIOS
from conformance_paths import MISSING as _NO_SCENARIOS
from patch_strategies import patches
from redline.engine.patch_parse import (
    AddFile,
    DeleteFile,
    Hunk,
    HunkLine,
    Operation,
    Patch,
    PatchSyntaxError,
    UpdateFile,
    format_patch,
    parse_patch,
)
from redline.tools.grammar import GRAMMAR_RESOURCE, grammar_text

PARSERS = ("lalr", "earley")


@cache
def lark_parser(kind: str) -> Any:
    return lark.Lark(grammar_text(), parser=kind)


@pytest.fixture(params=PARSERS, scope="module")
def grammar(request: pytest.FixtureRequest) -> Any:
    return lark_parser(request.param)


def accepts(grammar: Any, text: str) -> bool:
    try:
        grammar.parse(text)
    except lark.exceptions.LarkError:
        return False
    return True


# -- reading a Lark tree back into operations ---------------------------------

_KINDS = {"context_line": " ", "removed_line": "-", "added_line": "+"}


def _line_text(node: Any) -> str:
    return str(node.children[0]) if node.children else ""


def _hunk(node: Any) -> Hunk:
    start, *rest = node.children
    anchor = str(start.children[0]) if start.children else None
    lines = tuple(
        HunkLine(_KINDS[child.children[0].data], _line_text(child.children[0]))  # type: ignore[arg-type]
        for child in rest
        if child.data == "hunk_line"
    )
    return Hunk(anchor, lines, any(child.data == "eof_pin" for child in rest))


def _operation(node: Any) -> Operation:
    path, *rest = node.children
    if node.data == "add_file":
        return AddFile(str(path), tuple(_line_text(child) for child in rest))
    if node.data == "delete_file":
        return DeleteFile(str(path))
    move_to = next((str(child.children[0]) for child in rest if child.data == "rename"), None)
    hunks = tuple(_hunk(child) for child in rest if child.data == "hunk")
    return UpdateFile(str(path), move_to, hunks)


def tree_to_patch(tree: Any) -> Patch:
    operations = [child.children[0] for child in tree.children if child.data == "operation"]
    return Patch(tuple(_operation(node) for node in operations))


# -- the grammar resource -----------------------------------------------------


def test_grammar_is_package_data() -> None:
    resource = files("redline.tools").joinpath(GRAMMAR_RESOURCE)
    assert resource.is_file()
    assert grammar_text() == resource.read_text(encoding="utf-8")
    assert grammar_text().lstrip().startswith("//")
    assert "\nstart:" in grammar_text()


def test_grammar_is_lalr1() -> None:
    # Deterministic (no Earley needed); the tests below check both parsers read alike.
    assert lark_parser("lalr").parse("*** Begin Patch\n*** Delete File: a\n*** End Patch\n")


# -- strict patches: accepted, and read as the parser reads them --------------

WELL_FORMED = {
    "all-operations": """\
*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Delete File: old.txt
*** Update File: src/app.py
*** Move to: src/main.py
@@ def main():
     x = 1
-    return x
+    return x + 1
@@
 tail
+more
*** End of File
*** End Patch
""",
    "no-final-newline": "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
    "empty-added-file": "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch\n",
    "marker-text-as-content": (
        "*** Begin Patch\n*** Add File: a\n+  indented \n+*** End Patch\n+\n"
        "*** Update File: b\n@@\n x\n *** End Patch\n-*** Update File: x\n+*** End of File\n"
        " *** Begin Patch\n @@ x\n y\n*** End Patch\n"
    ),
    "move": (
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b/a.txt\n@@\n-x\n+y\n*** End Patch\n"
    ),
    "anchors": (
        "*** Begin Patch\n*** Update File: a\n@@ class Foo:\n-x\n@@     def bar(self):\n+y\n"
        "*** End Patch\n"
    ),
    "empty-context-written-with-a-space": (
        "*** Begin Patch\n*** Update File: a\n@@\n a\n \n-b\n+\n+c\n*** End Patch\n"
    ),
    "end-of-file-twice": (
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** End of File\n@@\n-y\n"
        "*** End of File\n*** End Patch\n"
    ),
    "same-path-twice": (
        "*** Begin Patch\n*** Update File: a\n@@\n-1\n+2\n*** Update File: a\n@@\n-2\n+3\n"
        "*** End Patch\n"
    ),
    "unicode": "*** Begin Patch\n*** Update File: café.txt\n@@ naïve\n-ü\n+✅\n*** End Patch\n",
    "paths-as-written": (
        "*** Begin Patch\n*** Delete File: ../up.txt\n*** Delete File: /abs/x\n"
        "*** Add File: a b/c d.txt\n*** End Patch\n"
    ),
    "context-only-hunk": "*** Begin Patch\n*** Update File: a\n@@\n same\n*** End Patch\n",
    "crlf": "*** Begin Patch\r\n*** Update File: a\r\n@@\r\n-x\r\n+y\r\n*** End Patch\r\n",
}


@pytest.mark.parametrize("text", list(WELL_FORMED.values()), ids=list(WELL_FORMED))
def test_grammar_accepts_strict_patches_as_the_parser_reads_them(grammar: Any, text: str) -> None:
    assert tree_to_patch(grammar.parse(text)) == parse_patch(text)


@given(patches)
def test_every_formatted_patch_is_accepted_and_read_back(patch: Patch) -> None:
    text = format_patch(patch)
    assert tree_to_patch(lark_parser("lalr").parse(text)) == patch


# -- malformed structure: rejected --------------------------------------------

# name -> (text, whether the lenient parser rejects it too)
MALFORMED = {
    "missing-end-patch": ("*** Begin Patch\n*** Delete File: a\n", False),
    "missing-begin-patch": ("*** Delete File: a\n*** End Patch\n", False),
    "empty-patch-body": ("*** Begin Patch\n*** End Patch\n", True),
    "empty-text": ("", True),
    "hunk-line-without-prefix": (
        "*** Begin Patch\n*** Update File: a\n@@\n-x\ny\n*** End Patch\n",
        True,
    ),
    "move-without-update": ("*** Begin Patch\n*** Move to: b\n@@\n-x\n*** End Patch\n", True),
    "move-after-hunk": (
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n*** Move to: b\n*** End Patch\n",
        True,
    ),
    "move-after-delete": (
        "*** Begin Patch\n*** Delete File: a\n*** Move to: b\n*** End Patch\n",
        True,
    ),
    "add-line-without-plus": ("*** Begin Patch\n*** Add File: a\n+x\ny\n*** End Patch\n", True),
    "add-line-with-minus": ("*** Begin Patch\n*** Add File: a\n-x\n*** End Patch\n", True),
    "update-without-hunks": ("*** Begin Patch\n*** Update File: a\n*** End Patch\n", True),
    "rename-without-hunks": (
        "*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch\n",
        True,
    ),
    "at-at-without-lines": ("*** Begin Patch\n*** Update File: a\n@@\n*** End Patch\n", True),
    "end-of-file-without-lines": (
        "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch\n",
        True,
    ),
    "end-of-file-outside-update": (
        "*** Begin Patch\n*** Delete File: a\n*** End of File\n*** End Patch\n",
        True,
    ),
    "hunk-after-delete": ("*** Begin Patch\n*** Delete File: a\n@@\n-x\n*** End Patch\n", True),
    "text-after-end-patch": ("*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n", True),
    "unknown-header": ("*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch\n", True),
    "empty-path": ("*** Begin Patch\n*** Delete File: \n*** End Patch\n", True),
    "at-at-without-space": ("*** Begin Patch\n*** Update File: a\n@@x\n-y\n*** End Patch\n", True),
    "padded-begin-marker": (" *** Begin Patch\n*** Delete File: a\n*** End Patch\n", False),
    "padded-end-marker": ("*** Begin Patch\n*** Delete File: a\n*** End Patch \n", False),
    "padded-header": ("*** Begin Patch\n  *** Delete File: a\n*** End Patch\n", False),
    "first-hunk-without-at-at": ("*** Begin Patch\n*** Update File: a\n-x\n*** End Patch\n", False),
    "bare-empty-line-in-hunk": (
        "*** Begin Patch\n*** Update File: a\n@@\n-x\n\n+y\n*** End Patch\n",
        False,
    ),
    "blank-line-between-operations": (
        "*** Begin Patch\n*** Delete File: a\n\n*** Delete File: b\n*** End Patch\n",
        False,
    ),
    "heredoc": ("<<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n", False),
    "trailing-blank-line": ("*** Begin Patch\n*** Delete File: a\n*** End Patch\n\n", False),
}


@pytest.mark.parametrize(("text", "parser_rejects"), list(MALFORMED.values()), ids=list(MALFORMED))
def test_grammar_rejects_malformed_structure(grammar: Any, text: str, parser_rejects: bool) -> None:
    assert not accepts(grammar, text)
    if parser_rejects:
        with pytest.raises(PatchSyntaxError):
            parse_patch(text)
    else:
        assert parse_patch(text).operations  # leniency of the parser only


# -- the Codex conformance scenarios ------------------------------------------


def scenario_patches() -> list[Any]:
    if not SCENARIOS.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=_NO_SCENARIOS))]
    return [
        pytest.param(path, id=path.parent.name) for path in sorted(SCENARIOS.glob("*/patch.txt"))
    ]


@pytest.mark.parametrize("patch_file", scenario_patches())
def test_scenario_patches(grammar: Any, patch_file: Path) -> None:
    text = patch_file.read_text(encoding="utf-8")
    name = patch_file.parent.name
    if name in MALFORMED_SCENARIOS:
        assert not accepts(grammar, text)
        with pytest.raises(PatchSyntaxError):
            parse_patch(text)
    elif name in LENIENT_SCENARIOS:
        assert not accepts(grammar, text)
        assert parse_patch(text).operations
    else:
        assert tree_to_patch(grammar.parse(text)) == parse_patch(text)
