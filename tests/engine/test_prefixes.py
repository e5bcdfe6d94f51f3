"""Display prefixes copied from a view: read without them, and applied only when unique."""

from __future__ import annotations

import pytest

from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit
from redline.engine.prefixes import readings


def edit(text: str, old: str, new: str, path: str = "f.py") -> EditOutcome:
    return apply_edit(text.encode(), EditRequest(path, (EditItem(old, new),)))


# --- readings ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("12: a\n13: b\n", "12: a\n13: c\n", ("a\nb\n", "a\nc\n")),
        ("  12→a\n  13→b", "  12→a\n  13→c", ("a\nb", "a\nc")),
        ("    12\ta\n    13\t\n    14\tb\n", "    12\ta\n    13\tc\n", ("a\n\nb\n", "a\nc\n")),
        ("│ a\n│ b\n", "│ a\n│ c\n", ("a\nb\n", "a\nc\n")),
        ("█ a\n█ b\n", "█ a\n█ c\n", ("a\nb\n", "a\nc\n")),
        (" a\n-b\n", " a\n+c\n", ("a\nb\n", "a\nc\n")),
    ],
)
def test_every_line_without_its_prefix_is_a_reading(
    old: str, new: str, expected: tuple[str, str]
) -> None:
    assert expected in [(r.old, r.new) for r in readings(old, new)]


def test_the_space_after_a_prefix_may_be_the_views_or_the_files() -> None:
    found = {(r.old, r.new) for r in readings("12:     x = 1\n", "12:     x = 2\n")}
    assert found == {("     x = 1\n", "     x = 2\n"), ("    x = 1\n", "    x = 2\n")}


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param("12: a\nb\n", "12: a\n13: b\n", id="a line of old_string without one"),
        pytest.param("12: a\n13: b\n", "12: a\nc\n", id="a line of new_string without one"),
        pytest.param("12: a\n14: b\n", "12: a\n14: c\n", id="numbers that do not count up"),
        pytest.param("12: a\n13→b\n", "12: a\n13→c\n", id="two kinds of number"),
        pytest.param(" a\n b\n", " a\n b\n c\n", id="spaces only: an indentation"),
        pytest.param("-a\n+b\n", "-a\n+c\n", id="a '+' in old_string"),
        pytest.param("", "12: a\n", id="nothing quoted"),
    ],
)
def test_no_reading_unless_every_line_has_a_prefix_of_one_kind(old: str, new: str) -> None:
    assert readings(old, new) == []


# --- the edit tool ---------------------------------------------------------------------

PY = "import os\n\n\ndef main():\n    path = os.getcwd()\n    print(path)\n    return 0\n"

# (path, file, old_string, new_string, expected): every line quoted with a view's prefix.
PREFIXED = [
    (
        "f.py",
        PY,
        "     5\t    path = os.getcwd()\n     6\t    print(path)\n",
        "     5\t    path = os.getcwd()\n     6\t    print(path, flush=True)\n",
        PY.replace("print(path)", "print(path, flush=True)"),
    ),
    (
        "f.py",
        PY,
        "     5→    path = os.getcwd()\n     6→    print(path)",
        "     5→    path = os.getcwd()\n     6→    log(path)\n     7→    print(path)",
        PY.replace("    print(path)", "    log(path)\n    print(path)"),
    ),
    (
        "README.md",
        "# Tool\n\nInstall it:\n\n    pip install tool\n\nThen run it.\n",
        "3: Install it:\n4:\n5:     pip install tool\n",
        "3: Install it with pipx:\n4:\n5:     pipx install tool\n",
        "# Tool\n\nInstall it with pipx:\n\n    pipx install tool\n\nThen run it.\n",
    ),
    (
        "ci.yaml",
        "jobs:\n  test:\n    steps:\n      - run: make\n",
        "│     steps:\n│       - run: make\n",
        "│     steps:\n│       - run: make lint\n│       - run: make\n",
        "jobs:\n  test:\n    steps:\n      - run: make lint\n      - run: make\n",
    ),
    (
        "src/main.rs",
        'fn main() {\n    let x = 1;\n    println!("{}", x);\n}\n',
        '  2 │     let x = 1;\n  3 │     println!("{}", x);\n',
        '  2 │     let x = 2;\n  3 │     println!("{}", x);\n',
        'fn main() {\n    let x = 2;\n    println!("{}", x);\n}\n',
    ),
    (
        "main.go",
        "func main() {\n\tx := 1\n\tfmt.Println(x)\n}\n",
        " func main() {\n-\tx := 1\n",
        " func main() {\n+\tx := 2\n",
        "func main() {\n\tx := 2\n\tfmt.Println(x)\n}\n",
    ),
    (
        "app.js",
        "const a = 1;\nconst b = 2;\nexport { a, b };\n",
        "█ const a = 1;\n█ const b = 2;\n",
        "█ const a = 1;\n█ const b = 3;\n",
        "const a = 1;\nconst b = 3;\nexport { a, b };\n",
    ),
    (
        "f.py",  # the file's last line, without a newline
        "a = 1\nb = 2",
        "1: a = 1\n2: b = 2\n",
        "1: a = 1\n2: b = 3\n",
        "a = 1\nb = 3",
    ),
]


@pytest.mark.parametrize(
    ("path", "text", "old", "new", "expected"),
    PREFIXED,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(PREFIXED)],
)
def test_display_prefixes_on_every_line_are_stripped_and_said(
    path: str, text: str, old: str, new: str, expected: str
) -> None:
    out = edit(text, old, new, path)
    assert (out.result.status, out.result.match_type) == ("applied", "prefixed"), out.result.error
    assert out.data == expected.encode()
    assert out.result.confidence is not None and out.result.confidence < 1.0
    assert out.result.hint is not None and "on every line" in out.result.hint


def test_diff_markers_are_never_written_even_where_the_rest_matches_tolerantly() -> None:
    # Without its markers old_string is in the file only up to indentation. As sent,
    # the whitespace tier took the ' ' markers for indentation and wrote "   +    z = 0".
    text = "def f():\n    if x:\n        y = 1\n"
    out = edit(text, " if x:\n     y = 1\n", " if x:\n+    z = 0\n     y = 1\n")
    assert out.result.status == "applied", out.result.error
    assert out.data == b"def f():\n    if x:\n        z = 0\n        y = 1\n"
    assert out.result.hint is not None and "diff markers" in out.result.hint


@pytest.mark.parametrize(
    ("text", "old", "new"),
    [
        pytest.param("a = 1\nb = 2\na = 1\nb = 2\n", "1: a = 1\n2: b = 2\n", "1: a = 1\n2: b = 3\n",
                     id="found twice without its prefixes"),
        pytest.param("a = 1\nb = 2\n", "1: a = 1\nb = 2\n", "1: a = 1\nb = 3\n",
                     id="one line without a prefix"),
        pytest.param("a = 1\nb = 2\n", "1: a = 1\n3: b = 2\n", "1: a = 1\n3: b = 3\n",
                     id="numbers that skip a line"),
    ],
)  # fmt: skip
def test_prefixes_are_not_stripped_unless_every_line_has_one_and_the_text_is_unique(
    text: str, old: str, new: str
) -> None:
    out = edit(text, old, new)
    assert out.data is None
    assert out.result.status in ("no_match", "ambiguous")


def test_a_file_whose_lines_are_numbered_is_edited_as_it_is() -> None:
    # The numbers are the file's text: old_string is found as sent.
    text = "1: one\n2: two\n3: three\n"
    out = edit(text, "1: one\n2: two\n", "1: one\n2: zwei\n", "list.yaml")
    assert (out.result.status, out.result.match_type) == ("applied", "exact")
    assert out.data == b"1: one\n2: zwei\n3: three\n"


@pytest.mark.parametrize(
    ("path", "text", "old", "new", "expected"),
    [
        (
            "dependabot.yml",
            "updates:\n- package-ecosystem: pip\n  directory: /\n- package-ecosystem: npm\n"
            "  directory: /web\n",
            "- package-ecosystem: pip  \n  directory: /  \n",
            "  directory: /  \n",
            "updates:\n  directory: /\n- package-ecosystem: npm\n  directory: /web\n",
        ),
        (
            "README.rst",
            "Links\n-----\n\n-   Website: https://example.org/\n-   Source: https://example.org/src\n",
            "-   Website: https://example.org/  \n-   Source: https://example.org/src  \n",
            "    Website: https://example.org/  \n    Source: https://example.org/src  \n",
            "Links\n-----\n\n    Website: https://example.org/\n    Source: https://example.org/src\n",
        ),
    ],
)
def test_a_list_whose_items_start_with_a_dash_is_edited_as_sent(
    path: str, text: str, old: str, new: str, expected: str
) -> None:
    # Items at column 0 start with '-' and the lines after them are indented: read as
    # diff markers they would be a deletion, or not the same ' ' lines on both sides.
    # No '+' line: the file's text, matched as sent (here with trailing spaces).
    out = edit(text, old, new, path)
    assert (out.result.status, out.result.match_type) == ("applied", "whitespace")
    assert out.data == expected.encode()
