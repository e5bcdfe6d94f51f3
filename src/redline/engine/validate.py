"""Syntax validation: would a file's new content still parse? Pure: bytes in, a report out.

:func:`validate` takes a path and the file's bytes before and after a change
(an edit, a patch's file group, a whole-file write) and says whether the
change leaves the file unparseable. The parser is chosen by the file's name
(:func:`language_for`): Python with the compiler (``compile``, so errors of
the compiler's own stage, such as ``'return' outside function``, count too);
JSON with ``json``; TOML with ``tomllib``; YAML with PyYAML's composer (the C
one when libyaml is there): syntax only, so application tags like ``!Ref`` are
not errors; every other code language in :data:`TREE_SITTER` with tree-sitter's
grammar for it (from tree-sitter-language-pack). A file no parser reads is not
validated, and the report says so.

Only errors the change *introduces* count, so a file that was already broken
is not blocked by its old errors. Errors are compared by what they say and
where, not by line number (lines shift): an error's key is its kind — the
parser's message with line numbers taken out, or for tree-sitter "error" /
"missing X" — and the text of the line it is on, stripped. The errors after the
change, less as many errors of each key as the file had before, are the
introduced ones. Python, JSON, TOML and YAML report only their first error: for
them, a first error after the change that the file did not have before is
introduced; when the file was broken before and after with the same first
error (message and line text), the parser cannot see past it, so the file is
compared again with tree-sitter's grammar for the language, which reports every
error (the report then names tree-sitter as its parser).

The content before is parsed only when the content after has errors: a change
that leaves the file parseable costs one parse. For Python it costs less: the
top-level parts the change touched are compiled alone, as they were and as they
are, and what precedes them is scanned; when that proves nothing, the parts
not compiled before in this process are, then the whole file (engine.pysyntax).
The parsers load on first use (tree-sitter and PyYAML only for a file of their
kind). Callers: an edit (engine.edit, ``EditRequest.validate``), each file of a
patch group (engine.patch.validate_groups); a refused change's result is
:func:`refusal`'s.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from redline.engine.errors import FileFormatError
from redline.engine.pysyntax import adds_no_error, forget_compiled_parts, python_errors
from redline.engine.result import Result
from redline.engine.syntax import TEXT_LIMIT, SyntaxProblem, line_text, source_text

if TYPE_CHECKING:
    import tree_sitter

REPORTED = 5  # errors a report lists
_SCANNED = 1000  # errors read from one tree, at most

# File extensions read with tree-sitter, by the grammar's name in tree-sitter-language-pack.
TREE_SITTER: dict[str, tuple[str, ...]] = {
    "typescript": (".ts", ".mts", ".cts"),
    "tsx": (".tsx",),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "go": (".go",),
    "rust": (".rs",),
    "java": (".java",),
    "c": (".c",),
    # Headers are read as C++: its grammar also reads C, the C grammar not C++.
    "cpp": (".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx"),
    "csharp": (".cs",),
    "ruby": (".rb",),
    "bash": (".sh", ".bash"),
    "php": (".php",),
    "kotlin": (".kt", ".kts"),
    "swift": (".swift",),
    "scala": (".scala",),
    "lua": (".lua",),
    "css": (".css",),
    "scss": (".scss",),
    "html": (".html", ".htm"),
}
# JSON files that by convention hold comments: read as .jsonc.
_JSONC_NAMES = re.compile(
    r"(?:^|/)(?:tsconfig[^/]*|jsconfig[^/]*|\.vscode/[^/]*|devcontainer)\.json$"
)


@dataclass(frozen=True)
class Validation:
    """What validating one file found. ``errors`` are the errors the change introduced
    (the first :data:`REPORTED`); ``preexisting`` counts the errors the file already had
    that are still there (counted when the file was parsed whole); ``skipped`` says why
    the file was not validated."""

    path: str
    language: str | None = None
    parser: str | None = None
    errors: tuple[SyntaxProblem, ...] = ()
    introduced: int = 0  # all the introduced errors, of which ``errors`` lists the first
    preexisting: int = 0
    skipped: str | None = None

    @property
    def failed(self) -> bool:
        return bool(self.errors)

    def to_json(self) -> dict[str, Any]:
        """As results carry it: ``{path, language, parser, ok}`` (with ``errors`` when it
        failed), or ``{path, skipped}``."""
        if self.skipped is not None:
            return {"path": self.path, "skipped": self.skipped}
        data: dict[str, Any] = {
            "path": self.path,
            "language": self.language,
            "parser": self.parser,
            "ok": not self.failed,
        }
        if self.failed:
            data["errors"] = [e.to_json() for e in self.errors]
            if self.introduced > len(self.errors):
                data["more_errors"] = self.introduced - len(self.errors)
        if self.preexisting:
            data["preexisting_errors"] = self.preexisting
        return data

    def note_json(self) -> dict[str, Any]:
        """As a note records it: what was checked, with what."""
        if self.skipped is not None:
            return {"path": self.path, "skipped": self.skipped}
        return {"path": self.path, "language": self.language, "parser": self.parser}

    def describe(self, change: str = "edit") -> str:
        """Why the change (an edit, a patch, a write) is refused, for a result's ``error``."""
        first = self.errors[0]
        more = self.introduced - 1
        also = f" (and {more} more)" if more > 0 else ""
        return (
            f"the {change} would leave {self.path} unparseable: {self.language} syntax error at "
            f"line {first.line}, column {first.column}: {first.message}: "
            f"{first.text.strip()!r}{also}"
        )

    def hint(self) -> str:
        first = self.errors[0]
        return (
            f"{self.path} was not changed. Fix the new text so that it parses as "
            f"{self.language} (line {first.line}: {first.message}) and retry"
        )


@dataclass(frozen=True)
class Language:
    name: str
    parser: str
    errors: Callable[[bytes], list[SyntaxProblem]]  # every error the parser reports
    # The tree-sitter grammar that looks past the first error of a parser that stops there.
    past_first: str | None = None
    # Proves, for less than a whole parse, that a change (the content before, after) adds
    # no error; False: not proved, so the whole file is parsed.
    adds_no_error: Callable[[bytes, bytes], bool] | None = None


def language_for(path: str) -> Language | None:
    """The parser that reads files named like ``path`` (None: none does)."""
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    ext = name[dot:].lower() if dot > 0 else ""
    if ext == ".json" and _JSONC_NAMES.search(path):
        ext = ".jsonc"
    return _BY_EXTENSION.get(ext)


def skipped_reason(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot > 0:
        return f"no parser for {name[dot:]} files"
    return f"no parser for files named {name!r} (the parser is chosen by extension)"


def validate(path: str, before: bytes | None, after: bytes) -> Validation:
    """Does ``after`` (the file at ``path`` once changed; ``before`` None when it is new)
    parse, except for errors ``before`` already had? See the module doc."""
    language = language_for(path)
    if language is None:
        return Validation(path, skipped=skipped_reason(path))
    proves = language.adds_no_error
    if before is not None and proves is not None and proves(before, after):
        return Validation(path, language.name, language.parser)
    try:
        found = language.errors(after)
    except FileFormatError as exc:
        return Validation(path, language.name, language.parser, skipped=f"not text: {exc}")
    if not found:
        return Validation(path, language.name, language.parser)
    old = _errors(language.errors, before)
    parser = language.parser
    introduced, preexisting = _new(found, old)
    if old and not introduced and language.past_first is not None:
        # Broken before and after at the same place: what lies past it, by a grammar
        # that reports every error.
        every = _tree_sitter(language.past_first)
        introduced, preexisting = _new(every(after), _errors(every, before))
        parser = "tree-sitter"
    return Validation(
        path,
        language.name,
        parser,
        tuple(introduced[:REPORTED]),
        len(introduced),
        preexisting,
    )


def _errors(
    errors: Callable[[bytes], list[SyntaxProblem]], data: bytes | None
) -> list[SyntaxProblem]:
    """The errors of the content before a change (none when there was none, or no text)."""
    if data is None:
        return []
    try:
        return errors(data)
    except FileFormatError:
        return []


def _new(
    after: list[SyntaxProblem], before: list[SyntaxProblem]
) -> tuple[list[SyntaxProblem], int]:
    """The errors of ``after`` that ``before`` did not have (by key, counted), and how many
    it did have."""
    old = Counter(e.key() for e in before)
    introduced = []
    for error in after:
        key = error.key()
        if old[key] > 0:
            old[key] -= 1
        else:
            introduced.append(error)
    return introduced, len(after) - len(introduced)


def refusal(report: Validation, matched: Result | None = None, change: str = "edit") -> Result:
    """The ``validation_failed`` result of a change ``report`` refuses: nothing is written.
    ``matched`` is the edit's own result, whose match evidence is kept; ``change`` names
    what was refused in the error ("edit", "write")."""
    result = Result("validation_failed", path=report.path, error=report.describe(change))
    result.hint = report.hint()
    result.validation = report.to_json()
    if matched is not None:
        result.match_type, result.confidence = matched.match_type, matched.confidence
        result.matched_text, result.matches = matched.matched_text, matched.matches
        result.cleaned = matched.cleaned
    return result


# --- JSON, TOML, YAML ------------------------------------------------------------------


def _json(data: bytes) -> list[SyntaxProblem]:
    import json

    text = source_text(data)
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return [SyntaxProblem(exc.lineno, exc.colno, exc.msg, line_text(text, exc.lineno))]
    except RecursionError:
        return [SyntaxProblem(1, 1, "too deeply nested to parse", line_text(text, 1))]
    return []


_TOML_POSITION = re.compile(
    r"^(?P<reason>.*) \(at (?:line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$", re.S
)


def _toml(data: bytes) -> list[SyntaxProblem]:
    import tomllib

    text = source_text(data)
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_POSITION.match(str(exc))
        if found is None:
            return [SyntaxProblem(1, 1, str(exc), line_text(text, 1))]
        if found["line"] is not None:
            line, column = int(found["line"]), int(found["column"])
        else:  # at the end of the document: after its last character
            lines = text.split("\n")
            line, column = len(lines), len(lines[-1]) + 1
        return [SyntaxProblem(line, column, found["reason"], line_text(text, line))]
    except RecursionError:
        return [SyntaxProblem(1, 1, "too deeply nested to parse", line_text(text, 1))]
    return []


@cache
def _yaml_loader() -> tuple[Any, Any]:
    import yaml

    return yaml, getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml(data: bytes) -> list[SyntaxProblem]:
    yaml, loader = _yaml_loader()
    text = source_text(data)
    try:
        for _ in yaml.compose_all(text, Loader=loader):
            pass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        column = mark.column + 1 if mark is not None else 1
        problem = exc.problem or "invalid YAML"
        message = f"{exc.context}: {problem}" if exc.context else problem
        return [SyntaxProblem(line, column, message, line_text(text, line))]
    except yaml.YAMLError as exc:  # a reader error: a character YAML does not allow
        return [SyntaxProblem(1, 1, str(exc).split("\n")[0], line_text(text, 1))]
    except RecursionError:
        return [SyntaxProblem(1, 1, "too deeply nested to parse", line_text(text, 1))]
    return []


# --- tree-sitter -----------------------------------------------------------------------


@cache
def _grammar(name: str) -> tree_sitter.Language:
    from tree_sitter_language_pack import get_language

    return get_language(name)  # type: ignore[arg-type]  # a name from TREE_SITTER


def _tree_sitter(name: str) -> Callable[[bytes], list[SyntaxProblem]]:
    def errors(data: bytes) -> list[SyntaxProblem]:
        import tree_sitter

        text = source_text(data)
        source = data if not data.startswith(b"\xef\xbb\xbf") else data[3:]
        if text.encode("utf-8", "surrogatepass") != source:  # not UTF-8: parse it as UTF-8
            source = text.encode("utf-8", "surrogatepass")
        # A parser per call: parsers are not shared between threads, and one costs
        # microseconds once the grammar is loaded.
        tree = tree_sitter.Parser(_grammar(name)).parse(source)
        return _tree_errors(tree.root_node, source)

    return errors


def _tree_errors(root: tree_sitter.Node, source: bytes) -> list[SyntaxProblem]:
    """The ERROR and MISSING nodes of a tree, in document order (the outermost ERROR
    nodes: the errors inside one are one error)."""
    if not root.has_error:
        return []
    lines = source.split(b"\n")
    found: dict[tuple[int, int, str], SyntaxProblem] = {}  # one error at one place, once
    stack = [root]
    while stack and len(found) < _SCANNED:
        node = stack.pop()
        if node.is_missing:
            problem = _problem(node, lines, f"missing {node.type}", f"missing {node.type}")
        elif node.is_error:
            problem = _problem(node, lines, _unexpected(node, source), "error")
        else:
            stack.extend(reversed([c for c in node.children if c.has_error]))
            continue
        found.setdefault((problem.line, problem.column, problem.message), problem)
    return list(found.values())


def _problem(node: tree_sitter.Node, lines: list[bytes], message: str, kind: str) -> SyntaxProblem:
    row, byte_column = node.start_point
    raw = lines[row] if row < len(lines) else b""
    column = len(raw[:byte_column].decode("utf-8", "replace")) + 1
    text = raw.decode("utf-8", "replace").rstrip("\r")
    if len(text) > TEXT_LIMIT:
        text = text[:TEXT_LIMIT] + "…"
    return SyntaxProblem(row + 1, column, message, text, kind)


def _unexpected(node: tree_sitter.Node, source: bytes) -> str:
    snippet = source[node.start_byte : node.end_byte].decode("utf-8", "replace").strip()
    snippet = snippet.split("\n", 1)[0]
    if not snippet:
        return "syntax error"
    if len(snippet) > 40:
        snippet = snippet[:40] + "…"
    return f"syntax error at {snippet!r}"


# --- the table -------------------------------------------------------------------------


def _languages() -> dict[str, Language]:
    python = Language("python", "compile", python_errors, "python", adds_no_error)
    yaml = Language("yaml", "pyyaml", _yaml, "yaml")
    table = {
        ".py": python,
        ".pyi": python,
        ".pyw": python,
        ".json": Language("json", "json", _json, "json"),
        ".toml": Language("toml", "tomllib", _toml, "toml"),
        ".yaml": yaml,
        ".yml": yaml,
    }
    # JSON with comments (VS Code settings, tsconfig): tree-sitter's JSON grammar reads them.
    table[".jsonc"] = Language("jsonc", "tree-sitter", _tree_sitter("json"))
    for name, extensions in TREE_SITTER.items():
        language = Language(name, "tree-sitter", _tree_sitter(name))
        for ext in extensions:
            table[ext] = language
    return table


_BY_EXTENSION = _languages()


__all__ = [
    "REPORTED",
    "TREE_SITTER",
    "Language",
    "SyntaxProblem",
    "Validation",
    "forget_compiled_parts",
    "language_for",
    "refusal",
    "skipped_reason",
    "validate",
]
