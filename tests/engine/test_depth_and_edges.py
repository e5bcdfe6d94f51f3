"""Tolerant edits that placed lines at a wrong depth or past the edge of the block.

Most cases were found applied with wrong content before their fix: a flat
old_string whose lines sit at several depths, a step guessed from the rest of
the file, an exact match that began inside a line's indentation, a fuzzy window
that dropped or swapped an edge line, apply_patch taking the first of several
places; the others guard what those fixes must leave working. The rule they
check: a tolerant match writes the exact request's bytes, or refuses — never a
third text.
"""

from __future__ import annotations

import pytest

from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit
from redline.engine.patch import apply_patch
from redline.engine.patch_plan import MemorySnapshot
from redline.engine.plan import PatchOutcome


def edit(text: str, old: str, new: str) -> EditOutcome:
    return apply_edit(text.encode(), EditRequest("f", (EditItem(old, new),)))


def applied(text: str, old: str, new: str) -> str:
    out = edit(text, old, new)
    assert out.result.status == "applied", out.result.error
    assert out.data is not None
    return out.data.decode()


def refused(text: str, old: str, new: str) -> EditOutcome:
    out = edit(text, old, new)
    assert out.data is None, f"wrote {out.data!r} ({out.result.match_type})"
    assert out.result.status not in ("applied", "no_change")
    return out


def patch(text: str, *body: str, anchor: str = "") -> PatchOutcome:
    lines = "".join(line + "\n" for line in body)
    header = f"@@ {anchor}" if anchor else "@@"
    request = f"*** Begin Patch\n*** Update File: f\n{header}\n{lines}*** End Patch\n"
    return apply_patch(request, MemorySnapshot({"f": text.encode()}))


def patched(text: str, *body: str, anchor: str = "") -> str:
    out = patch(text, *body, anchor=anchor)
    assert out.result.status == "applied", out.result.error
    (change,) = out.changes
    assert change.after is not None
    return change.after.decode()


def patch_refused(text: str, *body: str) -> PatchOutcome:
    out = patch(text, *body)
    assert out.result.status != "applied"
    assert not out.changes
    return out


# C1. A flat old_string whose lines sit at several depths: the pairs map one
# agent indentation to several file depths, so no mapping is learnt from them;
# a line the edit inserts takes the depth of the lines around it when they
# agree, and is refused otherwise.

LOOP = "def f():\n    for i in range(3):\n        print(i)\n        log(i)\n    done()\n"
FLAT_LOOP = "for i in range(3):\nprint(i)\nlog(i)\ndone()\n"

# (file, flat old_string, new_string, expected file)
FLAT_QUOTES = {
    "python": (
        LOOP,
        FLAT_LOOP,
        "for i in range(3):\nprint(i)\ntrace(i)\nlog(i)\ndone()\n",
        LOOP.replace("print(i)\n", "print(i)\n        trace(i)\n"),
    ),
    "markdown sub-items": (
        "# Setup\n\n- Install\n  - download the archive\n  - unpack it\n- Run\n",
        "- Install\n- download the archive\n- unpack it\n- Run\n",
        "- Install\n- download the archive\n- check its checksum\n- unpack it\n- Run\n",
        "# Setup\n\n- Install\n  - download the archive\n  - check its checksum\n"
        "  - unpack it\n- Run\n",
    ),
    "yaml steps": (
        "jobs:\n  test:\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - run: make test\n    env:\n      CI: 1\n",
        "steps:\n- uses: actions/checkout@v4\n- run: make test\nenv:\n",
        "steps:\n- uses: actions/checkout@v4\n- run: make lint\n- run: make test\nenv:\n",
        "jobs:\n  test:\n    steps:\n      - uses: actions/checkout@v4\n"
        "      - run: make lint\n      - run: make test\n    env:\n      CI: 1\n",
    ),
    "rust": (
        'fn main() {\n    let x = 1;\n    if x > 0 {\n        println!("pos");\n'
        "        done(x);\n    }\n}\n",
        'if x > 0 {\nprintln!("pos");\ndone(x);\n}\n',
        'if x > 0 {\nprintln!("pos");\nlog(x);\ndone(x);\n}\n',
        'fn main() {\n    let x = 1;\n    if x > 0 {\n        println!("pos");\n'
        "        log(x);\n        done(x);\n    }\n}\n",
    ),
    "go, tabs": (
        "func f() {\n\tfor i := 0; i < 3; i++ {\n\t\tfmt.Println(i)\n\t\tlog(i)\n\t}\n}\n",
        "for i := 0; i < 3; i++ {\nfmt.Println(i)\nlog(i)\n}\n",
        "for i := 0; i < 3; i++ {\nfmt.Println(i)\ntrace(i)\nlog(i)\n}\n",
        "func f() {\n\tfor i := 0; i < 3; i++ {\n\t\tfmt.Println(i)\n\t\ttrace(i)\n"
        "\t\tlog(i)\n\t}\n}\n",
    ),
}


@pytest.mark.parametrize("case", list(FLAT_QUOTES), ids=list(FLAT_QUOTES))
def test_a_line_inserted_in_a_flat_quote_of_several_depths_takes_its_neighbours_depth(
    case: str,
) -> None:
    text, old, new, expected = FLAT_QUOTES[case]
    assert applied(text, old, new) == expected


@pytest.mark.parametrize(
    "new",
    [
        # after the loop's header (4) and before its body (8): which one is meant?
        "for i in range(3):\ntrace(i)\nprint(i)\nlog(i)\ndone()\n",
        # between the body (8) and the line after the loop (4)
        "for i in range(3):\nprint(i)\nlog(i)\ntrace(i)\ndone()\n",
        # at the end: nothing after it says its depth
        "for i in range(3):\nprint(i)\nlog(i)\ndone()\ntrace(i)\n",
    ],
)
def test_a_line_inserted_in_a_flat_quote_between_two_depths_is_refused(new: str) -> None:
    refused(LOOP, FLAT_LOOP, new)


def test_a_flat_quote_of_several_depths_is_refused_in_a_patch_too() -> None:
    patch_refused(LOOP, " for i in range(3):", "+trace(i)", " print(i)", " log(i)")


def test_a_line_inserted_in_a_flat_patch_hunk_takes_its_neighbours_depth() -> None:
    got = patched(LOOP, " for i in range(3):", " print(i)", "+trace(i)", " log(i)", " done()")
    assert got == FLAT_QUOTES["python"][3]


def test_lines_joined_in_a_flat_quote_of_several_depths_are_refused() -> None:
    # The joined line reads most like the deeper continuation line; its depth is
    # not that line's, and the flat quote does not say which it is.
    text = "def f():\n    return (\n        some_long_function_call(arg1, arg2))\n"
    refused(
        text,
        "return (\nsome_long_function_call(arg1, arg2))\n",
        "return (some_long_function_call(arg1, arg2))\n",
    )


def test_a_flat_quote_that_keeps_one_of_two_lines_alike_at_two_depths_is_refused() -> None:
    # Found by the invariants over fd's sources: two closing braces at two depths,
    # quoted flat, read alike; the edit joins the first into the line before it and
    # the line diff kept the inner brace where the outer one stays.
    text = "fn f() {\n    if a {\n        if b {\n            x(1)\n        } else {\n"
    text += "            true\n        }\n    }\n}\n"
    refused(text, "x(1)\n} else {\ntrue\n}\n}\n", "x(1)\n} else {\ntrue }\n}\n")


def test_two_lines_alike_that_the_file_writes_alike_still_apply() -> None:
    text = "items = [\n    1,\n    1,\n    2,\n]\n"
    assert applied(text, "  1,\n  1,\n  2,\n", "  1,\n  2,\n") == "items = [\n    1,\n    2,\n]\n"


def test_a_flat_quote_rewritten_line_for_line_keeps_each_lines_indentation() -> None:
    # opencode's published case: two lines at different indentation, quoted flat
    # and without the trailing spaces, each replaced by one line.
    text = "header\n  café 🧪  \n\t東京 ✨\nfooter\n"
    assert applied(text, "café 🧪\n東京 ✨", "updated\nblock") == (
        "header\n  updated  \n\tblock\nfooter\n"
    )


# C3. A block at one depth gives no evidence of a step: the agent's relative
# indentation is kept, unless the pair itself is the agent's column scaled.


def test_one_depth_quote_keeps_the_agents_relative_indentation() -> None:
    text = (
        "Changes\n=======\n\nVersion 2\n---------\n\n-   Fix:\n\n  -   a\n  -   b\n\n"
        "Unreleased\n\n\nVersion 1\n"
    )
    got = applied(
        text,
        "    Unreleased\n\n\n    Version 1\n",
        "    Unreleased\n\n    -   Fix a thing.\n        More text.\n\n    Version 1\n",
    )
    assert got.endswith("Unreleased\n\n-   Fix a thing.\n    More text.\n\nVersion 1\n")


def test_one_depth_quote_at_twice_the_files_columns_takes_the_files_step() -> None:
    # 4 → 2 with the agent's step 4 and the file's 2: the agent doubled the step.
    text = "def f():\n  x = 1\n  y = 2\n"
    got = applied(text, "    x = 1\n", "    x = 1\n    if x:\n        y = 3\n")
    assert got == "def f():\n  x = 1\n  if x:\n    y = 3\n  y = 2\n"


# Found replaying fd's and jinja's histories with re-indented requests: a quote at
# one depth other than 0, where shift and re-step both fit the file's steps.

USAGE = (
    "Arguments:\n  [pattern]  the search pattern\n  [path]...  the root directories\n\n"
    "Options:\n"
    "  -o, --owner <user:group>         Filter by owning user and/or group\n"
    "  -x, --exec <cmd>...              Execute a command for each search result\n"
    "      --exec-batch <cmd>...        Execute a command with all search results at once\n"
)


def test_an_aligned_line_added_to_a_shifted_one_depth_quote_is_exact_or_refused() -> None:
    old = (
        "  -o, --owner <user:group>         Filter by owning user and/or group\n"
        "  -x, --exec <cmd>...              Execute a command for each search result\n"
    )
    added = "      --format <fmt>               Print results according to template\n"
    new = old.replace("  -x", added + "  -x")
    expected = USAGE.replace(old, new)
    shifted = "".join("  " + line + "\n" for line in old.splitlines())
    shifted_new = "".join("  " + line + "\n" for line in new.splitlines())
    out = edit(USAGE, shifted, shifted_new)
    assert out.data is None or out.data.decode() == expected


def test_a_line_added_below_a_nested_list_item_quoted_deeper_is_exact_or_refused() -> None:
    text = (
        "## Bugfixes\n\n- `--print0` with `--exec` prints a `\\0` between entries. With\n"
        "  several `--exec`, it goes between each set of commands.\n\n"
        "- Bugs fixed by an update to `ignore`, see the changes of\n"
        "  that library\n    - #1506\n    - #1813\n\n## Changes\n"
    )
    out = edit(text, "        - #1813\n\n", "        - #1813\n\n    - Fix completions\n\n")
    expected = text.replace("    - #1813\n\n", "    - #1813\n\n- Fix completions\n\n")
    assert out.data is None or out.data.decode() == expected


def test_lines_indented_under_a_one_line_quote_shifted_to_column_0_are_exact_or_refused() -> None:
    text = (
        "class CodeGenerator:\n    def visit_For(self, node):\n        self.end_write(node)\n"
        "\n    def visit_If(self, node):\n        pass\n"
    )
    new = (
        "\n    # clear the loop's assignments\n    if self._assign_stack:\n"
        "        self._assign_stack.pop()\n\ndef visit_If(self, node):\n"
    )
    out = edit(text, "\ndef visit_If(self, node):\n", new)
    expected = text.replace(
        "\n    def visit_If",
        "\n        # clear the loop's assignments\n        if self._assign_stack:\n"
        "            self._assign_stack.pop()\n\n    def visit_If",
    )
    assert out.data is None or out.data.decode() == expected


def test_a_bullet_continuation_added_to_a_restepped_one_depth_quote_is_exact_or_refused() -> None:
    # Found replaying this repository: a docstring line quoted at twice its column,
    # a bullet added whose continuation lines up with the bullet's text. A shift
    # keeps the agent's step (the file's usual one), a re-step lines it up.
    text = 'def f():\n    """Say what f does.\n\n    More words here.\n    """\n    return 1\n'
    old = '        """Say what f does.\n'
    new = old + "\n        - one point, which goes on\n            over two lines;\n"
    expected = text.replace(
        '    """Say what f does.\n',
        '    """Say what f does.\n\n    - one point, which goes on\n      over two lines;\n',
    )
    out = edit(text, old, new)
    assert out.data is None or out.data.decode() == expected


def test_a_restep_to_a_step_the_file_rarely_takes_is_exact_or_refused() -> None:
    # Found replaying this repository's README (a YAML job in a Markdown code block):
    # a one-line quote shifted 2 deeper, continuation lines 4 deeper than it. The file
    # goes in by 2 as a rule and by 3 once (a numbered list's text), never by 4, so a
    # re-step 8 → 6 "fitted" (4 × 3/4 = 3) and wrote the continuation at 9 columns.
    text = (
        "Set up:\n\n1. Install it\n   with pip.\n\n```yaml\njobs:\n  guard:\n    steps:\n"
        "      - uses: actions/checkout@v4\n      - run: redline guard --range A..B\n```\n"
    )
    old = "        - run: redline guard --range A..B\n"
    new = "        - run: >-\n            redline guard --format github\n            --range A..B\n"
    expected = text.replace(
        "      - run: redline guard --range A..B\n",
        "      - run: >-\n          redline guard --format github\n          --range A..B\n",
    )
    out = edit(text, old, new)
    assert out.data is None or out.data.decode() == expected, out.data


# C9. A line-starting old_string found after part of a line's indentation is a
# whitespace match: the lines it adds are mapped by depth.


def test_a_match_inside_the_indentation_is_mapped_like_a_whitespace_match() -> None:
    text = "def f():\n    if x:\n        y = 1\n"
    out = edit(text, "    y = 1\n", "    y = 1\n    z = 2\n")
    assert out.result.match_type == "whitespace"
    assert out.data == b"def f():\n    if x:\n        y = 1\n        z = 2\n"


def test_a_match_inside_the_indentation_does_not_make_a_line_start_match_ambiguous() -> None:
    text = "if a:\n    y = 1\n    if b:\n        y = 1\n"
    out = edit(text, "    y = 1\n", "    y = 2\n")
    assert (out.result.match_type, out.data) == (
        "exact",
        b"if a:\n    y = 2\n    if b:\n        y = 1\n",
    )


def test_a_batch_item_found_only_inside_the_indentation_is_not_exact() -> None:
    text = "def f():\n    if x:\n        y = 1\n"
    items = (EditItem("    y = 1\n", "    y = 1\n    z = 2\n"), EditItem("def f", "def g"))
    out = apply_edit(text.encode(), EditRequest("f", items, batch=True))
    assert (out.result.status, out.data) == ("no_match", None)


def test_a_fragment_after_indentation_inside_a_line_is_still_exact() -> None:
    # Not line-starting: " = 1" inside a line is an ordinary exact fragment.
    assert applied("x = 1\n", " = 1", " = 2") == "x = 2\n"


# C7, C10. The first and last lines of a block are never the drifted one, and
# an insertion next to a line the file does not have is refused.


def test_a_fuzzy_window_that_drops_the_closing_line_is_refused() -> None:
    text = (
        'class T:\n    def test_dicts(self, container):\n        """\n'
        '        If recurse is True, also recurse into lists.\n        """\n'
        "        assert f(container)\n"
    )
    old = (
        "  def test_dicts(self, cntainer):\n    “”“\n"
        "    If recurse is True, also recurse into lists.\n    “”“\n"
    )
    out = edit(text, old, old + "    setup()\n")
    assert out.data is None or b'"""\n        setup()\n' in out.data


def test_a_kept_last_line_paired_with_another_line_is_refused() -> None:
    # A real agent's request: the method in the file is longer; the window paired
    # the quoted return with a comment and inserted the body above it.
    text = (
        "class BookAdmin(admin.ModelAdmin):\n"
        "    def has_change_permission(self, request, obj=None):\n"
        "        # Defer to the parent: has_change_permission(request)\n"
        "        if obj is None:\n            return True\n"
        "        return super().has_change_permission(request, obj)\n"
    )
    old = (
        "    def has_change_permission(self, request, obj=None):\n"
        "        return super().has_change_permission(request)"
    )
    new = (
        "    def has_change_permission(self, request, obj=None):\n"
        "        if obj is not None and obj.locked:\n            return False\n"
        "        return super().has_change_permission(request)"
    )
    refused(text, old, new)


@pytest.mark.parametrize("edge", ["first", "last"])
def test_a_drifted_edge_line_is_another_block(edge: str) -> None:
    lines = ["def load(path):", "    data = read(path)", "    check(data)", "    return data"]
    text = "\n".join(lines) + "\n"
    quoted = list(lines)
    at = 0 if edge == "first" else 3
    quoted[at] = "def fetch(url):" if edge == "first" else "    return None"
    old = "\n".join(quoted) + "\n"
    new = old.replace("    check(data)\n", "    check(data)\n    log(data)\n")
    refused(text, old, new)


def test_a_dropped_mark_that_glues_two_words_on_an_edge_line_is_a_slip() -> None:
    # "str(note" quoted as "strnote": a slip of the pen, not another line.
    text = "def key(note):\n    edit = str(note)\n    return edit\n"
    old = "def key(note):\n    edit = strnote)\n"
    new = "def key(note):\n    edit = strnote)\n    log(edit)\n"
    assert applied(text, old, new) == text.replace("    return", "    log(edit)\n    return")


def test_an_insertion_next_to_a_line_the_file_lacks_is_refused() -> None:
    text = "def f(x):\n    a = x + 1\n    b = a * 2\n    return b\n"
    # The agent quotes a line the file does not have ("c = b - 3") and inserts
    # right after it: where its insertion goes is a guess.
    old = "def f(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    return b\n"
    new = "def f(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    log(c)\n    return b\n"
    refused(text, old, new)


def test_a_drifted_inner_line_the_edit_keeps_still_survives() -> None:
    text = "def f(x):\n    a = x + 1\n    b = a * 20\n    c = b - 3\n    return c\n"
    old = "def f(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    return c\n"
    new = "def f(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    log(c)\n    return c\n"
    assert applied(text, old, new) == text.replace("    return c", "    log(c)\n    return c")


def test_a_fuzzy_window_takes_the_blank_line_old_string_quotes_before_it() -> None:
    # Found replaying jinja's history (re-stepped, trailing spaces, curly quotes):
    # the window began at the `if` line, so the blank line before it, which the edit
    # removes, stayed in the file.
    text = (
        "def f(root):\n    for r in roots:\n        if r:\n            break\n\n"
        "    if root is None:\n        raise ValueError(\n"
        "            f\"could not find a '{root}' directory for the \"\n"
        '            f"{name!r} package."\n        )\n\n    return root\n'
    )
    old = (
        "  \n  if root is None:  \n    raise ValueError(  \n"
        "      f“could not find a ’{root}’ directory for the ”  \n"
        "      f“{name!r} package.”  \n    )  \n"
    )
    new = (
        "    else:  \n      raise ValueError(  \n        f“could not find {root!r}”  \n      )  \n"
    )
    expected = (
        "def f(root):\n    for r in roots:\n        if r:\n            break\n"
        "        else:\n            raise ValueError(\n"
        '                f"could not find {root!r}"\n            )\n\n    return root\n'
    )
    assert applied(text, old, new) == expected


def test_a_fuzzy_window_takes_the_blank_line_old_string_quotes_after_it() -> None:
    # Found replaying fd's history (shifted, trailing spaces, curly quotes): a block
    # deleted with the blank line after it left that blank line behind.
    text = (
        "fn f() {\n    let a = 1;\n\n    // Check the depth first, since they don't need it.\n"
        "    let p = entry.path();\n    if p.is_dir() {\n        return Skip;\n    }\n\n"
        "    if let Some(d) = min_depth {\n        return Continue;\n    }\n}\n"
    )
    old = (
        "// Check the depth first, since they don’t need it.  \nlet p = entry.path();  \n"
        "if p.is_dir() {  \n    return Skip;  \n}  \n  \n"
    )
    expected = (
        "fn f() {\n    let a = 1;\n\n"
        "    if let Some(d) = min_depth {\n        return Continue;\n    }\n}\n"
    )
    assert applied(text, old, "") == expected


# C11. Aider's published case: a spurious blank line before the quote.


def test_a_spurious_leading_blank_line_loses_no_newline() -> None:
    text = "    line1\n    line2\n    line3\n"
    out = edit(text, "\n  line1\n  line2\n", "  new_line1\n  new_line2\n")
    assert out.data is None or out.data == b"    new_line1\n    new_line2\n    line3\n"


# C6. apply_patch: a hunk placed with whitespace tolerance must fit one place.


def test_a_whitespace_tolerant_hunk_at_two_places_is_refused() -> None:
    out = patch_refused("if a:\n    x = 1\nif b:\n    x = 1\n", "-        x = 1", "+        x = 2")
    assert "lines 2, 4" in (out.result.error or "")


def test_a_trailing_whitespace_tolerant_hunk_at_two_places_is_refused() -> None:
    patch_refused("x = 1  \ny = 2\nx = 1 \ny = 2\n", " x = 1", "-y = 2", "+y = 3")


def test_a_whitespace_tolerant_hunk_at_one_place_after_the_anchor_applies() -> None:
    text = "def a():\n    x = 1\ndef b():\n    x = 1\n"
    got = patched(text, "-x = 1", "+x = 2", anchor="def b():")
    assert got == "def a():\n    x = 1\ndef b():\n    x = 2\n"


# R3. apply_patch context that lost its indentation, '-' lines exact: as Codex.


def test_a_hunk_with_stripped_context_and_exact_removals_applies_as_written() -> None:
    text = "class C:\n    def f(self):\n        if x:\n            return 1\n        return 2\n"
    got = patched(
        text,
        " def f(self):",
        " if x:",
        "-            return 1",
        "+            log(x)",
        "+            return 3",
        " return 2",
    )
    assert got == text.replace(
        "            return 1\n", "            log(x)\n            return 3\n"
    )
