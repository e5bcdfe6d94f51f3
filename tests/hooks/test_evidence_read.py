"""Evidence people read: what the agent sent beside what the file had, in words.

A tolerant edit to a protected path (a slip of the pen, "KY" for "KEY"), then
``redline review``, ``review --html``, ``log`` and ``guard --range --format
github`` each show the text the agent sent, the text the file had, and the
tolerated difference in words — in the agent's clone, in a teammate's fresh
clone after one fetch, and after ``redline land --squash`` in another fresh
clone, where the request as sent is still there (it travels in the notes ref).
Each test reads what the user sees: the command's output, the page, the file
GitHub shows.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pygit2
import pytest
from guard_fixtures import (
    FUZZY_NEW,
    FUZZY_OLD,
    MIGRATION,
    MIGRATION_RULE,
    Flagged,
    flagged_edit,
    head,
    install_hooks,
    redline,
    refusal,
    run_git,
    user_repo,
)

from gitmode_fixtures import git
from redline.gitops import notes

SLIP = "a slip of the pen on line 2: 'KY' sent where the file has 'KEY'"
SENT_LINE = "    id INTEGER PRIMARY KY,"
FILE_LINE = "    id INTEGER PRIMARY KEY,"


def clone(origin: Path, path: Path, name: str, email: str) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(path))
    git(path, "config", "user.name", name)
    git(path, "config", "user.email", email)
    return path


def fetched_clone(origin: Path, path: Path) -> Path:
    """A new clone of ``origin`` that fetched the evidence once (`redline notes setup`)."""
    fresh = clone(origin, path, "Carol", "carol@example.com")
    redline(fresh, "notes", "setup", "--repo", str(fresh), check=True)
    git(fresh, "fetch", "-q")
    return fresh


class Page(HTMLParser):
    """The review page's structure: sections, the cells of each side, marks, commands."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.sections: list[str] = []
        self.cells: dict[str, list[str]] = {"sent": [], "found": []}
        self.marks: list[str] = []
        self.tolerated: list[str] = []
        self.approve: list[str] = []
        self.links: list[str] = []
        self._open: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append(tag)
        self.links += [v for k, v in attrs if k in ("src", "href") and v]
        if tag == "section":
            self.sections.append(str(found.get("id")))
        classes = str(found.get("class") or "").split()
        kind = next((c for c in ("sent", "found", "approve") if c in classes), "")
        if tag == "td" and kind in ("sent", "found"):
            self.cells[kind].append("")
        self._open.append((tag, kind or ("li" if tag == "li" else "")))

    def handle_endtag(self, tag: str) -> None:
        while self._open and self._open.pop()[0] != tag:
            pass

    def handle_data(self, data: str) -> None:
        kinds = [k for _, k in self._open]
        if "sent" in kinds or "found" in kinds:
            self.cells["sent" if "sent" in kinds else "found"][-1] += data
        if self._open and self._open[-1][0] == "mark":
            self.marks.append(data)
        if "li" in kinds:
            self.tolerated.append(data)
        if "approve" in kinds:
            self.approve.append(data)


def shows_review(repo: Path, f: Flagged, tmp_path: Path) -> None:
    proc = redline(repo, "review", "--repo", str(repo), check=True)
    out = proc.stdout
    assert f"edit {f.edit} (commit {f.commit[:12]}): {MIGRATION} lines 2-4 fuzzy" in out
    assert f"  rule {MIGRATION_RULE}: match_type fuzzy is not one of: exact\n" in out
    assert f"  tolerated: {SLIP}; merged with the file's text\n" in out
    beside = [line for line in out.splitlines() if " | " in line]
    assert beside[0].split(" | ") == [
        "  the agent sent (old_string)".ljust(46),
        "redline found in the file (lines 2-4)",
    ]
    assert [b.split(" | ")[0].strip() for b in beside[1:]] == [
        "····id INTEGER PRIMARY KY,",
        "····name TEXT NOT NULL,",
        "····email TEXT",
    ]
    assert beside[1].split(" | ")[1] == "····id INTEGER PRIMARY KEY,"
    assert "+    created_at TIMESTAMP" in out  # then the diff
    assert f"  approve: redline approve {f.edit}\n" in out

    page_file = tmp_path / f"review-{repo.name}.html"
    shown = redline(repo, "review", "--repo", str(repo), "--html", str(page_file), check=True)
    assert f"review page written to {page_file} (open it in a browser)" in shown.stdout
    page = Page()
    page.feed(page_file.read_text(encoding="utf-8"))
    assert page.sections == [f"edit-{f.edit}"]
    assert page.cells["sent"][0] == "····id INTEGER PRIMARY KY,"
    assert page.cells["found"][0] == "····id INTEGER PRIMARY KEY,"
    assert (
        page.cells["sent"][1:]
        == page.cells["found"][1:]
        == [
            "····name TEXT NOT NULL,",
            "····email TEXT",
        ]
    )
    assert page.marks == ["E"]  # the one character that differs, marked on the file's side
    assert any(SLIP in text for text in page.tolerated)
    assert page.approve == [f"redline approve {f.edit}"]
    assert "script" not in page.tags and "link" not in page.tags and page.links == []


def shows_guard(repo: Path, f: Flagged, spec: str, tmp_path: Path, approved_by: str = "") -> None:
    summary = tmp_path / f"summary-{repo.name}.md"
    proc = redline(repo, "guard", "--range", spec, "--format", "github", "--summary", str(summary))
    lines = proc.stdout.splitlines()
    level, state = ("notice", f"approved by {approved_by}") if approved_by else (
        "error", "unapproved flagged edit"
    )  # fmt: skip
    state = state.replace(":", "%3A").replace(",", "%2C")
    assert proc.returncode == (0 if approved_by else 1), proc.stderr
    [annotation] = [line for line in lines if line.startswith("::")]
    head_part, message = annotation.split("::", 2)[1:]
    assert head_part == (
        f"{level} file={MIGRATION},line=4,endLine=5,"
        f"title=redline%3A {state} {f.edit} (fuzzy 0.9924)"
    )
    said = message.split("%0A")
    assert said[:2] == [
        f"rule {MIGRATION_RULE}: match_type fuzzy is not one of: exact",
        f"tolerated: {SLIP}; merged with the file's text",
    ]
    assert said[2:6] == ["the agent sent:", SENT_LINE, "    name TEXT NOT NULL,", "    email TEXT"]
    assert said[6:8] == ["the file had:", FILE_LINE]
    assert (said[-1] == f"after review: redline approve {f.edit}") != bool(approved_by)
    assert lines[-1].startswith(f"redline guard --range {spec}: ")
    markdown = summary.read_text(encoding="utf-8")
    assert f"### edit `{f.edit}` — `{MIGRATION}` lines 4-5 (fuzzy 0.9924)" in markdown
    assert f"- tolerated: {SLIP}; merged with the file's text\n" in markdown
    assert f"The agent sent:\n\n````\n{FUZZY_OLD}````\n" in markdown
    assert f"The file had:\n\n````\n{FILE_LINE}\n" in markdown


def shows_log(repo: Path, f: Flagged, *args: str, state: str) -> None:
    out = redline(repo, "log", "--repo", str(repo), *args, check=True).stdout
    lines = out.splitlines()
    [first] = [n for n, line in enumerate(lines) if f"edit {f.edit}]" in line]
    assert lines[first].endswith(f"[agent, edit {f.edit}] {state}")
    assert lines[first + 1] == f"    edit {MIGRATION} lines 2-4 fuzzy 0.9924"
    assert lines[first + 2] == f"    tolerated: {SLIP}; merged with the file's text"


@pytest.mark.slow
def test_review_log_and_ci_show_the_request_beside_the_file_here_and_in_fresh_clones(
    tmp_path: Path,
) -> None:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    seed = user_repo(tmp_path / "seed")
    git(seed, "push", "-q", str(origin), "main")
    base = head(seed)
    a = clone(origin, tmp_path / "a", "Alice", "alice@example.com")
    install_hooks(a)
    f = flagged_edit(a)
    assert f.result["tolerated"] == [
        {"kind": "slip", "lines": [2], "text": f"{SLIP}; merged with the file's text"}
    ]

    # Where the agent worked
    shows_review(a, f, tmp_path)
    shows_log(a, f, "s", state=f"flagged, not approved (`redline approve {f.edit}` once reviewed)")
    shows_guard(a, f, f"main..{f.branch}", tmp_path)

    # A teammate's fresh clone, one fetch: the branch and the evidence
    refusal(run_git(a, "push", "origin", f.branch))
    git(a, "push", "-q", "--no-verify", "origin", f.branch)
    redline(a, "notes", "sync", "--repo", str(a), check=True)
    b = fetched_clone(origin, tmp_path / "b")
    shows_review(b, f, tmp_path)
    shows_log(b, f, "--range", f"main..origin/{f.branch}", state="flagged, not approved "
              f"(`redline approve {f.edit}` once reviewed)")  # fmt: skip
    shows_guard(b, f, f"main..origin/{f.branch}", tmp_path)

    # Approved, landed as one squash commit, pushed with its notes by the pre-push hook
    redline(a, "approve", f.edit, "--repo", str(a), check=True)
    redline(a, "land", "s", "--squash", "--repo", str(a), check=True)
    git(a, "push", "-q", "origin", "main")
    c = fetched_clone(origin, tmp_path / "c")
    alice = "Alice <alice@example.com>"
    shows_log(c, f, "--range", f"{base}..main", state=f"approved by {alice}")
    shows_guard(c, f, f"{base}..main", tmp_path, approved_by=alice)
    assert (
        "nothing waiting: every flagged edit is approved"
        in redline(c, "review", "--repo", str(c), check=True).stdout
    )

    # The request as sent, whole, read back from the squash commit's note in the clone
    repo = pygit2.Repository(str(c))
    squash = repo.revparse_single("main").peel(pygit2.Commit)
    note = notes.read_note(repo, squash.id)
    assert note is not None and note["tool"] == "squash"
    sent = notes.request_of(repo, note, f.edit)
    assert sent is not None
    assert (sent.tool, sent.path) == ("edit", MIGRATION)
    assert sent.arguments["edits"] == [
        {"old_string": FUZZY_OLD, "new_string": FUZZY_NEW, "replace_all": False}
    ]
    request = sent.request()
    assert request.edits[0].old_string == FUZZY_OLD  # type: ignore[union-attr]
    listed = git(c, "ls-tree", "-r", "--name-only", "refs/notes/redline").split()
    blob = note["squashed"][0]["sent"]["blob"]
    assert f"requests/{blob[:2]}/{blob[2:]}" in listed
    # git's own notes commands keep the folder: a non-note entry to them
    git(c, "notes", "--ref=redline", "add", "-m", "a note by hand", base)
    assert (
        f"requests/{blob[:2]}/{blob[2:]}"
        in git(c, "ls-tree", "-r", "--name-only", "refs/notes/redline").split()
    )


def test_a_review_page_that_cannot_be_written_says_where_and_what_to_do(tmp_path: Path) -> None:
    repo = user_repo(tmp_path / "repo")
    flagged_edit(repo)
    target = tmp_path / "missing" / "review.html"
    proc = redline(repo, "review", "--repo", str(repo), "--html", str(target))
    assert proc.returncode == 1
    assert proc.stderr == (
        f"redline: cannot write the review page to {target}: No such file or directory; "
        "name a file in a folder you can write to\n"
    )
