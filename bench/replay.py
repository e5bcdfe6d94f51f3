"""Replay a git repository's history as edit requests: right, refused or wrong.

    python bench/replay.py [REPO] [-n N] [--quick] [--json OUT] [-v] [--no-baseline]

Every non-merge commit among the last N of REPO (default: this project) becomes
requests against its parent's text, for each modified text file: one exact
``edit`` per diff hunk (context grown until old_string is unique), the same
items as one ``edits`` batch, one Codex ``apply_patch`` per commit, and every
hunk edit again with old_string and new_string perturbed the way a model
quotes text (``tests/perturbations.py``: one perturbation, or two or three at
once), against a copy of the file written with typographic marks while the
agent types ASCII (the reverse marks), or with a slip of the pen. Each result
is compared with the real commit: right (the expected bytes), refused (nothing
written) or wrong (bytes written that differ: the number that must be 0).
In the same run, ``git apply`` on the commits' diffs is timed against
``redline apply --jsonl`` fed the exact hunk edits, one subprocess per commit
for both.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pygit2

from redline.engine.edit import EditItem, EditRequest, apply_edit
from redline.engine.fold import translate_punctuation
from redline.engine.match import find_all, inside_indentation
from redline.engine.patch import apply_patch
from redline.engine.patch_plan import MemorySnapshot

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests"))

from perturbations import (  # noqa: E402
    FORMAT_PERTURBATIONS,
    Perturbation,
    ambiguous_marks,
    combinations,
    erases_trailing_whitespace,
    name_of,
    perturb_chain,
    perturb_pair,
    rewrites_added_text,
    typo_variants,
    typographic,
)

DEFAULT_COMMITS = 300
QUICK_COMMITS = 30
MAX_CONTEXT = 6  # lines of context on each side of a hunk edit, at most
PATCH_CONTEXT = 3
MAX_FILE_BYTES = 300_000
VERDICTS = ("right", "refused", "wrong", "crash")
KINDS = (
    "edit",
    "batch",
    "patch",
    "perturbed",
    "combined",
    "reverse_marks",
    "typo_unchanged",
    "typo_changed",
    "stale_kept",
    "stale_changed",
)
REFUSED_EXAMPLES = 5  # per kind and perturbation, in the JSON output


# --- cases -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HunkEdit:
    """One exact edit: ``old`` → ``new`` turns ``before`` into ``after``."""

    before: str
    after: str
    old: str
    new: str
    start_line: int  # 1-based line of old in before


@dataclass
class FileCase:
    path: str
    parent: str
    child: str
    edits: list[HunkEdit]  # bottom to top: each applies to the previous one's result


@dataclass
class CommitCase:
    index: int  # position in rev-list: 0 is the newest
    sha: str
    parent: str
    files: list[FileCase]


@dataclass
class Record:
    """The outcome of one request."""

    kind: str
    perturbation: str
    verdict: str
    status: str
    match_type: str
    seconds: float
    filetype: str = "-"


@dataclass
class Tally:
    records: list[Record] = field(default_factory=list)
    wrong: list[dict[str, Any]] = field(default_factory=list)
    refused: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    skipped: Counter[str] = field(default_factory=Counter)


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed in {repo}: {proc.stderr.strip()}")
    return proc.stdout


def commits_of(repo: Path, n: int) -> list[tuple[str, str]]:
    """(commit, parent) of the last ``n`` non-merge commits; root commits are left out."""
    out = git(repo, "rev-list", "--no-merges", "--parents", "-n", str(n), "HEAD")
    pairs = []
    for line in out.splitlines():
        shas = line.split()
        if len(shas) == 2:
            pairs.append((shas[0], shas[1]))
    return pairs


def modified_files(repo: Path, parent: str, commit: str, skipped: Counter[str]) -> list[tuple]:
    """(path, parent blob, child blob) of regular files modified in place."""
    out = git(repo, "diff-tree", "-r", "-M", "-z", "--raw", "--no-commit-id", parent, commit)
    tokens = out.split("\0")
    found = []
    i = 0
    while i < len(tokens) and tokens[i].startswith(":"):
        old_mode, new_mode, old_id, new_id, status = tokens[i][1:].split(" ")
        if status[0] in "RC":
            i += 3
            skipped["renamed or copied"] += 1
            continue
        path = tokens[i + 1]
        i += 2
        if status != "M":
            skipped["added, deleted or type changed"] += 1
        elif not {old_mode, new_mode} <= {"100644", "100755"}:
            skipped["symlink or submodule"] += 1
        elif old_id != new_id:
            found.append((path, old_id, new_id))
    return found


def text_of(data: bytes, skipped: Counter[str]) -> str | None:
    if len(data) > MAX_FILE_BYTES:
        skipped["over 300 KB"] += 1
        return None
    if b"\0" in data:
        skipped["binary"] += 1
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        skipped["not UTF-8"] += 1
        return None
    if "\r" in text or text.startswith("\ufeff"):
        skipped["CR line endings or BOM"] += 1
        return None
    return text


def occurs_once(text: str, needle: str) -> bool:
    first = text.find(needle)
    return first >= 0 and text.find(needle, first + 1) < 0


def _context(
    a: list[str], b: list[str], hunk: list[int], lo: int, hi: int
) -> tuple[int, int] | None:
    """Lines of context before/after ``hunk`` that make its old_string unique.

    Unique both in the parent (for the batch) and in the text the edit meets when
    the hunks below it were applied first.
    """
    i1, i2, _j1, j2 = hunk
    parent = "".join(a)
    current = "".join(a[:i2] + b[j2:])
    for c in range(MAX_CONTEXT + 1):
        before, after = min(c, i1 - lo), min(c, hi - i2)
        if i1 == i2 and before + after == 0:
            continue  # a pure insertion needs at least one line to anchor it
        old = "".join(a[i1 - before : i2 + after])
        if old and occurs_once(parent, old) and occurs_once(current, old):
            return before, after
        if before == i1 - lo and after == hi - i2:
            break
    return None


def plan_hunks(a: list[str], b: list[str]) -> tuple[list[list[int]], list[tuple[int, int]]] | None:
    """Diff hunks with their context; neighbours merge when their old_strings would overlap."""
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    hunks = [[i1, i2, j1, j2] for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]
    while hunks:
        contexts: list[tuple[int, int]] = []
        merge_at = None
        for k, hunk in enumerate(hunks):
            lo = hunks[k - 1][1] if k else 0
            hi = hunks[k + 1][0] if k + 1 < len(hunks) else len(a)
            found = _context(a, b, hunk, lo, hi)
            if found is None:
                if len(hunks) == 1:
                    return None
                merge_at = k if k + 1 < len(hunks) else k - 1
                break
            contexts.append(found)
        if merge_at is None:
            for k in range(len(hunks) - 1):
                if hunks[k][1] + contexts[k][1] > hunks[k + 1][0] - contexts[k + 1][0]:
                    merge_at = k
                    break
        if merge_at is None:
            return hunks, contexts
        first, second = hunks[merge_at], hunks[merge_at + 1]
        hunks[merge_at : merge_at + 2] = [[first[0], second[1], first[2], second[3]]]
    return None


def hunk_edits(parent: str, child: str) -> list[HunkEdit] | None:
    a = parent.splitlines(keepends=True)
    b = child.splitlines(keepends=True)
    planned = plan_hunks(a, b)
    if planned is None:
        return None
    hunks, contexts = planned
    edits = []
    for (i1, i2, j1, j2), (before, after) in reversed(list(zip(hunks, contexts, strict=True))):
        head, tail = a[i1 - before : i1], a[i2 : i2 + after]
        edits.append(
            HunkEdit(
                before="".join(a[:i2] + b[j2:]),
                after="".join(a[:i1] + b[j1:]),
                old="".join(head + a[i1:i2] + tail),
                new="".join(head + b[j1:j2] + tail),
                start_line=i1 - before + 1,
            )
        )
    return edits


def codex_patch(files: list[FileCase]) -> str:
    """One Codex patch for every file: ``@@`` hunks with three lines of context."""
    out = ["*** Begin Patch"]
    for case in files:
        a = case.parent.splitlines(keepends=True)
        b = case.child.splitlines(keepends=True)
        out.append(f"*** Update File: {case.path}")
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        for group in matcher.get_grouped_opcodes(PATCH_CONTEXT):
            out.append("@@")
            for tag, i1, i2, j1, j2 in group:
                if tag == "equal":
                    out += [" " + line.rstrip("\n") for line in a[i1:i2]]
                    continue
                out += ["-" + line.rstrip("\n") for line in a[i1:i2]]
                out += ["+" + line.rstrip("\n") for line in b[j1:j2]]
            if group[-1][2] == len(a):
                out.append("*** End of File")
    out.append("*** End Patch")
    return "\n".join(out) + "\n"


def build_commit(
    repo: Path, store: pygit2.Repository, index: int, sha: str, parent: str, tally: Tally
) -> CommitCase:
    files = []
    for path, old_id, new_id in modified_files(repo, parent, sha, tally.skipped):
        old_text = text_of(store[old_id].data, tally.skipped)
        new_text = None if old_text is None else text_of(store[new_id].data, tally.skipped)
        if old_text is None or new_text is None:
            continue
        edits = hunk_edits(old_text, new_text)
        if edits is None:
            tally.skipped["no unique old_string within 6 lines of context"] += 1
            continue
        files.append(FileCase(path, old_text, new_text, edits))
    return CommitCase(index, sha, parent, files)


# --- requests --------------------------------------------------------------------------------


def classify(data: bytes | None, expected: str) -> str:
    if data is None:
        return "refused"
    return "right" if data == expected.encode() else "wrong"


def short_diff(expected: str, got: str, limit: int = 30) -> list[str]:
    lines = list(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            got.splitlines(keepends=True),
            "expected",
            "got",
            n=1,
        )
    )
    return [line.rstrip("\n") for line in lines[:limit]]


_FOLD = str.maketrans({"“": '"', "”": '"', "‘": "'", "’": "'", "–": "-", "—": "-"})


def difference(expected: str, got: str) -> str:
    """A coarse name for how a wrong result differs from the expected one."""
    want, have = expected.splitlines(), got.splitlines()
    if [line.rstrip() for line in want] == [line.rstrip() for line in have]:
        return "trailing whitespace"
    solid_want = [line.rstrip() for line in want if line.strip()]
    solid_have = [line.rstrip() for line in have if line.strip()]
    if solid_want == solid_have:
        return "blank lines"
    if [line.strip() for line in solid_want] == [line.strip() for line in solid_have]:
        return "indentation"
    if "".join(expected.split()) == "".join(got.split()):
        return "whitespace inside lines (tokens joined or split)"
    if expected.translate(_FOLD) == got.translate(_FOLD):
        return "quotes or dashes"
    if sorted(line.strip() for line in solid_want) == sorted(line.strip() for line in solid_have):
        return "lines moved"
    return "content"


def excerpt(text: str, start_line: int, old: str, margin: int = 3) -> str:
    lines = text.splitlines(keepends=True)
    first = max(0, start_line - 1 - margin)
    last = min(len(lines), start_line - 1 + old.count("\n") + 1 + margin)
    return "".join(lines[first:last])


def run_edit(
    tally: Tally,
    commit: CommitCase,
    path: str,
    hunk: HunkEdit,
    kind: str,
    perturbation: str,
    old: str,
    new: str,
    batch: tuple[EditItem, ...] | None = None,
) -> str:
    """Send one request; record and return its verdict."""
    items = batch if batch is not None else (EditItem(old, new),)
    request = EditRequest(path, items, batch=batch is not None)
    started = time.perf_counter()
    try:
        outcome = apply_edit(hunk.before.encode(), request)
    except Exception as exc:  # an engine crash is a finding, not the end of the run
        seconds = time.perf_counter() - started
        tally.records.append(
            Record(kind, perturbation, "crash", "exception", "-", seconds, filetype(path))
        )
        tally.wrong.append(
            {"commit": commit.sha, "path": path, "kind": kind, "perturbation": perturbation,
             "verdict": "crash", "error": repr(exc), "old_string": old, "new_string": new}
        )  # fmt: skip
        return "crash"
    seconds = time.perf_counter() - started
    result = outcome.result
    verdict = classify(outcome.data, hunk.after)
    match_type = result.match_type or "-"
    tally.records.append(
        Record(kind, perturbation, verdict, result.status, match_type, seconds, filetype(path))
    )
    if verdict == "wrong":
        assert outcome.data is not None
        got = outcome.data.decode("utf-8", "replace")
        tally.wrong.append(
            {
                "commit": commit.sha,
                "commit_index": commit.index,
                "path": path,
                "kind": kind,
                "perturbation": perturbation,
                "verdict": "wrong",
                "difference": difference(hunk.after, got),
                "status": result.status,
                "match_type": result.match_type,
                "confidence": result.confidence,
                "start_line": hunk.start_line,
                "file_excerpt": excerpt(hunk.before, hunk.start_line, hunk.old),
                "old_string": old,
                "new_string": new,
                "exact_old_string": hunk.old,
                "exact_new_string": hunk.new,
                "diff": short_diff(hunk.after, got),
            }
        )
    elif verdict == "refused":
        examples = tally.refused[f"{kind}/{perturbation}"]
        if len(examples) < REFUSED_EXAMPLES:
            examples.append(
                {"commit": commit.sha, "path": path, "status": result.status,
                 "error": (result.error or "")[:300], "old_string": old[:500]}
            )  # fmt: skip
    return verdict


_TYPES = {".yml": ".yaml", ".markdown": ".md", ".htm": ".html", ".jsx": ".js", ".tsx": ".ts"}


def filetype(path: str) -> str:
    """The kind of file, by its extension (``.py``, ``.md``, ``.rs``; ``Makefile``)."""
    suffix = Path(path).suffix.lower()
    return _TYPES.get(suffix, suffix) if suffix else Path(path).name


def split_lines(
    old: str, new: str
) -> tuple[list[str], list[str], list[tuple[int, int]], list[int]]:
    """Lines of old and new, pairs (i, j) of lines the edit keeps, and old lines it changes."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    kept: list[tuple[int, int]] = []
    changed: list[int] = []
    for tag, i1, i2, j1, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            kept += [(i1 + k, j1 + k) for k in range(i2 - i1)]
        else:
            changed += range(i1, i2)
    return a, b, kept, changed


def slip(line: str, rng: random.Random) -> str | None:
    body = line.rstrip("\n")
    variants = [v for v in typo_variants(body) if v.strip() != body.strip()]
    if not variants:
        return None
    return rng.choice(variants) + line[len(body) :]


def typographic_file(hunk: HunkEdit) -> HunkEdit | None:
    """The reverse marks: the same hunk in a file written with typographic marks
    (“quotes”, ’, – and —) on every line but those the edit changes, which keep the
    agent's ASCII. The agent sends the ASCII request; the exact request (old and new
    with the file's marks on the lines the edit keeps) gives the expected text.
    None when no line the edit keeps has a mark to change."""
    lines = hunk.before.splitlines(keepends=True)
    a, b, kept, changed = split_lines(hunk.old, hunk.new)
    start = hunk.start_line - 1
    if "".join(lines[start : start + len(a)]) != hunk.old:
        return None
    ascii_lines = {start + i for i in changed}
    file_lines = [
        line if k in ascii_lines else (typographic(line) or line) for k, line in enumerate(lines)
    ]
    block = file_lines[start : start + len(a)]
    if block == a:
        return None
    new_lines = list(b)
    for i, j in kept:
        new_lines[j] = block[i]
    before = "".join(file_lines)
    old, new = "".join(block), "".join(new_lines)
    if not occurs_once(before, old):
        return None
    after = "".join(file_lines[:start] + new_lines + file_lines[start + len(a) :])
    return HunkEdit(before, after, old, new, hunk.start_line)


def erases_part_of_the_edit(old: str, new: str, p_old: str, p_new: str) -> bool:
    """A line the edit changes only in what the perturbation rewrites (a quote made
    straight, a dash made a hyphen) reads as unchanged once perturbed: the request
    no longer says what the edit does, so no engine can give the exact bytes."""

    def changed(a: str, b: str) -> int:
        matcher = difflib.SequenceMatcher(None, a.splitlines(), b.splitlines(), autojunk=False)
        return sum(
            i2 - i1 + j2 - j1 for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"
        )

    return changed(p_old, p_new) < changed(old, new)


def typo_requests(hunk: HunkEdit, rng: random.Random) -> list[tuple[str, str, str]]:
    """(kind, old, new): a slip on a line the edit keeps, and one on a line it changes."""
    a, b, kept, changed = split_lines(hunk.old, hunk.new)
    requests = []
    candidates = [(i, j) for i, j in kept if a[i].strip()]
    rng.shuffle(candidates)
    for i, j in candidates:
        typo = slip(a[i], rng)
        if typo is not None:
            old = "".join([*a[:i], typo, *a[i + 1 :]])
            new = "".join([*b[:j], typo, *b[j + 1 :]])
            requests.append(("typo_unchanged", old, new))
            break
    lines = [i for i in changed if a[i].strip()]
    rng.shuffle(lines)
    for i in lines:
        typo = slip(a[i], rng)
        if typo is not None:
            requests.append(("typo_changed", "".join([*a[:i], typo, *a[i + 1 :]]), hunk.new))
            break
    return requests


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
# The expected text of a request that must be refused: never equal to a result.
MUST_REFUSE = "\x00 refused \x00"


def drifted(line: str, rng: random.Random) -> str | None:
    """``line`` as another writer changed it since the agent read it: a name renamed."""
    names = list(_NAME.finditer(line))
    if not names:
        return None
    name = rng.choice(names)
    return line[: name.end()] + "_rev" + line[name.end() :]


def really_there(old: str, text: str) -> bool:
    """``old`` is text of the file: found, and not only after part of a line's
    indentation (a line-starting text found there is a whitespace match)."""
    return any(not inside_indentation(text, p, old) for p in find_all(text, old))


def _squashed(text: str) -> str:
    return "".join(text.split())


def stale_requests(hunk: HunkEdit, rng: random.Random) -> list[tuple[str, HunkEdit]]:
    """The same request against a file in which someone changed one line of the block
    since the agent read it: an inner line the edit keeps (the edit applies and the
    change survives, or a refusal) and a line the edit changes (a refusal)."""
    if hunk.before.count(hunk.old) != 1:
        return []
    a, b, kept, changed = split_lines(hunk.old, hunk.new)
    if sum(1 for line in a if line.strip()) < 3:
        return []  # a drifted line among fewer others is another block by design
    cases: list[tuple[str, HunkEdit]] = []
    # An inner line: a block's first or last non-blank line is never matched as the
    # drifted one (the window may have slid onto a neighbour there), by design.
    quoted = [i for i, line in enumerate(a) if line.strip()]
    edges = {quoted[0], quoted[-1]}
    candidates = [(i, j) for i, j in kept if a[i].strip() and i not in edges]
    rng.shuffle(candidates)
    for i, j in candidates:
        line = drifted(a[i], rng)
        if line is None:
            continue
        old = "".join([*a[:i], line, *a[i + 1 :]])
        before = hunk.before.replace(hunk.old, old)
        after = before.replace(old, "".join([*b[:j], line, *b[j + 1 :]]))
        cases.append(("stale_kept", HunkEdit(before, after, hunk.old, hunk.new, hunk.start_line)))
        break
    lines = [i for i in changed if a[i].strip()]
    rng.shuffle(lines)
    for i in lines:
        line = drifted(a[i], rng)
        if line is None:
            continue
        before = hunk.before.replace(hunk.old, "".join([*a[:i], line, *a[i + 1 :]]))
        stale = HunkEdit(before, MUST_REFUSE, hunk.old, hunk.new, hunk.start_line)
        cases.append(("stale_changed", stale))
        break
    return cases


def replay_commit(commit: CommitCase, tally: Tally, perturb: bool = True) -> None:
    rng = random.Random(commit.index)
    for case in commit.files:
        for hunk in case.edits:
            run_edit(tally, commit, case.path, hunk, "edit", "exact", hunk.old, hunk.new)
        whole = HunkEdit(case.parent, case.child, "", "", 1)
        items = tuple(EditItem(h.old, h.new) for h in case.edits)
        run_edit(tally, commit, case.path, whole, "batch", "exact", "", "", batch=items)
        if not perturb:
            continue
        for hunk in case.edits:
            for function in FORMAT_PERTURBATIONS:
                send_perturbed(tally, commit, case.path, hunk, "perturbed", (function,))
            applicable = tuple(
                f for f in FORMAT_PERTURBATIONS if perturb_pair(f, hunk.old, hunk.new) is not None
            )
            for size in (2, 3):
                chain = combinations(rng, size, applicable)
                if len(chain) == size:
                    send_perturbed(tally, commit, case.path, hunk, "combined", chain)
            typographic_hunk = typographic_file(hunk)
            if typographic_hunk is not None:
                # The agent types ASCII: the marks are the file's side here.
                formats = tuple(f for f in applicable if f.__name__ not in _MARKS)
                for size in (0, 1, 2):
                    chain = combinations(rng, size, formats)
                    if len(chain) < size:
                        continue
                    send_perturbed(
                        tally, commit, case.path, typographic_hunk, "reverse_marks", chain,
                        request=(hunk.old, hunk.new),
                    )  # fmt: skip
            for kind, old, new in typo_requests(hunk, rng):
                if _squashed(old) in _squashed(hunk.before):
                    tally.skipped[f"{kind}: the slip is other text of the file up to spacing"] += 1
                    continue
                if erases_part_of_the_edit(hunk.old, hunk.new, old, new):
                    # The slip is the edit: the changed line now reads as new_string's,
                    # the same request as one that keeps that line (typo_unchanged).
                    tally.skipped[f"{kind}: the slip makes the changed line read unchanged"] += 1
                    continue
                run_edit(tally, commit, case.path, hunk, kind, "slip", old, new)
            for kind, stale in stale_requests(hunk, rng):
                if _squashed(hunk.old) in _squashed(stale.before):
                    tally.skipped[f"{kind}: old_string is still in the file up to spacing"] += 1
                    continue
                run_edit(tally, commit, case.path, stale, kind, "stale", hunk.old, hunk.new)
    if commit.files:
        replay_patch(commit, tally)


def other_text(old: str, hunk: HunkEdit) -> bool:
    """old_string, as perturbed, is another block of the file, or is one up to its quotes
    and dashes (then the punctuation tier rightly takes that block)."""
    if old != hunk.old and really_there(old, hunk.before):
        return True
    folded = translate_punctuation(old)
    return folded != translate_punctuation(hunk.old) and folded in translate_punctuation(
        hunk.before
    )


_MARKS = ("curly_quotes", "straight_quotes", "dashes", "straight_dashes", "cjk_to_ascii")


def send_perturbed(
    tally: Tally,
    commit: CommitCase,
    path: str,
    hunk: HunkEdit,
    kind: str,
    chain: tuple[Perturbation, ...],
    request: tuple[str, str] | None = None,
) -> None:
    """The hunk's edit with old_string and new_string through ``chain`` in turn, unless
    the result is not a format change of the exact request (each skip is counted)."""
    exact_old, exact_new = request if request is not None else (hunk.old, hunk.new)
    name = name_of(chain)
    if kind == "reverse_marks":
        name = "typographic file" + (f"+{name}" if name else "")
    pair = perturb_chain(chain, exact_old, exact_new)
    if pair is None:
        return
    old, new = pair
    reason = None
    if old == new:
        reason = "nothing left to change"
    elif other_text(old.replace("\r\n", "\n"), hunk):  # as the engine reads it
        reason = "perturbed old_string is other text of the file (up to quotes and dashes)"
    elif any(ambiguous_marks(f, exact_old + exact_new) for f in chain):
        reason = "the edit already has the marks it writes"
    elif erases_part_of_the_edit(exact_old, exact_new, old, new):
        reason = "the perturbation erases part of the edit"
    elif rewrites_added_text(chain, exact_old, exact_new):
        reason = "the perturbation rewrites marks the edit adds"
    elif erases_trailing_whitespace(chain, exact_old, exact_new):
        reason = "the perturbation erases trailing whitespace the edit changes"
    if reason is not None:
        label = name if kind == "perturbed" else kind
        tally.skipped[f"{label}: {reason}"] += 1
        return
    run_edit(tally, commit, path, hunk, kind, name, old, new)


def replay_patch(commit: CommitCase, tally: Tally) -> None:
    patch = codex_patch(commit.files)
    files = {case.path: case.parent.encode() for case in commit.files}
    # An updated file always ends with a newline (DESIGN.md, apply_patch).
    expected = {
        case.path: (case.child if case.child.endswith("\n") else case.child + "\n").encode()
        for case in commit.files
    }
    started = time.perf_counter()
    try:
        outcome = apply_patch(patch, MemorySnapshot(files))
    except Exception as exc:
        seconds = time.perf_counter() - started
        tally.records.append(Record("patch", "exact", "crash", "exception", "-", seconds))
        tally.wrong.append(
            {"commit": commit.sha, "kind": "patch", "verdict": "crash", "error": repr(exc),
             "patch": patch}
        )  # fmt: skip
        return
    seconds = time.perf_counter() - started
    result = outcome.result
    written = {c.path: c.after for c in outcome.changes}
    bad = sorted(p for p, data in written.items() if data != expected.get(p))
    if bad:
        verdict = "wrong"
    elif set(written) == set(expected):
        verdict = "right"
    else:
        verdict = "refused"
    types = sorted({h.match_type for h in result.hunks}) or ["-"]
    tally.records.append(Record("patch", "exact", verdict, result.status, "+".join(types), seconds))
    if verdict == "wrong":
        tally.wrong.append(
            {
                "commit": commit.sha,
                "commit_index": commit.index,
                "kind": "patch",
                "perturbation": "exact",
                "verdict": "wrong",
                "status": result.status,
                "paths": bad,
                "diff": [
                    line
                    for p in bad
                    for line in [
                        f"## {p}",
                        *short_diff(
                            expected[p].decode(),
                            (written[p] or b"").decode("utf-8", "replace"),
                        ),
                    ]
                ],
                "patch": patch,
            }
        )
    elif verdict == "refused":
        examples = tally.refused["patch/exact"]
        if len(examples) < REFUSED_EXAMPLES:
            examples.append(
                {"commit": commit.sha, "status": result.status,
                 "error": (result.error or "")[:300]}
            )  # fmt: skip


# --- baseline: git apply vs redline apply --jsonl ---------------------------------------------


def redline_command() -> list[str]:
    """The console script next to this interpreter (not a pyenv shim: that is a shell)."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / "redline"
        if candidate.is_file():
            return [str(candidate)]
    return [sys.executable, "-c", "from redline.cli.main import main; main()"]


def write_tree(root: Path, files: Iterable[FileCase], prefix: str = "") -> None:
    for case in files:
        target = root / prefix / case.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(case.parent.encode())


def tree_is_child(root: Path, files: Iterable[FileCase], prefix: str = "") -> bool:
    return all((root / prefix / c.path).read_bytes() == c.child.encode() for c in files)


def jsonl_requests(files: Iterable[FileCase], prefix: str = "") -> bytes:
    lines = [
        json.dumps(
            {"tool": "edit", "path": prefix + case.path, "old_string": h.old, "new_string": h.new}
        )
        for case in files
        for h in case.edits
    ]
    return ("\n".join(lines) + "\n").encode()


def jsonl_batches(files: Iterable[FileCase], prefix: str = "") -> bytes:
    """One exact batch per file: the file's hunks as ``edits``, the file written once."""
    lines = [
        json.dumps(
            {
                "tool": "edit",
                "path": prefix + case.path,
                "edits": [{"old_string": h.old, "new_string": h.new} for h in case.edits],
            }
        )
        for case in files
    ]
    return ("\n".join(lines) + "\n").encode()


def timed(command: list[str], data: bytes, cwd: Path, env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(command, input=data, cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - started, proc.returncode


def baseline(repo: Path, commits: list[CommitCase]) -> dict[str, Any]:
    """One subprocess per commit for each tool, alternating which goes first."""
    commits = [c for c in commits if c.files]
    redline = redline_command()
    scratch = Path(tempfile.mkdtemp(prefix="redline-replay-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CEILING_DIRECTORIES"] = str(scratch)
    git_ms: list[float] = []
    red_ms: list[float] = []
    engine_ms = [engine_time(commit) * 1000 for commit in commits]
    git_ok = red_ok = 0
    try:
        for n, commit in enumerate(commits):
            paths = [case.path for case in commit.files]
            diff = subprocess.run(
                ["git", "-C", str(repo), "--literal-pathspecs", "-c", "diff.noprefix=false",
                 "-c", "diff.mnemonicPrefix=false", "diff", "--no-color", "--no-ext-diff",
                 "--no-textconv", "--no-renames", commit.parent, commit.sha, "--", *paths],
                capture_output=True, check=True,
            ).stdout  # fmt: skip
            requests = jsonl_requests(commit.files)
            git_dir, red_dir = scratch / f"git{n}", scratch / f"redline{n}"
            write_tree(git_dir, commit.files)
            write_tree(red_dir, commit.files)
            runs = [
                ("git", ["git", "apply", "--whitespace=nowarn"], diff, git_dir),
                ("redline", [*redline, "apply", "--jsonl", "--root", "."], requests, red_dir),
            ]
            for name, command, data, cwd in runs if n % 2 == 0 else runs[::-1]:
                seconds, code = timed(command, data, cwd, env)
                ok = code == 0 and tree_is_child(cwd, commit.files)
                if name == "git":
                    git_ms.append(seconds * 1000)
                    git_ok += ok
                else:
                    red_ms.append(seconds * 1000)
                    red_ok += ok
        # All commits' edits through one redline process, each commit in its own folder.
        all_dir = scratch / "all"
        requests = b""
        for n, commit in enumerate(commits):
            write_tree(all_dir, commit.files, f"c{n}/")
            requests += jsonl_requests(commit.files, f"c{n}/")
        one_s, code = timed([*redline, "apply", "--jsonl", "--root", "."], requests, all_dir, env)
        one_ok = code == 0 and all(
            tree_is_child(all_dir, c.files, f"c{n}/") for n, c in enumerate(commits)
        )
        # The same, with each file's hunks as one batch: one write a file, as git apply does.
        batch_dir = scratch / "batches"
        batches = b""
        for n, commit in enumerate(commits):
            write_tree(batch_dir, commit.files, f"c{n}/")
            batches += jsonl_batches(commit.files, f"c{n}/")
        batch_s, code = timed(
            [*redline, "apply", "--jsonl", "--root", "."], batches, batch_dir, env
        )
        batch_ok = code == 0 and all(
            tree_is_child(batch_dir, c.files, f"c{n}/") for n, c in enumerate(commits)
        )
        empty_dir = scratch / "empty"
        empty_dir.mkdir()
        floor = [
            timed([*redline, "apply", "--jsonl", "--root", "."], b"", empty_dir, env)[0] * 1000
            for _ in range(1 if len(commits) < 10 else 5)
        ]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not commits:
        return {"commits": 0}
    return {
        "commits": len(commits),
        "requests": sum(len(case.edits) for c in commits for case in c.files),
        "git_apply": _spread(git_ms) | {"right": git_ok},
        "redline_apply_jsonl": _spread(red_ms) | {"right": red_ok},
        "engine_in_process": _spread(engine_ms),
        "ratio_median": round(statistics.median(red_ms) / statistics.median(git_ms), 2),
        "engine_ratio_median": round(statistics.median(engine_ms) / statistics.median(git_ms), 3),
        "ratio_total": round(sum(red_ms) / sum(git_ms), 2),
        "one_process": {
            "total_ms": round(one_s * 1000, 1),
            "right": one_ok,
            "ratio_to_git_total": round(one_s * 1000 / sum(git_ms), 2),
        },
        "one_process_batches": {
            "total_ms": round(batch_s * 1000, 1),
            "right": batch_ok,
            "ratio_to_git_total": round(batch_s * 1000 / sum(git_ms), 2),
        },
        "redline_empty_stream_ms": round(statistics.median(floor), 1),
    }


def engine_time(commit: CommitCase) -> float:
    """Seconds apply_edit takes for a commit's exact hunk edits, in this process."""
    started = time.perf_counter()
    for case in commit.files:
        data = case.parent.encode()
        for hunk in case.edits:
            outcome = apply_edit(data, EditRequest(case.path, (EditItem(hunk.old, hunk.new),)))
            data = outcome.data if outcome.data is not None else data
    return time.perf_counter() - started


def _spread(ms: list[float]) -> dict[str, float]:
    return {
        "median_ms": round(statistics.median(ms), 2),
        "p90_ms": round(_percentile(ms, 0.9), 2),
        "total_ms": round(sum(ms), 1),
    }


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- report ----------------------------------------------------------------------------------


def table(records: list[Record], key: Callable[[Record], str]) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        groups[key(record)].append(record)
    for name, group in groups.items():
        counts = Counter(r.verdict for r in group)
        ms = [r.seconds * 1000 for r in group]
        rows[name] = {"n": len(group)} | {v: counts[v] for v in VERDICTS}
        rows[name] |= {
            "right_pct": round(100 * counts["right"] / len(group), 1),
            "median_ms": round(statistics.median(ms), 3),
            "p90_ms": round(_percentile(ms, 0.9), 3),
        }
    return rows


def print_table(title: str, rows: dict[str, dict[str, Any]], order: Iterable[str] = ()) -> None:
    names = [k for k in order if k in rows] + sorted(k for k in rows if k not in order)
    columns = ["n", *VERDICTS, "right_pct", "median_ms", "p90_ms"]
    print(f"\n{title:24}" + "".join(f"{c:>11}" for c in columns))
    for name in names:
        row = rows[name]
        cells = "".join(
            f"{row[c]:>11.3f}" if c.endswith("_ms") else f"{row[c]:>11}" for c in columns
        )
        print(f"{name:24}{cells}")


def summary_line(label: str, records: list[Record], right_word: str = "right") -> str:
    n = len(records)
    if not n:
        return f"{label}: n=0"
    counts = Counter(r.verdict for r in records)
    line = (
        f"{label}: {right_word} {100 * counts['right'] / n:.1f}% "
        f"refused {100 * counts['refused'] / n:.1f}% wrong {counts['wrong']} (n={n})"
    )
    return line + (f" crashed {counts['crash']}" if counts["crash"] else "")


def summaries(records: list[Record], base: dict[str, Any] | None) -> list[str]:
    of = defaultdict(list)
    for r in records:
        of[r.kind].append(r)
    typos = of["typo_unchanged"] + of["typo_changed"]
    lines = [
        summary_line("exact edits", of["edit"]),
        summary_line("batches", of["batch"]),
        summary_line("patches", of["patch"]),
        summary_line("perturbed", of["perturbed"]),
        summary_line("combined (2-3 perturbations)", of["combined"]),
        summary_line("reverse marks (typographic file, ASCII request)", of["reverse_marks"]),
        summary_line("perturbed, all", of["perturbed"] + of["combined"] + of["reverse_marks"]),
        summary_line("typo", typos, "recovered"),
        summary_line("typo on a kept line", of["typo_unchanged"], "recovered"),
        summary_line("typo on a changed line", of["typo_changed"], "recovered"),
        summary_line("typo and stale line", typos + of["stale_kept"], "recovered"),
        summary_line("stale line the edit keeps", of["stale_kept"], "recovered"),
        summary_line("stale line the edit changes (must refuse)", of["stale_changed"], "right"),
    ]
    if base and base.get("commits"):
        g, r = base["git_apply"], base["redline_apply_jsonl"]
        lines.append(
            f"git apply vs redline apply --jsonl, one process per commit ({base['commits']} "
            f"commits, {base['requests']} edits): median {g['median_ms']} vs {r['median_ms']} ms "
            f"per commit, redline/git {base['ratio_median']}x "
            f"(right {g['right']} and {r['right']} of {base['commits']})"
        )
        one = base["one_process"]
        lines.append(
            f"all commits through one redline process: {one['total_ms']} ms vs git apply "
            f"{g['total_ms']} ms in {base['commits']} processes, "
            f"redline/git {one['ratio_to_git_total']}x; redline's empty stream "
            f"{base['redline_empty_stream_ms']} ms"
        )
        batched = base["one_process_batches"]
        lines.append(
            f"the same, one exact batch per file (each file written once, as git apply does): "
            f"{batched['total_ms']} ms, redline/git {batched['ratio_to_git_total']}x "
            f"(right: {batched['right']})"
        )
        e = base["engine_in_process"]
        lines.append(
            f"the same exact edits through apply_edit in this process: median {e['median_ms']} ms "
            f"per commit, engine/git apply {base['engine_ratio_median']}x"
        )
    return lines


def print_wrong(wrong: list[dict[str, Any]]) -> None:
    print(f"\n{len(wrong)} wrong or crashed:")
    for case in wrong:
        where = case.get("path") or ", ".join(case.get("paths", []))
        print(
            f"- {case['commit'][:10]} {where} {case['kind']}/{case.get('perturbation', '')}: "
            f"{case['verdict']} {case.get('match_type') or ''} {case.get('confidence') or ''} "
            f"({case.get('difference', '')})"
        )
        if "error" in case:
            print(f"    {case['error']}")
        for line in case.get("diff", []):
            print(f"    {line}")


def engine_version() -> str:
    """The commit of the engine measured, and whether src/ has uncommitted changes."""
    head = git(REPO_ROOT, "rev-parse", "--short=10", "HEAD").strip()
    dirty = git(REPO_ROOT, "status", "--porcelain", "--", "src").strip()
    return head + (" + uncommitted changes in src/" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", nargs="?", type=Path, default=REPO_ROOT, help="default: this one")
    parser.add_argument("-n", type=int, default=None, help=f"commits (default {DEFAULT_COMMITS})")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_COMMITS} commits")
    parser.add_argument("--json", type=Path, help="write every figure and every wrong case here")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every wrong case")
    parser.add_argument("--no-baseline", action="store_true", help="skip git apply vs redline")
    args = parser.parse_args(argv)
    n = args.n or (QUICK_COMMITS if args.quick else DEFAULT_COMMITS)
    repo = args.repo.resolve()
    store = pygit2.Repository(git(repo, "rev-parse", "--absolute-git-dir").strip())
    head = git(repo, "rev-parse", "HEAD").strip()
    engine = engine_version()

    started = time.perf_counter()
    tally = Tally()
    commits = [
        build_commit(repo, store, index, sha, parent, tally)
        for index, (sha, parent) in enumerate(commits_of(repo, n))
    ]
    build_s = time.perf_counter() - started
    started = time.perf_counter()
    for commit in commits:
        replay_commit(commit, tally)
    replay_s = time.perf_counter() - started
    base = None if args.no_baseline else baseline(repo, commits)

    files = sum(len(c.files) for c in commits)
    hunks = sum(len(f.edits) for c in commits for f in c.files)
    print(f"engine: redline at {engine}")
    print(
        f"{repo} at {head[:10]}: {len(commits)} commits, {files} modified text files, "
        f"{hunks} hunk edits; built in {build_s:.1f} s, {len(tally.records)} requests "
        f"run in {replay_s:.1f} s"
    )
    kinds = table(tally.records, lambda r: r.kind)
    perturbations = table(
        [r for r in tally.records if r.kind not in ("edit", "batch", "patch")],
        lambda r: r.perturbation if r.kind == "perturbed" else r.kind,
    )
    formatted = [r for r in tally.records if r.kind in ("perturbed", "combined", "reverse_marks")]
    combined = table(
        [r for r in formatted if r.kind != "perturbed"], lambda r: f"{r.kind}: {r.perturbation}"
    )
    filetypes = table(formatted, lambda r: r.filetype)
    match_types = table(
        [r for r in tally.records if r.kind != "patch"], lambda r: f"{r.match_type}"
    )
    patch_types = table([r for r in tally.records if r.kind == "patch"], lambda r: r.match_type)
    refusals = table(
        [r for r in tally.records if r.verdict == "refused"], lambda r: f"{r.kind}: {r.status}"
    )
    print_table("kind", kinds, KINDS)
    print_table("perturbation", perturbations, [f.__name__ for f in FORMAT_PERTURBATIONS])
    print_table("file type (perturbed)", filetypes)
    print_table("match_type (edits)", match_types)
    print_table("match_types (patches)", patch_types)
    print_table("refused as", refusals)
    classes = Counter(
        f"{w['kind']}/{w.get('perturbation')}: {w.get('difference', w['verdict'])}"
        for w in tally.wrong
    )
    if classes:
        print("\nwrong, by how the bytes differ:")
        for name, count in sorted(classes.items()):
            print(f"  {count:5}  {name}")
    if tally.skipped:
        print("\nskipped: " + "; ".join(f"{k} {v}" for k, v in sorted(tally.skipped.items())))
    lines = summaries(tally.records, base)
    print()
    for line in lines:
        print(line)
    if args.verbose and tally.wrong:
        print_wrong(tally.wrong)
    if args.json:
        figures = {
            "repo": str(repo),
            "head": head,
            "engine": engine,
            "commits": len(commits),
            "files": files,
            "hunk_edits": hunks,
            "requests": len(tally.records),
            "seconds": {"build": round(build_s, 2), "replay": round(replay_s, 2)},
            "kinds": kinds,
            "perturbations": perturbations,
            "combinations": combined,
            "filetypes": filetypes,
            "match_types": match_types,
            "patch_match_types": patch_types,
            "refusals": refusals,
            "skipped": dict(tally.skipped),
            "wrong_classes": dict(classes),
            "baseline": base,
            "summary": lines,
            "wrong": tally.wrong,
            "refused_examples": dict(tally.refused),
        }
        args.json.write_text(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
