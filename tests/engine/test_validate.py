"""engine.validate: does a file's new content parse, counting only the errors a change
introduces? One family of parsers at a time, then the comparison rule."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from redline.engine.result import Result
from redline.engine.validate import REPORTED, TREE_SITTER, language_for, refusal, validate

# --- each family of parsers ------------------------------------------------------------


def test_python_is_read_by_the_compiler() -> None:
    ok = validate("pkg/a.py", b"x = 1\n", b"def f(x):\n    return x + 1\n")
    assert ok.to_json() == {
        "path": "pkg/a.py",
        "language": "python",
        "parser": "compile",
        "ok": True,
    }

    bad = validate("pkg/a.py", b"x = 1\n", b"def f(x):\n    return (x + 1\n")
    assert bad.failed
    [error] = bad.errors
    assert (error.line, error.column) == (2, 12)
    assert error.message == "'(' was never closed"
    assert error.text == "    return (x + 1"


def test_python_errors_of_the_compilers_own_stage_count() -> None:
    """A method dedented out of its function: it parses, but does not compile."""
    after = b"class A:\n    def f(self):\n        pass\nreturn 1\n"
    [error] = validate("a.py", None, after).errors
    assert (error.line, error.message, error.text) == (4, "'return' outside function", "return 1")


def test_python_indentation_errors_are_syntax_errors() -> None:
    [error] = validate("a.py", None, b"def f():\nreturn 1\n").errors
    assert error.line == 2
    assert "indented block" in error.message


def test_python_warnings_are_not_errors_and_leave_the_filters_alone() -> None:
    """An invalid escape sequence is a warning of the compiler, not an error; the test
    run turns warnings into errors, and validation must not be fooled by that."""
    before = list(warnings.filters)
    assert not validate("a.py", None, b'PATTERN = "\\d+"\n').failed
    assert warnings.filters == before


def test_python_source_in_a_legacy_encoding_is_read() -> None:
    after = "# coding: latin-1\nNAME = 'café'\n".encode("latin-1")
    assert not validate("a.py", None, after).failed


def test_json() -> None:
    assert not validate("data/x.json", None, b'{"a": [1, 2, {"b": null}]}\n').failed
    [error] = validate("data/x.json", None, b'{\n  "a": 1,\n  "b" 2\n}\n').errors
    assert (error.line, error.column) == (3, 7)
    assert error.message == "Expecting ':' delimiter"
    assert error.text == '  "b" 2'
    assert validate("x.json", None, b"{}").parser == "json"


def test_json_with_comments_by_name_is_read_by_tree_sitter() -> None:
    tsconfig = b'{\n  // strict mode\n  "compilerOptions": {"strict": true}\n}\n'
    report = validate("web/tsconfig.json", None, tsconfig)
    assert (report.language, report.parser, report.failed) == ("jsonc", "tree-sitter", False)
    assert validate("web/data.json", None, tsconfig).failed  # plain JSON has no comments


def test_toml() -> None:
    ok = validate("pyproject.toml", None, b'[project]\nname = "x"\n')
    assert (ok.language, ok.parser, ok.failed) == ("toml", "tomllib", False)
    [error] = validate("a.toml", None, b'[project]\nname = \nversion = "1"\n').errors
    assert (error.line, error.column, error.message) == (2, 8, "Invalid value")
    assert error.text == "name = "


def test_toml_error_at_the_end_of_the_document() -> None:
    [error] = validate("a.toml", None, b"[table").errors
    assert error.line == 1
    assert error.column == len("[table") + 1


def test_yaml() -> None:
    ok = validate("ci.yml", None, b"jobs:\n  test:\n    steps: [a, b]\n---\nsecond: doc\n")
    assert (ok.language, ok.parser, ok.failed) == ("yaml", "pyyaml", False)
    [error] = validate("ci.yaml", None, b"jobs:\n  test: x\n    steps: y\n").errors
    assert (error.line, error.column) == (3, 10)
    assert error.message == "mapping values are not allowed in this context"
    assert error.text == "    steps: y"


def test_yaml_application_tags_are_syntax_not_errors() -> None:
    """CloudFormation's !Ref, Ansible's !vault: a tag no safe loader constructs still parses."""
    after = b"Resources:\n  Bucket:\n    Name: !Ref BucketName\n    Arn: !GetAtt [B, Arn]\n"
    assert not validate("stack.yaml", None, after).failed


def test_typescript_by_tree_sitter_reports_every_error() -> None:
    after = b"const a: number = (1;\nfunction f( {\n  return 2;\n}\n"
    report = validate("src/app.ts", None, after)
    assert (report.language, report.parser) == ("typescript", "tree-sitter")
    assert [(e.line, e.column, e.message) for e in report.errors] == [
        (1, 21, "missing )"),
        (2, 1, "syntax error at 'function f( {'"),
    ]
    assert report.errors[0].text == "const a: number = (1;"


def test_tsx_and_go_by_tree_sitter() -> None:
    component = b"export const A = () => <div className='a'>{x}</div>;\n"
    assert validate("ui/A.tsx", None, component).language == "tsx"
    assert not validate("ui/A.tsx", None, component).failed
    go = b"package main\n\nfunc main() {\n\tx := 1\n\t_ = x\n}\n"
    assert not validate("cmd/main.go", None, go).failed
    broken = validate("cmd/main.go", go, go.replace(b"x := 1", b"x := (1"))
    assert broken.failed and broken.language == "go"
    assert broken.errors[0].line == 4


def test_tree_sitter_columns_count_characters_not_bytes() -> None:
    after = "const s = 'é日本'; const t = (1;\n".encode()
    [error] = validate("a.ts", None, after).errors
    assert error.message == "missing )"
    assert error.column == len("const s = 'é日本'; const t = (1") + 1


@pytest.mark.parametrize("grammar", sorted(TREE_SITTER))
def test_every_grammar_in_the_table_loads_and_reads_an_empty_file(grammar: str) -> None:
    path = "x" + TREE_SITTER[grammar][0]
    report = validate(path, None, b"")
    assert (report.language, report.parser, report.failed) == (grammar, "tree-sitter", False)


def test_an_unknown_extension_is_not_validated_and_says_so() -> None:
    report = validate("notes/todo.xyz", None, b"((((")
    assert report.to_json() == {"path": "notes/todo.xyz", "skipped": "no parser for .xyz files"}
    assert not report.failed
    named = validate("Makefile", None, b"all:\n")
    assert named.skipped is not None and "'Makefile'" in named.skipped
    assert language_for("README") is None
    assert language_for("src/App.TSX") is not None  # extensions in any case


def test_a_binary_file_is_not_validated() -> None:
    report = validate("a.json", None, b"\x00\x01\x02\xff\xfe\x00binary")
    assert report.skipped is not None and report.skipped.startswith("not text")


# --- only introduced errors count ---------------------------------------------------------

BROKEN_TS = b"const broken = (1;\n\nconst ok = 1;\n"


def test_an_already_broken_file_is_not_blocked_by_its_old_errors() -> None:
    after = BROKEN_TS.replace(b"const ok = 1;", b"const ok = 2;\nconst more = 3;")
    report = validate("a.ts", BROKEN_TS, after)
    assert not report.failed
    assert report.preexisting >= 1
    assert report.to_json()["preexisting_errors"] == report.preexisting


def test_an_old_error_that_moved_is_still_old() -> None:
    """Lines shift: the error is compared by its message and its line's text."""
    after = b"// a comment\n// another\n" + BROKEN_TS
    assert not validate("a.ts", BROKEN_TS, after).failed


def test_a_new_error_in_a_broken_file_blocks() -> None:
    after = BROKEN_TS.replace(b"const ok = 1;", b"const ok = (1;")
    report = validate("a.ts", BROKEN_TS, after)
    assert report.failed
    assert [(e.line, e.message, e.text) for e in report.errors] == [
        (3, "missing )", "const ok = (1;")
    ]
    assert report.preexisting == 1


def test_a_copy_of_an_old_error_is_a_new_error() -> None:
    after = BROKEN_TS + b"const broken = (1;\n"
    report = validate("a.ts", BROKEN_TS, after)
    assert report.failed
    assert [e.line for e in report.errors] == [4]


def test_python_broken_before_and_after_at_the_same_place_is_not_blamed() -> None:
    before = b"import os\n\ndef f(:\n    pass\n"
    after = b"import os\nimport sys\n\ndef f(:\n    pass\n"  # the error moved a line down
    report = validate("a.py", before, after)
    assert not report.failed and report.preexisting == 1


def test_python_a_different_first_error_is_introduced() -> None:
    before = b"x = 1\n\ndef f(:\n    pass\n"
    after = b"x = 1 +\n\ndef f(:\n    pass\n"
    report = validate("a.py", before, after)
    assert (report.failed, report.parser) == (True, "compile")
    assert report.errors[0].text == "x = 1 +"


def test_python_an_error_past_the_old_first_one_is_found_by_tree_sitter() -> None:
    """compile stops at the old error; tree-sitter's grammar reads on past it."""
    before = b"def f(:\n    pass\n\nvalue = 1\n"
    after = b"def f(:\n    pass\n\nvalue = (1\n"
    assert validate("a.py", None, after).errors[0].text == "def f(:"  # compile's first error
    report = validate("a.py", before, after)
    assert (report.failed, report.language, report.parser) == (True, "python", "tree-sitter")
    assert report.errors[0].line == 4
    # and the same edit of a line that was fine, past the old error, passes
    fine = validate("a.py", before, before.replace(b"value = 1", b"value = 2"))
    assert not fine.failed


def test_a_new_file_has_no_old_errors() -> None:
    assert validate("new.json", None, b"{").failed


def test_the_report_lists_the_first_few_errors_and_counts_the_rest() -> None:
    after = b"".join(b"const v%d = (1;\n" % i for i in range(REPORTED + 3))
    report = validate("a.ts", b"", after)
    assert len(report.errors) == REPORTED
    assert report.introduced == REPORTED + 3
    data = report.to_json()
    assert data["ok"] is False and data["more_errors"] == 3
    assert [e["line"] for e in data["errors"]] == list(range(1, REPORTED + 1))
    assert "(and 7 more)" in report.describe()


def test_a_refusal_keeps_the_match_evidence_and_says_what_to_do() -> None:
    report = validate("a.py", b"x = 1\n", b"x = (1\n")
    matched = Result("applied", path="a.py", match_type="fuzzy", confidence=0.91)
    refused = refusal(report, matched)
    assert refused.status == "validation_failed"
    assert refused.exit_code == 1
    assert (refused.match_type, refused.confidence) == ("fuzzy", 0.91)
    assert refused.error is not None
    assert refused.error.startswith("the edit would leave a.py unparseable: python syntax error")
    assert refused.hint is not None and "retry" in refused.hint
    assert refused.validation == report.to_json()
    json.dumps(refused.to_dict())  # plain JSON
    assert refusal(report, change="write").error.startswith("the write would leave")  # type: ignore[union-attr]


# --- cost ------------------------------------------------------------------------------

LOADED = """
import json, sys
from redline.engine.validate import validate
validate(sys.argv[1], None, sys.argv[2].encode())
print(json.dumps([m for m in ("yaml", "tree_sitter", "tree_sitter_language_pack")
                  if m in sys.modules]))
"""


@pytest.mark.parametrize(
    ("path", "content", "loaded"),
    [
        ("a.py", "x = 1\n", []),
        ("a.json", "{}", []),
        ("a.yaml", "a: 1\n", ["yaml"]),
        ("a.ts", "let a = 1;\n", ["tree_sitter", "tree_sitter_language_pack"]),
    ],
)
def test_parsers_load_only_for_files_of_their_kind(
    path: str, content: str, loaded: list[str]
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", LOADED, path, content],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == loaded


# --- Python compiled in parts ------------------------------------------------------------

MODULE = (
    '"""A module."""\n\nfrom __future__ import annotations\n\nimport os\n\n\n'
    "@decorate\n@twice\ndef first(a: int) -> int:\n    return a + 1\n\n\n"
    "class Second:\n    def method(self) -> None:\n        pass\n\n\n"
    "async def third() -> None:\n    await first(1)\n"
)


def test_an_edit_of_a_file_validated_before_compiles_only_the_part_it_changed() -> None:
    from redline.engine import pysyntax as module

    module.forget_compiled_parts()
    assert not validate("m.py", None, MODULE.encode()).failed
    known = len(module._known)
    assert known == 4  # the head, first (with its decorators), Second, third
    changed = MODULE.replace("return a + 1", "return a + 2")
    assert not validate("m.py", MODULE.encode(), changed.encode()).failed
    assert len(module._known) == known + 1


def test_parts_keep_the_first_parts_future_imports() -> None:
    """With ``annotations`` from __future__, a yield in an annotation is an error; without
    it, in a nested function, it is not: a part compiled alone must keep the flag."""
    part = "def outer():\n    def f(x: (yield)) -> None:\n        pass\n"
    assert _compiles(part)
    text = "from __future__ import annotations\n\n" + part
    assert not _compiles(text)
    [error] = validate("a.py", None, text.encode()).errors
    assert "annotation" in error.message


def test_a_future_import_after_the_first_part_is_an_error_of_the_file() -> None:
    text = "import os\n\ndef f():\n    pass\n\nfrom __future__ import annotations\n"
    [error] = validate("a.py", None, text.encode()).errors
    assert "from __future__ imports must occur at the beginning of the file" in error.message


def test_a_boundary_inside_a_string_compiles_the_whole_file() -> None:
    text = 'DOC = """\ndef example():\n    return 1\n"""\n\ndef real():\n    return DOC\n'
    assert not validate("a.py", None, text.encode()).failed
    broken = text.replace('    return 1\n"""\n', "    return 1\n")  # the string never closes
    assert validate("a.py", None, broken.encode()).failed


def _compiles(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, "<test>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _stdlib_sources() -> list[str]:
    import sysconfig
    from pathlib import Path

    lib = Path(sysconfig.get_paths()["stdlib"])
    names = ("textwrap.py", "shlex.py", "dataclasses.py", "fractions.py", "ast.py")
    return [(lib / name).read_text() for name in names]


SOURCES = _stdlib_sources()
SLIPS = ["", "(", ")", '"""', "'", ":", "\n", "    ", "\\", "def ", "[", "@", "async ", "}"]


@given(
    st.sampled_from(range(len(SOURCES))),
    st.floats(0, 1),
    st.sampled_from(SLIPS),
    st.integers(0, 3),
)
@settings(max_examples=300)
def test_compiling_in_parts_agrees_with_compiling_whole(
    source: int, where: float, slip: str, cut: int
) -> None:
    """A slip anywhere in a real module: the parts say it compiles only when it does."""
    from redline.engine import pysyntax as module

    text = SOURCES[source]
    at = int(where * len(text))
    mutated = text[:at] + slip + text[at + cut :]
    report = validate("m.py", None, mutated.encode())
    assert report.failed is (not _compiles(mutated))
    if module._compiles_in_parts(mutated):
        assert _compiles(mutated)


# --- Python: a change proved to add no error, without compiling the whole file ----------


def test_a_first_validation_compiles_only_the_parts_the_change_touched() -> None:
    """A process that has not validated the file (each embedded ``redline apply``) compiles
    the changed part as it was and as it is, not the whole file."""
    from redline.engine import pysyntax as module

    module.forget_compiled_parts()
    text = MODULE + "".join(f"\n\ndef more_{i}() -> int:\n    return {i}\n" for i in range(20))
    changed = text.replace("return a + 1", "return a + 2")
    report = validate("m.py", text.encode(), changed.encode())
    assert report.to_json() == {
        "path": "m.py",
        "language": "python",
        "parser": "compile",
        "ok": True,
    }
    assert len(module._known) == 2  # `first` before and after the change
    assert module.adds_no_error(text.encode(), changed.encode())


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # the change closes a string that the next part was inside
        ('X = """\ndef f():\n    pass\n"""\n', 'X = ""\ndef f():\n    pass\n"""\n'),
        # the change is inside a string: the part alone compiles, the file does not
        (
            'X = """\ndef f():\n    pass\n"""\n',
            'X = """\ndef f(): return """\n)"""\n"""\n',
        ),
        # a module-level global after an assignment (the compiler checks the two together)
        ("x = 1\n\ndef f():\n    pass\n", "x = 1\n\ndef f():\n    pass\nglobal x\n"),
        # the change continues the previous line
        ("x = (1 +\n     2)\n\ndef f():\n    pass\n", "x = 1 + \\\n\ndef f():\n    pass\n"),
        # a bracket the change opens in the part before
        ("y = 1\n\n@dec\ndef f():\n    pass\n", "y = (1\n\n@dec\ndef f():\n    pass\n"),
        # the last definition taken away from under its decorator (a blank line between)
        (
            "x = 1\n" * 50 + "@dec\n\ndef f():\n    pass\n",
            "x = 1\n" * 50 + "@dec\n\n",
        ),
    ],
)
def test_a_change_the_parts_alone_would_pass_is_still_refused(before: str, after: str) -> None:
    from redline.engine import pysyntax as module

    assert _compiles(before) and not _compiles(after)
    assert not module.adds_no_error(before.encode(), after.encode())
    assert validate("a.py", before.encode(), after.encode()).failed


def test_a_module_level_global_is_compiled_with_the_rest_of_the_file() -> None:
    text = "x = 1\n\ndef f():\n    pass\nglobal x\n"
    [error] = validate("a.py", None, text.encode()).errors
    assert "global declaration" in error.message


@pytest.mark.parametrize(
    ("text", "top"),
    [
        ("", True),
        ("x = 1\n", True),
        ('x = """\n', False),
        ("x = (\n", False),
        ("x = 1 + \\\n", False),
        ("# it's a comment \\\n", True),
        ("s = 'it''s'\n", True),
        ('s = "a\\"b"\n', True),
        ("s = '''a\n''' + ')'\n", True),
        ("x = ')'\n", True),
        ("x = (]\n", False),
        ("x = '\n", False),
    ],
)
def test_the_scan_of_what_precedes_a_change(text: str, top: bool) -> None:
    from redline.engine.pysyntax import _ends_at_top_level

    assert _ends_at_top_level(text) is top


TRICKY = '''"""Module doc.
def not_code():
    pass
"""
from __future__ import annotations

import os

TEMPLATE = """
def template():
    return 1
"""

@decorate

def spaced():
    return (1
@ 2)

x = f"{1}" + '#'  # comment with "quote
y = ("a"
     "b")

class K:
    value = 1

def last():
    return TEMPLATE \\
        + "x"
'''
# Ends with a decorated definition, a blank line between decorator and definition.
DECORATED_LAST = "x = 1\n" * 40 + "@dec\n\ndef f():\n    pass\n\n@dec\n\ndef g():\n    pass\n"
CHANGE_SOURCES = [*SOURCES, TRICKY, DECORATED_LAST]
CHANGE_SLIPS = [
    *SLIPS,
    "@dec\n\n",
    "global x\n",
    "x = 1\n",
    '"""\n',
    "'''",
    'f"{',
    "#",
    "return 1\n",
    "def g():\n    pass\n",
    "\\\n",
    "from __future__ import annotations\n",
]


@given(
    st.sampled_from(range(len(CHANGE_SOURCES))),
    st.floats(0, 1),
    st.sampled_from(CHANGE_SLIPS),
    st.integers(0, 3),
)
@settings(max_examples=400)
def test_a_change_of_a_file_that_compiles_is_refused_exactly_when_it_does_not_compile(
    source: int, where: float, slip: str, cut: int
) -> None:
    """No false pass, no false refusal: from a file that compiles, the report fails exactly
    when the changed file does not compile, proved in parts or not."""
    from redline.engine.pysyntax import adds_no_error as _python_adds_no_error

    before = CHANGE_SOURCES[source]
    at = int(where * len(before))
    after = before[:at] + slip + before[at + cut :]
    compiles = _compiles(after)
    if _python_adds_no_error(before.encode(), after.encode()):
        assert compiles
    assert validate("m.py", before.encode(), after.encode()).failed is (not compiles)


@given(
    st.sampled_from(range(len(CHANGE_SOURCES))),
    st.floats(0, 1),
    st.sampled_from(CHANGE_SLIPS),
    st.floats(0, 1),
    st.sampled_from(CHANGE_SLIPS),
)
@settings(max_examples=300)
def test_a_change_proved_harmless_leaves_a_file_that_compiled_compiling(
    source: int, first_at: float, first: str, second_at: float, second: str
) -> None:
    """Two slips: the first makes the file before (often broken), the second the change."""
    from redline.engine.pysyntax import adds_no_error as _python_adds_no_error

    text = CHANGE_SOURCES[source]
    at = int(first_at * len(text))
    before = text[:at] + first + text[at:]
    at = int(second_at * len(before))
    after = before[:at] + second + before[at:]
    if _python_adds_no_error(before.encode(), after.encode()) and _compiles(before):
        assert _compiles(after)


@given(
    st.sampled_from(range(len(CHANGE_SOURCES))),
    st.sampled_from(["delete", "repeat", "swap", "prefix", "suffix"]),
    st.integers(-8, 400),
    st.integers(-8, 400),
    st.sampled_from(CHANGE_SLIPS),
)
@settings(max_examples=300)
def test_whole_parts_taken_away_repeated_or_moved(
    source: int, operation: str, first: int, second: int, slip: str
) -> None:
    """Changes of whole top-level parts (the first and last ones often): no false pass,
    no false refusal."""
    from redline.engine.pysyntax import _parts

    before = CHANGE_SOURCES[source]
    parts = _parts(before)
    k, j = first % len(parts), second % len(parts)
    if operation == "delete":
        del parts[k]
    elif operation == "repeat":
        parts.insert(k, parts[k])
    elif operation == "swap":
        parts[k], parts[j] = parts[j], parts[k]
    elif operation == "prefix":
        parts[k] = slip + parts[k]
    else:
        parts[k] += slip
    after = "".join(parts)
    assert validate("m.py", before.encode(), after.encode()).failed is (not _compiles(after))


@given(st.sampled_from(range(len(CHANGE_SOURCES))), st.floats(0, 1), st.sampled_from(CHANGE_SLIPS))
@settings(max_examples=200)
def test_the_scan_agrees_with_the_tokenizer_at_every_part_boundary(
    source: int, where: float, slip: str
) -> None:
    """Where the scan says a part boundary is at the top level, Python's tokenizer does too."""
    import io
    import tokenize

    from redline.engine.pysyntax import _ends_at_top_level, _parts

    text = CHANGE_SOURCES[source]
    at = int(where * len(text))
    text = text[:at] + slip + text[at:]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return
    # The tokens before each boundary, read once in order: the boundaries only move on,
    # so the depth and the last token before one carry over to the next.
    offset = 0
    depth = 0
    last = None
    ahead = iter(tokens)
    token = next(ahead, None)
    for part in _parts(text)[:-1]:
        offset += len(part)
        if not _ends_at_top_level(text[:offset]):
            continue
        line = text.count("\n", 0, offset) + 1  # the boundary begins this line
        while token is not None and token.start < (line, 0):
            assert token.end <= (line, 0), f"a token spans the boundary at line {line}"
            if token.type == tokenize.OP and token.string in "([{":
                depth += 1
            elif token.type == tokenize.OP and token.string in ")]}":
                depth -= 1
            if token.type not in (tokenize.INDENT, tokenize.DEDENT):
                last = token
            token = next(ahead, None)
        assert depth == 0
        assert last is None or last.type in (tokenize.NEWLINE, tokenize.NL)
