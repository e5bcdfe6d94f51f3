"""``redline guard``: refuse a commit or push that carries an unapproved flagged edit.

An edit is flagged when it broke a rule at edit time, or when the policy in
force now would flag its evidence. Whether a change (parent tree → new tree)
carries it is decided by gitops.follow, the one decision every gate shares:
the edit is followed by position — the lines it inserted, changed and removed,
with their exact bytes — into the new tree, under the file's new name when it
was moved or copied, and the change carries it unless the new tree undoes it
(its places hold the text from before it again, or its file is gone) or the
parent already held it. A squash merge, a cherry-pick, a rebase or later manual
changes do not slip it through, and equal lines elsewhere in a file prove
nothing. An edit that only deleted lines is carried while they stay deleted.

An edit that rewrote lines of an earlier flagged edit carries that flag
(recorded at edit time, with the earlier edit's id): it is cleared when
either edit is approved.

The guard fails closed: a note it cannot read (``Ledger.unreadable``) blocks
every change touching a path its commit touched, since nothing tells whether
it records a flagged edit; and an edit commit whose note is gone altogether
(hooks.evidence) is refused as an unapproved flagged edit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pygit2

from redline.engine.confidence import shown_confidence
from redline.engine.follow import Span
from redline.engine.follow import describe as describe_spans
from redline.engine.policy import Policy
from redline.engine.records import record
from redline.gitops.follow import Follower, Found, added_paths, blob_id
from redline.gitops.tree_diff import differing
from redline.hooks.ledger import EditRecord, Ledger, RecordedOperation

if TYPE_CHECKING:
    from redline.hooks.claims import Mismatch
    from redline.hooks.evidence import Missing
    from redline.hooks.reproduce import Unreproduced
    from redline.hooks.signed import Ignored
    from redline.settings.policy import PolicyError

_DEPTH = 64  # how far a chain of carried flags is followed before it counts as uncleared


@record(frozen=True)
class Blocked:
    edit: str
    commit: str
    path: str
    start_line: int | None
    end_line: int | None
    match_type: str | None  # None: no text was matched (``op`` says what was done)
    confidence: float | None
    rule: str
    reason: str
    op: str | None = None
    # Where the change's new tree holds the edit now: (first, last) line numbers from 1
    # in ``path`` (see :func:`lines_of`); empty when it holds a file the edit deleted.
    lines: tuple[tuple[int, int], ...] = ()
    edited_as: str | None = None  # the file's name when the edit was made, if it moved since
    # False: no commit here shows what the edit did to ``path`` (its note reached another
    # commit: git joins a dropped commit's note to the next one), so the change counts as
    # carrying it wherever it touches ``path`` (failing closed).
    placed: bool = True


@record(frozen=True)
class Unreadable:
    """A commit whose evidence note cannot be read, and why."""

    commit: str
    reason: str


def flagged_operations(
    entry: EditRecord, policy: Policy, ledger: Ledger | None = None, depth: int = 0
) -> list[tuple[RecordedOperation, str, str]]:
    """(operation, rule, reason) for each flag the edit carries now or carried when made.

    A flag carried over from an earlier edit (it names that edit) is left out once
    the earlier edit is cleared in ``ledger``.
    """
    out = [(op, v.rule, v.reason) for op, v in policy.judge(entry.operations)]
    seen = {(op.path, rule) for op, rule, _ in out}
    for flag in entry.flagged:
        path = str(flag.get("path", ""))
        rule = str(flag.get("rule", "the policy at edit time"))
        if (path, rule) in seen:
            continue
        source = flag.get("edit")
        if source is not None and ledger is not None and cleared(ledger, policy, source, depth):
            continue
        match = next((o for o in entry.operations if o.path == path), None)
        if match is None:  # a flag on a path no operation names: still the edit's
            match = RecordedOperation(path, None, None, None, None)
        out.append((match, rule, str(flag.get("reason", "flagged at edit time"))))
    return out


def cleared(ledger: Ledger, policy: Policy, edit: object, depth: int = 0) -> bool:
    """Whether ``edit`` no longer needs a person: approved, or each flag it has was
    carried over from an edit that is cleared (an edit the ledger lacks is not)."""
    entry = ledger.entries.get(str(edit))
    if entry is None or depth > _DEPTH:
        return False
    return entry.approved or not flagged_operations(entry, policy, ledger, depth + 1)


def blocked(
    repo: pygit2.Repository,
    ledger: Ledger,
    policy: Policy,
    parent: pygit2.Tree | None,
    new: pygit2.Tree | pygit2.Index,
    commits: Sequence[pygit2.Commit] = (),
    follower: Follower | None = None,
) -> list[Blocked]:
    """The unapproved flagged edits that the change ``parent`` → ``new`` carries, each
    named where ``new`` holds it (gitops.follow decides); ``commits`` are the commits the
    change brings, oldest first, in which a moved or copied file is followed."""
    pending = [entry for entry in ledger.entries.values() if not entry.approved]
    if not pending:  # nothing to carry: what the change touches is not read
        return []
    changed = changed_paths(repo, parent, new)
    if not changed:
        return []
    follower = follower or Follower(repo)
    # A file added by the change, or by one of the commits it brings (a rename that
    # reached the parent another way, by a cherry-pick, still names the edit's file here).
    adds = bool(added_paths(new, parent)) or any(follower.added(c) for c in commits)
    found: list[Blocked] = []
    for entry in pending:
        if not adds and not any(op.path in changed for op in entry.operations):
            continue  # nothing of it can have moved: its files are all it has
        flags = flagged_operations(entry, policy, ledger)
        if not flags:
            continue
        held = edit_commits(repo, entry)
        if not held:
            continue
        reported: set[str] = set()
        for op, rule, reason in flags:
            # Every commit holding the edit's note that shows its change is followed, and
            # the change carries the edit if it carries it as one of them shows it: a
            # rebase or an amend copies the note, and git may join a dropped commit's note
            # to another commit, whose own change says nothing of this edit.
            where, commit, showing = None, held[0], 0
            for candidate in held:
                edit = follower.edit(candidate, op.path, moved=op.op != "delete")
                if edit.before == edit.after:
                    continue
                showing += 1
                names = follower.names(edit, commits, parent, new) if adds else list(edit.names)
                if changed.isdisjoint(names):
                    continue
                where = follower.brought(edit, parent, new, names)
                if where is not None:
                    commit = candidate
                    break
            if where is None and not showing and op.path in changed:
                where = Found(op.path, ())
            if where is None or where.path in reported:
                continue
            reported.add(where.path)
            found.append(
                Blocked(
                    entry.edit,
                    str(commit.id),
                    where.path,
                    op.start_line,
                    op.end_line,
                    op.match_type,
                    op.confidence,
                    rule,
                    reason,
                    op.op,
                    lines_of(where.spans),
                    op.path if op.path != where.path else None,
                    placed=bool(showing),
                )
            )
    return sorted(found, key=lambda b: (b.path, b.lines, b.edit))


def in_effect(
    repo: pygit2.Repository,
    commit: pygit2.Commit,
    path: str,
    sides: Iterable[pygit2.Tree | pygit2.Index],
    follower: Follower | None = None,
) -> bool:
    """Whether the change ``commit`` made to ``path`` is still there in one of ``sides``
    (trees, an index): one of them does not undo it, as gitops.follow decides for every
    gate. The change is taken as it was made at ``path`` (removing the file included)."""
    follower = follower or Follower(repo)
    edit = follower.edit(commit, path, moved=False)
    return any(follower.holds(edit, side) is not None for side in sides)


def lines_of(spans: Iterable[Span]) -> tuple[tuple[int, int], ...]:
    """Spans as (first, last) line numbers from 1; a place of deleted lines after line
    ``n`` is (n + 1, n)."""
    return tuple((span.start + 1, span.end) for span in spans)


def where_now(lines: Iterable[tuple[int, int]]) -> str:
    """``lines`` (see :func:`lines_of`) for a person: ``lines 4-5``, ``line 9``, …"""
    return describe_spans([Span(first - 1, last) for first, last in lines])


def unreadable_notes(
    repo: pygit2.Repository,
    ledger: Ledger,
    parent: pygit2.Tree | None,
    new: pygit2.Tree | pygit2.Index,
) -> list[Unreadable]:
    """The unreadable notes whose commits touched a path the change ``parent`` → ``new``
    touches (a note of a commit this repository lacks cannot be carried: skipped)."""
    if not ledger.unreadable:
        return []
    changed = changed_paths(repo, parent, new)
    found: list[Unreadable] = []
    for commit_id, reason in sorted(ledger.unreadable.items()):
        commit = repo.get(commit_id)
        if not isinstance(commit, pygit2.Commit):
            continue
        before = commit.parents[0].tree if commit.parents else None
        if changed_paths(repo, before, commit.tree) & changed:
            found.append(Unreadable(commit_id, reason))
    return found


def changed_paths(
    repo: pygit2.Repository, parent: pygit2.Tree | None, new: pygit2.Tree | pygit2.Index
) -> set[str]:
    if isinstance(new, pygit2.Index):
        if parent is None:
            return {entry.path for entry in new}
        diff = new.diff_to_tree(parent)
    elif parent is None:
        diff = new.diff_to_tree(swap=True)
    else:  # two trees: only the folders they do not share are read
        return {path for path, _, _ in differing(parent, new)}
    paths: set[str] = set()
    for delta in diff.deltas:
        paths.add(delta.old_file.path)
        paths.add(delta.new_file.path)
    return paths


def edit_commits(repo: pygit2.Repository, entry: EditRecord) -> list[pygit2.Commit]:
    """The commits of this repository whose notes hold ``entry``'s edit, those that change
    one of the files its operations name first (in the ledger's order within each)."""
    found: list[pygit2.Commit] = []
    for commit_id in entry.commits:
        obj = repo.get(commit_id)
        if isinstance(obj, pygit2.Commit):
            found.append(obj)
    paths = {op.path for op in entry.operations}
    return sorted(found, key=lambda c: not _changes_any(c, paths))


def carrying_commit(repo: pygit2.Repository, entry: EditRecord) -> pygit2.Commit | None:
    """The commit that shows the edit (see :func:`edit_commits`): None when none is here."""
    held = edit_commits(repo, entry)
    return held[0] if held else None


def _changes_any(commit: pygit2.Commit, paths: set[str]) -> bool:
    parent = commit.parents[0].tree if commit.parents else None
    return any(blob_id(parent, p) != blob_id(commit.tree, p) for p in paths)


def describe(
    found: list[Blocked],
    unreadable: Iterable[Unreadable] = (),
    missing: Iterable[Missing] = (),
    again: str = "commit",
    mismatched: Iterable[Mismatch] = (),
    ignored: Iterable[Ignored] = (),
    unreproduced: Iterable[Unreproduced] = (),
) -> str:
    """The refusal, one edit (or unreadable note, missing one, or note that does not
    describe its commit) per line, and how to clear it; ``again`` is what to do then
    ("commit", "push"). ``ignored``: approvals of refused edits that do not count."""
    parts = [_describe_blocked(found, again)] if found else []
    ignored = list(ignored)
    if ignored:
        parts.append(describe_ignored(ignored))
    missing = list(missing)
    if missing:
        parts.append(describe_missing(missing, "redline guard: refused — ", again))
    unreadable = list(unreadable)
    if unreadable:
        parts.append(describe_unreadable(unreadable, "redline guard: refused — "))
    mismatched = list(mismatched)
    if mismatched:
        from redline.hooks.claims import describe_mismatched

        parts.append(describe_mismatched(mismatched, "redline guard: refused — ", again))
    unreproduced = list(unreproduced)
    if unreproduced:
        from redline.hooks.reproduce import describe_unreproduced

        parts.append(describe_unreproduced(unreproduced, "redline guard: refused — ", again))
    return "\n".join(parts)


def describe_ignored(ignored: list[Ignored]) -> str:
    """The approvals the gate did not count (policy ``approvals = "signed"``), and why."""
    from redline.engine.paths import safe_text

    lines = [
        "Approvals not counted (the policy takes only approvals signed by a key in "
        ".redline/allowed_signers):"
    ]
    for i in ignored:
        said = f"  approval of edit {i.edit} by {i.by} (note of commit {i.commit[:12]}) ignored"
        lines.append(safe_text(f"{said}: {i.reason}", keep=""))
    lines.append(
        "A reviewer whose key is listed approves again with signing set up (`git config "
        "gpg.format ssh`, `git config user.signingkey ~/.ssh/id_ed25519`, then `redline "
        "approve EDIT`)."
    )
    return "\n".join(lines)


def describe_missing(missing: list[Missing], lead: str, again: str | None = None) -> str:
    """Edit commits whose evidence note is gone, and the two ways out."""
    count = len(missing)
    lines = [
        f"{lead}{count} edit commit"
        + ("" if count == 1 else "s")
        + " carr"
        + ("ies" if count == 1 else "y")
        + " a Redline-Edit trailer but no evidence note in refs/notes/redline, so "
        + ("it counts" if count == 1 else "they count")
        + " as unapproved:"
    ]
    lines += [f"  evidence missing for edit {m.edit} (commit {m.commit[:12]})" for m in missing]
    commits = " ".join(dict.fromkeys(m.commit[:12] for m in missing))
    then = f" and {again} again" if again else ""
    lines.append(
        "Fetch the notes that hold the evidence (`git fetch <remote> "
        "refs/notes/redline:refs/notes/redline`), or ask a person to review each commit's "
        f"diff and approve it without its evidence (`redline approve {commits}`){then}."
    )
    return "\n".join(lines)


def describe_broken_policy(error: PolicyError, label: str, committing: bool) -> str:
    """The refusal of a commit or push whose policy file does not parse, and the fix."""
    in_what = label if label.startswith("the ") else f"the {label}"
    fix = (
        f"stage it with `git add {error.file}` and commit again"
        if committing
        else "commit the fixed file and push again"
    )
    return (
        f"redline guard: refused — the guard policy in {in_what} cannot be read:\n"
        f"  {error.source}, {error.where}: {error.problem}\n"
        f"Fix {error.file} (the README's Guard section shows the format), {fix}: every "
        "later agent edit would be judged by a policy redline cannot read."
    )


def describe_unreadable(unreadable: list[Unreadable], lead: str) -> str:
    """What the guard (or review) cannot read, and how to repair it."""
    count = len(unreadable)
    lines = [
        f"{lead}the evidence note of {count} commit"
        + ("" if count == 1 else "s")
        + " in refs/notes/redline cannot be read, so redline cannot tell whether "
        + ("it records" if count == 1 else "they record")
        + " a flagged edit:"
    ]
    lines += [f"  commit {u.commit[:12]}: {u.reason}" for u in unreadable]
    commit = unreadable[0].commit[:12] if count == 1 else "COMMIT"
    lines.append(
        f"Repair the note (`git notes --ref=redline edit {commit}`, or restore refs/notes/redline "
        "from a good copy), or, once a person has reviewed the commit's diff, remove it "
        f"(`git notes --ref=redline remove {commit}`); then try again."
    )
    return "\n".join(lines)


def _describe_blocked(found: list[Blocked], again: str) -> str:
    from redline.engine.paths import safe_text, shown_path  # only to refuse: hooks start light

    count = len({b.edit for b in found})  # one edit may be named at two places
    lines = [
        f"redline guard: refused — {count} flagged edit"
        + ("" if count == 1 else "s")
        + " not yet approved by a person:"
    ]
    for b in found:
        if not b.placed:
            where = "(its own commit is not in this repository: where it is cannot be told)"
        else:
            where = where_now(b.lines) if b.lines else "(deleted)"
        if b.edited_as is not None:
            where += f" (edited as {shown_path(b.edited_as)})"
        how = (
            f"{b.match_type} {shown_confidence(b.confidence)}"
            if b.match_type is not None and b.confidence is not None
            else (b.op or "change")
        )
        lines.append(
            f"  edit {b.edit} (commit {b.commit[:12]}): {shown_path(b.path)} {where}, {how} — "
            + safe_text(f"rule {b.rule}: {b.reason}", keep="")
        )
    edits = " ".join(dict.fromkeys(b.edit for b in found))
    then = f" and {again} again" if again else ""
    lines.append(
        "Review each edit's diff (`redline review`), then approve it with "
        f"`redline approve {edits}`{then}."
    )
    return "\n".join(lines)
