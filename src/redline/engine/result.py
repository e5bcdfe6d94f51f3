"""What every caller gets back: the result of one request, as plain data.

:class:`Result` holds every field; :func:`shown` decides what a caller is sent
of it (the fields that say something, or every key with ``--full``) — the one
place that decides it, for ``redline apply``, the daemon and ``redline mcp``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from redline.engine.records import MISSING, defaults, field, names, record
from redline.engine.status import EXIT_CODES

Status = Literal[
    "applied",
    "read",
    "no_change",
    "no_match",
    "ambiguous",
    "invalid",
    "rejected",
    "partially_applied",
    "failed",
    "validation_failed",
]


@record(frozen=True)
class Tolerance:
    """One kind of difference accepted: ``kind`` (a stable name), the file's lines it
    concerns, and ``text``, the difference in words."""

    kind: str
    lines: tuple[int, ...]
    text: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "lines": list(self.lines), "text": self.text}

    @classmethod
    def from_json(cls, data: object) -> Tolerance | None:
        if not isinstance(data, dict):
            return None
        lines = data.get("lines")
        return cls(
            str(data.get("kind", "")),
            tuple(n for n in lines if isinstance(n, int)) if isinstance(lines, list) else (),
            str(data.get("text", "")),
        )


@record(frozen=True)
class Match:
    """One replaced span: lines are 1-based, inclusive, in the file before the edit."""

    match_type: str
    confidence: float
    matched_text: str
    start_line: int
    end_line: int


@record(frozen=True)
class Failure:
    """Why one item of a batch (``index`` into ``edits``) was not applied."""

    index: int
    status: Status
    error: str


@record(frozen=True)
class GroupReport:
    """A file group of a patch: its paths, its operations and, if not applied, why."""

    paths: list[str]
    operations: list[str]
    reason: str | None = None
    validation: list[dict[str, Any]] = field(default_factory=list)  # per file, when asked for
    # Not applied: the status the group would have on its own ("validation_failed",
    # "rejected" or "failed"), and how its weakest hunk matched (None: it did not).
    status: str | None = None
    match_type: str | None = None
    confidence: float | None = None


@record(frozen=True)
class HunkReport:
    """Where one hunk of a patch was placed. Lines are 1-based, in the file before."""

    path: str
    hunk: int
    match_type: str
    confidence: float
    start_line: int
    end_line: int
    other_matches: int
    anchor_found: bool | None
    matched_text: str
    tolerated: list[Tolerance] = field(default_factory=list)  # engine.tolerated


@record(frozen=True)
class CommitReport:
    """Git mode: one commit per file group (external changes come first)."""

    commit: str
    edit: str
    paths: list[str]
    source: Literal["agent", "external"]


@record
class Result:
    """The result of one request, every field (:func:`shown` decides what a caller is sent)."""

    status: Status
    path: str | None = None
    match_type: str | None = None
    confidence: float | None = None
    matched_text: str | None = None
    matches: list[Match] = field(default_factory=list)
    error: str | None = None
    hint: str | None = None
    cleaned: list[str] = field(default_factory=list)
    diff: str | None = None
    # What a tolerant match accepted, in words, with its lines (engine.tolerated): empty
    # for an exact edit
    tolerated: list[Tolerance] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    # A patch's file groups that were applied: ``committed`` in git mode (a commit each),
    # ``written`` in embedded mode (written to the files; nothing is committed there)
    committed: list[GroupReport] = field(default_factory=list)
    written: list[GroupReport] = field(default_factory=list)
    not_applied: list[GroupReport] = field(default_factory=list)
    hunks: list[HunkReport] = field(default_factory=list)
    dry_run: bool = False  # computed only: nothing was written
    session: str | None = None  # git mode: the session the request ran in
    commits: list[CommitReport] = field(default_factory=list)  # git mode: one per file group
    flags: list[dict[str, str]] = field(default_factory=list)  # guard rules the edit broke
    # write and read: the file's text encoding ("utf-8", "utf-8 with BOM", "gb18030", ...)
    # and line-ending style ("lf", "crlf", "cr"; read also "mixed")
    encoding: str | None = None
    line_ending: str | None = None
    # read: the lines asked for, numbered ("{n:>6}\t{line}", 1-based like the edit errors'
    # line numbers), the first and last shown, the file's count, and whether lines follow
    content: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    total_lines: int | None = None
    truncated: bool | None = None
    # Syntax validation, when asked for (engine.validate): the file's report, or in a
    # patch the first file that failed (each group's reports are in its GroupReport).
    validation: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    @property
    def ok(self) -> bool:
        return self.status in ("applied", "no_change", "read")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (what ``dataclasses.asdict`` would give, without its deep copy:
        every field holds strings, numbers, or lists of flat records)."""
        data = {name: getattr(self, name) for name in _RESULT_FIELDS}
        for name in _RECORD_LISTS:
            data[name] = [dict(vars(item)) for item in data[name]]
        for name in ("cleaned", "skipped"):
            data[name] = list(data[name])
        data["flags"] = [dict(flag) for flag in self.flags]
        data["tolerated"] = [t.to_json() for t in self.tolerated]
        for hunk in data["hunks"]:
            hunk["tolerated"] = [t.to_json() for t in hunk["tolerated"]]
        for report in (
            *data["committed"],
            *data["written"],
            *data["not_applied"],
            *data["commits"],
        ):
            report["paths"] = list(report["paths"])
            if "operations" in report:
                report["operations"] = list(report["operations"])
                report["validation"] = [dict(v) for v in report["validation"]]
        if self.validation is not None:
            data["validation"] = dict(self.validation)
        return data


_RESULT_FIELDS = names(Result)
_RECORD_LISTS = (
    "matches",
    "failures",
    "committed",
    "written",
    "not_applied",
    "hunks",
    "commits",
)

# The result contract: every answer carries these, null or not.
CONTRACT = ("status", "path", "match_type", "confidence", "matched_text")


def shown(answer: Mapping[str, Any], full: bool = False) -> dict[str, Any]:
    """What a caller is sent of ``answer`` (a :meth:`Result.to_dict`): with ``full``,
    every key; otherwise the fields that say something for the request at hand.

    - the contract fields (:data:`CONTRACT`) always, null or not;
    - any other field only when it holds something other than its default (no null,
      empty list or ``dry_run: false``); a group's or a hunk's record likewise (no
      ``reason: null``, ``validation: []``…; a field without a default, which the
      JSON Schema requires, stays);
    - one replaced span whose ``matches`` entry repeats the contract fields is given
      as ``start_line``/``end_line`` instead of a ``matches`` list;
    - no ``diff`` when the file now holds exactly what was sent: an applied exact
      match (every hunk exact), nothing cleaned or tolerated, not a dry run. A
      tolerant match keeps its diff, which shows what was written.
    """
    if full:
        return dict(answer)
    out: dict[str, Any] = {}
    for name, value in answer.items():
        if name in CONTRACT or not _is_default(value, _RESULT_DEFAULTS.get(name, MISSING)):
            out[name] = _records(name, value)
    _fold_one_span(out)
    if "diff" in out and _as_sent(out):
        del out["diff"]
    return out


_RESULT_DEFAULTS = defaults(Result)
_RECORD_DEFAULTS = {
    "committed": defaults(GroupReport),
    "written": defaults(GroupReport),
    "not_applied": defaults(GroupReport),
    "hunks": defaults(HunkReport),
}


def _is_default(value: Any, default: Any) -> bool:
    return default is not MISSING and type(value) is type(default) and value == default


def _records(name: str, value: Any) -> Any:
    """The records of list ``name`` without the fields left at their default."""
    defaults = _RECORD_DEFAULTS.get(name)
    if defaults is None or not isinstance(value, list):
        return value
    return [
        {k: v for k, v in record.items() if not _is_default(v, defaults.get(k, MISSING))}
        if isinstance(record, dict)
        else record
        for record in value
    ]


def _fold_one_span(out: dict[str, Any]) -> None:
    matches = out.get("matches")
    if not isinstance(matches, list) or len(matches) != 1 or not isinstance(matches[0], dict):
        return
    span = matches[0]
    if "start_line" in out or "end_line" in out:
        return
    if any(span.get(name) != out.get(name) for name in CONTRACT[2:]):
        return
    del out["matches"]
    out["start_line"], out["end_line"] = span.get("start_line"), span.get("end_line")


def _as_sent(out: Mapping[str, Any]) -> bool:
    """Whether an answer's file holds exactly what the request sent (see :func:`shown`)."""
    if out.get("status") != "applied" or out.get("dry_run") or out.get("match_type") != "exact":
        return False
    if out.get("cleaned") or out.get("tolerated"):
        return False
    return all(
        h.get("match_type") == "exact" and not h.get("tolerated") for h in out.get("hunks", [])
    )
