"""``tolerated``: the differences a match accepted, in words, with the lines concerned."""

from __future__ import annotations

from redline.engine.edit import EditItem, EditRequest, apply_edit
from redline.engine.tolerated import lines_of, one_line, where

FILE = (
    "def greet(name):\n"
    "\t# Say \u201chello\u201d to the user by name.\n"
    '\tmessage = f"Hello, {name}!"\n'
    "\treturn message\n"
)


def tolerated(old: str, new: str, text: str = FILE) -> list[dict[str, object]]:
    done = apply_edit(text.encode(), EditRequest("a.py", (EditItem(old, new),)))
    assert done.result.status == "applied", done.result.error
    return done.result.to_dict()["tolerated"]


def test_an_exact_edit_tolerated_nothing() -> None:
    assert tolerated("\treturn message\n", "\treturn message.strip()\n") == []


def test_indentation_and_marks_are_named_with_their_lines() -> None:
    said = tolerated(
        'def greet(name):\n    # Say "hello" to the user by name.\n'
        '    message = f"Hello, {name}!"\n',
        'def greet(name):\n    # Say "hello" to the user by name.\n    message = f"Hi, {name}!"\n',
    )
    assert [(t["kind"], t["lines"]) for t in said] == [("indentation", [2, 3]), ("marks", [2])]
    assert said[0]["text"] == (
        "indentation differed on 2 lines (lines 2-3): 4 spaces sent where the file has a tab; "
        "the file's indentation kept"
    )
    assert "straight quotes sent where the file has \u201c \u201d" in str(said[1]["text"])


def test_a_slip_of_the_pen_names_both_spellings() -> None:
    said = tolerated(
        '\tmesage = f"Hello, {name}!"\n\treturn message\n',
        '\tmesage = f"Hi, {name}!"\n\treturn message\n',
    )
    assert [(t["kind"], t["lines"]) for t in said] == [("slip", [3])]
    assert "'mesage' sent where the file has 'message'" in str(said[0]["text"])


def test_a_line_changed_since_it_was_read_is_kept_and_said() -> None:
    text = "def f(a, b):\n    first = a + 1\n    middle = compute(a, b, c)\n    last = b * 2\n"
    sent = "def f(a, b):\n    first = a + 1\n    middle = other_thing()\n    last = b * 2\n"
    new = "def f(a, b):\n    first = a + 10\n    middle = other_thing()\n    last = b * 2\n"
    said = tolerated(sent, new, text)
    assert [(t["kind"], t["lines"]) for t in said] == [("drift", [3])]
    assert said[0]["text"] == (
        "line 3 changed since the agent read it (old_string quotes another version): kept as "
        "the file has it"
    )


def test_prefixes_escapes_and_fragments_are_named() -> None:
    numbered = tolerated("1: def greet(name):\n", "1: def greet(name, loud):\n")
    assert [(t["kind"], t["lines"]) for t in numbered] == [("prefixes", [1])]
    assert "line numbers ('12: ')" in str(numbered[0]["text"])
    escaped = tolerated(
        '\tmessage = f\\"Hello, {name}!\\"\\n', '\tmessage = f\\"Hey, {name}!\\"\\n'
    )
    assert [(t["kind"], t["lines"]) for t in escaped] == [("escapes", [3])]
    assert '\\"' in str(escaped[0]["text"])
    longer = 'x = 1\n\tmessage = f"Hello, {name}!" + suffix\n'
    part = tolerated('\tf"Hello, {name}!"\n', '\tf"Hey, {name}!"\n', longer)
    assert part == [
        {
            "kind": "fragment",
            "lines": [2],
            "text": "old_string is part of line 2, not a whole line: replaced inside that line",
        }
    ]


def test_a_final_newline_the_file_lacks() -> None:
    said = tolerated("x = 1\ny = 2\n", "x = 1\ny = 3\n", "x = 1\ny = 2")
    assert [(t["kind"], t["lines"]) for t in said] == [("final_newline", [2])]


def test_words_for_lines_and_one_line_summaries() -> None:
    assert where([9]) == "line 9"
    assert where([9, 10, 11]) == "lines 9-11"
    assert where([12, 9]) == "lines 9, 12"
    assert one_line([]) == "nothing (exact)"
    assert lines_of("  a\n", "\ta\n", 5)[0].lines == (5,)
    assert one_line(lines_of("  a\n", "\ta\n", 5)).startswith("indentation differed on 1 line")


def test_a_patch_hunk_says_what_it_tolerated() -> None:
    from redline.engine.patch import apply_patch

    class Files:
        def read(self, path: str) -> bytes | None:
            return FILE.encode() if path == "a.py" else None

        def is_dir(self, path: str) -> bool:
            return False

        def relative(self, path: str) -> str:
            return path

        def mode(self, path: str) -> int:
            return 0o100644

    patch = (
        "*** Begin Patch\n*** Update File: a.py\n@@ def nowhere\n"
        '     # Say "hello" to the user by name.\n'
        '-    message = f"Hello, {name}!"\n+    message = f"Hi, {name}!"\n*** End Patch'
    )
    done = apply_patch(patch, Files())  # type: ignore[arg-type]
    assert done.result.status == "applied", done.result.error
    (hunk,) = done.result.to_dict()["hunks"]
    assert [(t["kind"], t["lines"]) for t in hunk["tolerated"]] == [
        ("anchor", [2, 3]),
        ("indentation", [2, 3]),
        ("marks", [2]),
    ]
