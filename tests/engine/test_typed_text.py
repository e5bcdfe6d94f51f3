"""What the agent typed in the text it adds is what is written.

A tolerant match keeps the file's own bytes where the edit leaves old_string
unchanged; in the text the edit adds or changes, the marks the agent typed stay
as typed (a straight quote is not a guess at the file's curly one), and its
escapes are read only when new_string is written in the same escaping as
old_string. Each case was once applied with other bytes than these.
"""

from __future__ import annotations

from difflib import SequenceMatcher

import pytest

from redline.engine.edit import EditItem, EditOutcome, EditRequest, apply_edit
from redline.engine.patch import apply_patch
from redline.engine.patch_plan import MemorySnapshot


def edit(text: str, old: str, new: str, path: str = "f.py") -> EditOutcome:
    return apply_edit(text.encode(), EditRequest(path, (EditItem(old, new),)))


def applied(text: str, old: str, new: str, path: str = "f.py") -> str:
    out = edit(text, old, new, path)
    assert out.result.status == "applied", out.result.error
    assert out.data is not None
    return out.data.decode()


# The file's typographic marks stay out of the text the agent adds (issue 21, C2).
# (path, file, old_string, new_string, expected): the file writes typographic marks
# on a line the edit keeps; the agent quotes it with ASCII ones and adds text with
# ASCII marks of its own.
ADDED_TEXT = [
    (
        "config.py",
        "# See the “config” section\nx = 1\n",
        '# See the "config" section\nx = 1\n',
        '# See the "config" section\nx = load("cfg")\n',
        '# See the “config” section\nx = load("cfg")\n',
    ),
    (
        "README.md",
        "Use the —fast flag — carefully.\n\n    run\n",
        "Use the -fast flag - carefully.\n\n    run\n",
        "Use the -fast flag - carefully.\n\n    run --fast\n",
        "Use the —fast flag — carefully.\n\n    run --fast\n",
    ),
    (
        "notes.md",
        "A list — see below:\n\n",
        "A list - see below:\n\n",
        "A list - see below:\n\n- one\n",
        "A list — see below:\n\n- one\n",
    ),
    (
        "query.sql",
        "/* top — rows */\nSELECT * FROM t LIMIT 10;\n",
        "/* top - rows */\nSELECT * FROM t LIMIT 10;\n",
        "/* top - rows */\nSELECT * FROM t LIMIT 10 - 5;\n",
        "/* top — rows */\nSELECT * FROM t LIMIT 10 - 5;\n",
    ),
    (
        "CHANGES.rst",
        "Fast — and safe.\n\nThis is done.\n",
        "Fast - and safe.\n\nThis is done.\n",
        "Fast - and safe.\n\nThis is well-tested.\n",
        "Fast — and safe.\n\nThis is well-tested.\n",
    ),
    (
        "docs/index.md",
        "It’s a ‘template’:\n\n```python\n",
        "It's a 'template':\n\n```python\n",
        "It's a 'template':\n\n```python\nprint(f'<a href=\"{url}\">')\n",
        "It’s a ‘template’:\n\n```python\nprint(f'<a href=\"{url}\">')\n",
    ),
    (
        "src/lib.rs",
        "// Don’t panic on ‘empty’ input.\nfn parse() {}\n",
        "// Don't panic on 'empty' input.\nfn parse() {}\n",
        "// Don't panic on 'empty' input.\nfn parse() { let c = 'x'; }\n",
        "// Don’t panic on ‘empty’ input.\nfn parse() { let c = 'x'; }\n",
    ),
    (
        "app.js",
        "// the “fast” path\nconst mode = 1;\n",
        '// the "fast" path\nconst mode = 1;\n',
        '// the "fast" path\nconst mode = "fast";\n',
        '// the “fast” path\nconst mode = "fast";\n',
    ),
    (
        "pyproject.toml",
        "# the project’s “name” key\n[project]\n",
        '# the project\'s "name" key\n[project]\n',
        '# the project\'s "name" key\n[project]\nname = "x-y"\n',
        '# the project’s “name” key\n[project]\nname = "x-y"\n',
    ),
    (
        "main.go",
        "// It’s “fine” – really.\nfunc main() {\n",
        '// It\'s "fine" - really.\nfunc main() {\n',
        '// It\'s "fine" - really.\nfunc main() {\n\tfmt.Println("a - b")\n',
        '// It’s “fine” – really.\nfunc main() {\n\tfmt.Println("a - b")\n',
    ),
    (
        "ci.yaml",
        "# “build” — every push\nsteps:\n  - run: make\n",
        '# "build" - every push\nsteps:\n  - run: make\n',
        '# "build" - every push\nsteps:\n  - run: make\n  - run: "make test"\n',
        '# “build” — every push\nsteps:\n  - run: make\n  - run: "make test"\n',
    ),
    (
        "guard.md",
        "The files — the policy and the hooks — take no edit.\n",
        "The files - the policy and the hooks - take no edit.\n",
        "The files take no edit:\n\n- the policy and the hooks\n",
        "The files take no edit:\n\n- the policy and the hooks\n",
    ),
    (
        "notes.txt",
        "注意：不要修改（见上）\nx = 1\n",
        "注意:不要修改(见上)\nx = 1\n",
        "注意:不要修改(见上)\n见(新)\nx = 1\n",
        "注意：不要修改（见上）\n见(新)\nx = 1\n",
    ),
]


@pytest.mark.parametrize(
    ("path", "text", "old", "new", "expected"), ADDED_TEXT, ids=[c[0] for c in ADDED_TEXT]
)
def test_an_ascii_mark_the_agent_adds_is_written_as_typed(
    path: str, text: str, old: str, new: str, expected: str
) -> None:
    assert applied(text, old, new, path) == expected


@pytest.mark.parametrize(
    ("path", "text", "old", "new", "expected"), ADDED_TEXT, ids=[c[0] for c in ADDED_TEXT]
)
def test_an_ascii_mark_a_patch_adds_is_written_as_typed(
    path: str, text: str, old: str, new: str, expected: str
) -> None:
    # The same edit as an apply_patch hunk: context quoted with ASCII marks.
    old_lines, new_lines = old.splitlines(), new.splitlines()
    body = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old_lines, new_lines).get_opcodes():
        if tag == "equal":
            body += [f" {line}" for line in old_lines[i1:i2]]
        else:
            body += [f"-{line}" for line in old_lines[i1:i2]]
            body += [f"+{line}" for line in new_lines[j1:j2]]
    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n" + "\n".join(body) + "\n*** End Patch"
    out = apply_patch(patch, MemorySnapshot({path: text.encode()}))
    assert out.result.status == "applied", out.result.error
    assert [c.after for c in out.changes] == [expected.encode()]


def test_a_changed_line_keeps_the_files_marks_where_the_agent_keeps_old_strings() -> None:
    # The agent's line keeps the quotes of old_string around a word it changes: they
    # are the file's quotes there; the ones it adds are its own.
    text = "# See the “config” section\nx = 1\n"
    got = applied(text, '# See the "config" section\n', '# See the "settings" section ("s")\n')
    assert got == '# See the “settings” section ("s")\nx = 1\n'


def test_a_duplicated_line_takes_the_agents_marks() -> None:
    # A copy of a line the file keeps is text the agent adds: its ASCII quotes stay.
    text = "x = “a”\ny = 1\n"
    got = applied(text, 'x = "a"\ny = 1\n', 'x = "a"\nx = "a"\ny = 1\n')
    assert got.count("“a”") == 1 and got.count('"a"') == 1 and got.endswith("y = 1\n")


def test_curly_quotes_the_agent_types_for_the_files_straight_ones_stay_the_files() -> None:
    # The other direction is unchanged: the agent curls every quote it quotes, so its
    # curled quotes in the added line stand for the file's straight ones.
    text = 'x = "a"\n'
    assert applied(text, "x = “a”\n", "x = “a”\ny = “b”\n") == 'x = "a"\ny = "b"\n'


def test_text_moved_from_another_line_keeps_the_files_marks() -> None:
    # Two lines joined: the text of the second is old_string's, moved, not typed anew.
    text = "#   full option name\n# 处理边界情况（空输入、负数）。\ndef f():\n"
    old = "#   full option name\n# 处理边界情况(空输入、负数).\ndef f():\n"
    new = "#   full option name # 处理边界情况(空输入、负数).\ndef f():\n"
    assert (
        applied(text, old, new)
        == "#   full option name # 处理边界情况（空输入、负数）。\ndef f():\n"
    )


def test_a_hyphen_the_agent_types_is_not_the_dash_it_lines_up_with() -> None:
    # The rewritten line keeps "2.7-3.6" (the file's en dash) and adds "write-behind":
    # its hyphen lines up with the one of "0.82-1.09", which the file writes as a dash.
    text = "a request: 2.7–3.6x; a batch: 0.82–1.09x (quiet)\n"
    old = "a request: 2.7-3.6x; a batch: 0.82-1.09x (quiet)\n"
    new = "a request: 1.72x (2.7-3.6x before the write-behind); a batch: 0.94x\n"
    assert applied(text, old, new) == (
        "a request: 1.72x (2.7–3.6x before the write-behind); a batch: 0.94x\n"
    )


# Escapes in new_string are read only in old_string's escaping (issue 21, C4).


def test_new_string_not_in_old_strings_escaping_is_refused() -> None:
    # old_string escapes its quotes; new_string has plain quotes and a \n inside a
    # string literal: unescaping all of it wrote a real newline into the literal.
    out = edit(
        '    print("Hello, world")\n',
        '    print(\\"Hello, world\\")\n',
        '    print("Hello, world\\n", end="")\n',
    )
    assert (out.result.status, out.data) == ("no_match", None)
    assert "not written in the same escaping" in (out.result.error or "")


# (path, file, old_string, new_string, expected: None for a refusal)
ESCAPED = [
    # old_string ends with a real newline: a \n in new_string is the text \n.
    ("main.go", 'fmt.Printf("%d", n)\n', 'fmt.Printf(\\"%d\\", n)\n',
     'fmt.Printf(\\"%d\\n\\", n)\n', 'fmt.Printf("%d\\n", n)\n'),
    ("src/main.rs", 'println!("{}", x);\n', 'println!(\\"{}\\", x);\n',
     'println!(\\"{}\\n\\", x);\n', 'println!("{}\\n", x);\n'),
    # Plain quotes where old_string escapes them.
    ("app.js", 'console.log("done");\n', 'console.log(\\"done\\");\n',
     'console.log("done\\n");\n', None),
    ("data.json", '{"a": 1}\n', '{\\"a\\": 1}\n', '{\\"a\\": 1, "b": 2}\n', None),
    # An escape old_string gives no evidence for: \n in a one-line old_string.
    ("f.py", 'print("a")\n', 'print(\\"a\\")', 'print(\\"a\\")\\nprint(2)', None),
    # A backslash written plain where old_string escapes backslashes.
    ("f.py", "p = 'C:\\\\tmp'\n", "p = 'C:\\\\\\\\tmp'", "p = 'D:\\dir'", None),
    # The same escaping on both sides: read as the characters they stand for.
    ("f.py", 'print("a")\nprint(2)\n', 'print(\\"a\\")\\nprint(2)',
     'print(\\"b\\")\\nprint(2)', 'print("b")\nprint(2)\n'),
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "text", "old", "new", "expected"),
    ESCAPED,
    ids=[f"{c[0]}-{i}" for i, c in enumerate(ESCAPED)],
)
def test_escapes_in_new_string_are_read_in_old_strings_escaping(
    path: str, text: str, old: str, new: str, expected: str | None
) -> None:
    out = edit(text, old, new, path)
    if expected is None:
        assert (out.result.status, out.data) == ("no_match", None), out.data
    else:
        assert (out.result.status, out.result.match_type) == ("applied", "escaped")
        assert out.data == expected.encode()


# ZWNJ and ZWJ inside the words of scripts that write them are text (issue 21, C8).
ZWNJ, ZWJ = "\u200c", "\u200d"
JOINED = [
    ("f.py", f'x = "می{ZWNJ}روم"\n', f'x = "می{ZWNJ}روم"', f'y = "می{ZWNJ}روم"'),
    ("fa.md", f"من به خانه{ZWNJ}ها می{ZWNJ}روم.\n", f"خانه{ZWNJ}ها", f"خانه{ZWNJ}های ما"),
    ("hi.yaml", f"greeting: नमस्{ZWJ}ते\n", f"greeting: नमस्{ZWJ}ते", f"welcome: नमस्{ZWJ}ते"),
    ("bn.rs", f'let s = "ক্{ZWNJ}ষ";\n', f'let s = "ক্{ZWNJ}ষ";', f'const S: &str = "ক্{ZWNJ}ষ";'),
    ("icons.js", f'const family = "👨{ZWJ}👩{ZWJ}👧";\n', "const family", "export const family"),
    ("fa.py", 'x = "میروم"\n', 'x = "میروم"', f'x = "می{ZWNJ}روم"'),  # the agent adds one
]


@pytest.mark.parametrize(("path", "text", "old", "new"), JOINED, ids=[c[0] for c in JOINED])
def test_zwnj_and_zwj_in_words_are_matched_and_written_as_typed(
    path: str, text: str, old: str, new: str
) -> None:
    out = edit(text, old, new, path)
    assert (out.result.status, out.result.match_type) == ("applied", "exact")
    assert out.result.cleaned == []
    assert out.data == text.replace(old, new, 1).encode()


def test_a_new_string_that_only_adds_an_invisible_character_says_so() -> None:
    out = edit("value = compute()\n", "compute()", "compute\u200b()")
    assert (out.result.status, out.data) == ("invalid", None)
    assert out.result.error is not None
    assert "only by invisible characters" in out.result.error and "U+200B×1" in out.result.error
    # A ZWNJ between Latin letters is no part of the text either.
    out = edit("value = compute()\n", "compute()", f"comp{ZWNJ}ute()")
    assert out.result.error is not None and "U+200C×1" in out.result.error


def test_a_changed_line_keeps_its_own_marks_beside_a_typographic_kept_line() -> None:
    # The block writes '"' two ways: curly on the line the edit keeps, straight on the
    # one it changes. The quotes the changed line keeps are that line's own.
    text = (
        "    again = edit(first, “a = self.vformat(spec,”, “a = self_v2.vformat(spec,”)\n"
        '    assert (again.result.status, again.data) == ("no_change", None)\n'
    )
    old = (
        '    again = edit(first, "a = self.vformat(spec,", "a = self_v2.vformat(spec,")\n'
        '    assert (again.result.status, again.data) == ("no_change", None)\n'
    )
    new = (
        '    again = edit(first, "a = self.vformat(spec,", "a = self_v2.vformat(spec,")\n'
        '    assert (again.result.status, again.data) == ("ambiguous", None)\n'
        '    assert "a retry" in (again.result.error or "")\n'
    )
    assert applied(text, old, new) == text.replace('"no_change"', '"ambiguous"') + (
        '    assert "a retry" in (again.result.error or "")\n'
    )


def test_joined_lines_keep_each_ones_marks_as_the_file_writes_them() -> None:
    # The agent curls every quote; the file writes them straight on one line and curly
    # on the other. Joined, each part keeps the file's own.
    text = 'msg = "done"\n# see “notes”\n'
    got = applied(text, "msg = “done”\n# see “notes”\n", "msg = “done”  # see “notes”\n")
    assert got == 'msg = "done"  # see “notes”\n'


# Marks and indentation at once: the punctuation tier never matches inside indentation.


@pytest.mark.parametrize(
    ("text", "old", "new", "expected"),
    [
        (
            'def f():\n    if x:\n        log("it’s done")\n    return 1\n',
            '    log("it\'s done")\n',
            '    log("it\'s done")\n    y = 2\n',
            'def f():\n    if x:\n        log("it’s done")\n        y = 2\n    return 1\n',
        ),
        (
            "def f():\n    if x:\n        total += len(a) – len(b)\n        held = a\n",
            "    total += len(a) - len(b)\n",
            "",
            "def f():\n    if x:\n        held = a\n",
        ),
    ],
    ids=["insert-after", "delete"],
)
def test_a_line_quoted_shallower_with_other_marks_is_not_matched_inside_its_indentation(
    text: str, old: str, new: str, expected: str
) -> None:
    # Matched after four of the line's eight spaces, the edit wrote "y = 2" four
    # columns out, or left four spaces in front of the next line.
    out = edit(text, old, new)
    assert out.data is None or out.data.decode() == expected
    assert out.result.match_type != "punctuation"
