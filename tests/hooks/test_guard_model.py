"""The gates against a model: random agent edits and git operations, an oracle of git's own.

A small repository protects ``auth/**`` (``require = "exact"``). An agent's
session (driven in-process, as the daemon drives it) makes exact and tolerant
edits on protected and unprotected files, moves (an apply_patch ``*** Move
to`` with a context-only hunk), copies (``write`` of a file's content) and
deletes; a person squash-merges, merges, cherry-picks, rebases, amends, reverts
and edits by hand on main (the ``git`` binary), and approves some flagged edits.

The oracle never asks the guard: a flagged edit — before ``B0``, after ``B1``,
path ``P`` — is present in a tree ``T`` when ``P``, or a name the model saw the
agent move or copy it to since, is in ``T`` and ``git merge-file`` of that file
with base ``B1`` and "theirs" ``B0`` (taking the edit back) changes it. Every
gate — the commit hook's verdict on a staged squash, ``redline guard --range``
from the start of main, the session's range, and ``redline land`` both ways —
must refuse whenever an uncleared flagged edit is present in what it judges and
not in its base, naming that edit (itself, or through the flag a move or copy
carried from it): no miss, ever. Where no uncleared flagged edit is present, it
must pass. No evidence may be missing, and no note found not to describe its
commit — except where git copied a note onto another change (a rebase or an amend,
``notes.rewriteRef``; a commit a rebase drops gives its note to the next one), which
the gates refuse, failing closed.
"""

from __future__ import annotations

import difflib
import importlib
import json
import pkgutil
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
from guard_fixtures import Agent, agent
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

import redline.gitops
import redline.hooks
from gitmode_fixtures import make_repo
from redline.engine.edit import EditItem, EditRequest
from redline.engine.patch import PatchRequest
from redline.engine.write import DeleteRequest, WriteRequest
from redline.gitops import landing, notes
from redline.gitops import repo as gitrepo
from redline.gitops.errors import GitModeError
from redline.hooks import ledger as ledgers
from redline.hooks import stages
from redline.hooks.approve import approve
from redline.hooks.gate import Findings, check_range, judge
from redline.hooks.guard import cleared
from redline.hooks.land import LandRefused, check
from redline.settings.policy import policy_from_tree

POLICY = '[[guard.protect]]\npaths = ["auth/**"]\nrequire = "exact"\n'
FILES = {
    ".redline.toml": POLICY,
    "auth/check.py": (
        "def is_admin(user):\n"
        "    if user.role == 'admin':\n"
        "        return True\n"
        "    return False\n"
        "\n"
        "\n"
        "def can_delete(user, item):\n"
        "    if item.owner == user:\n"
        "        return True\n"
        "    return False\n"
    ),
    "auth/roles.py": (
        "ROLES = ['admin', 'editor', 'viewer']\n"
        "\n"
        "\n"
        "def rank(role):\n"
        "    if role not in ROLES:\n"
        "        raise KeyError(role)\n"
        "    return ROLES.index(role)\n"
    ),
    "lib/util.py": (
        "def clamp(x, low, high):\n"
        "    return max(low, min(x, high))\n"
        "\n"
        "\n"
        "def double(x):\n"
        "    return 2 * x\n"
    ),
}
NEW_LINES = ["return True", "return False", "pass", "item.delete()", "return None", "x = 1"]
NAMES = ["auth/check_v2.py", "auth/legacy.py", "lib/moved.py", "lib/copy.py"]
ACTIONS = [
    "edit", "tolerant edit", "tolerant edit", "move", "copy", "delete", "approve",
    "squash", "merge", "cherry-pick", "rebase", "revert", "by hand", "amend",
]  # fmt: skip


@dataclass(frozen=True)
class Flag:
    """A flagged edit of one file, as the oracle sees it."""

    edit: str
    commit: str
    path: str  # the file as the edit left it
    before: bytes  # b"" when the edit created the file
    after: bytes
    step: int  # when it was made (moves and copies after it carry it)


class Gates(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.pinned = Pinned()
        self.tmp = Path(tempfile.mkdtemp(prefix="rl-model-"))
        self.root = make_repo(self.tmp / "repo", FILES)
        self.repo = pygit2.Repository(str(self.root))
        self.start = self.rev("main")
        self.agent: Agent = agent(self.root)
        self.flags: list[Flag] = []
        self.moves: list[tuple[int, str, str]] = []  # (step, source, destination)
        self.written_anew: dict[str, int] = {}  # a name a copy or move went to: when
        self.step = 0
        self.merged: dict[tuple[str, str, str], bool] = {}  # oracle cache
        # Commits a rebase or an amend made (git copies their notes: notes.rewriteRef),
        # and the changes of the commits they replaced, as git's raw diffs.
        self.rewritten: set[str] = set()
        self.replaced: set[frozenset[tuple[str, str, str]]] = set()
        self.stats = STATS

    @initialize(seed=st.integers(0, 2**32 - 1))
    def ids(self, seed: int) -> None:
        """The edit ids (and so the commits' ids and their order) this run gets."""
        self.pinned.ids.seed(seed)

    def teardown(self) -> None:
        STATS["runs"] += 1
        self.pinned.undo()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers -----------------------------------------------------------------------

    def git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["git", *args], cwd=self.root, capture_output=True, text=True, timeout=60
        )
        if check:
            assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done

    def rev(self, name: str) -> str:
        """The commit ``name`` points at (read in-process: asked at every step)."""
        return str(self.repo.revparse_single(name).peel(pygit2.Commit).id)

    def session_file(self, path: str) -> str | None:
        try:
            return (self.agent.worktree / path).read_text()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def session_files(self) -> list[str]:
        tip = self.repo.revparse_single(self.agent.branch).peel(pygit2.Commit)
        return sorted(_paths(self.repo, tip.tree, ""))

    def main_files(self) -> list[str]:
        tip = self.repo.revparse_single("main").peel(pygit2.Commit)
        return sorted(p for p in _paths(self.repo, tip.tree, "") if p != ".redline.toml")

    def request(self, request: Any) -> dict[str, Any]:
        self.step += 1
        result = self.agent.applier.apply(request).to_dict()
        STATS["requests"] += 1
        if result["status"] not in ("applied", "partially_applied"):
            return result
        STATS["applied"] += 1
        for made in result.get("commits", []):
            note = notes.read_note(self.repo, pygit2.Oid(hex=made["commit"])) or {}
            policy = note.get("policy") or {}
            if policy.get("verdict") != "flagged":
                continue
            commit = self.repo[made["commit"]]
            assert isinstance(commit, pygit2.Commit)
            for path in {v["path"] for v in policy.get("violations", [])}:
                before = _blob(self.repo, commit.parents[0].tree, path)
                after = _blob(self.repo, commit.tree, path)
                assert after is not None, "no flagged edit here deletes its file"
                self.flags.append(
                    Flag(note["edit"], made["commit"], path, before or b"", after, self.step)
                )
                STATS["flagged"] += 1
        return result

    def unique_line(self, text: str, index: int) -> str | None:
        lines = [line for line in text.splitlines() if line.strip()]
        if not lines:
            return None
        line = lines[index % len(lines)]
        return line if text.count(line + "\n") == 1 and text.count(line) == 1 else None

    # -- the agent ---------------------------------------------------------------------

    def edit(self, file: int, line: int, new: str, tolerant: bool) -> None:
        paths = [p for p in self.session_files() if p != ".redline.toml"]
        path = paths[file % len(paths)]
        text = self.session_file(path)
        old = self.unique_line(text, line) if text is not None else None
        if old is None:
            return
        indent = old[: len(old) - len(old.lstrip())]
        if tolerant:  # quoted with two spaces less (or more): the whitespace tier
            shown = old.lstrip()
            step = indent[:-2] if len(indent) >= 2 else indent + "  "
            item = EditItem(step + shown + "\n", step + new + "\n")
        else:
            item = EditItem(old + "\n", indent + new + "\n")
        self.request(EditRequest(path, (item,)))

    def move(self, file: int, name: str, line: int) -> None:
        paths = [p for p in self.session_files() if p != ".redline.toml"]
        path = paths[file % len(paths)]
        text = self.session_file(path)
        anchor = self.unique_line(text, line) if text is not None else None
        if anchor is None or name in paths:
            return
        patch = f"*** Update File: {path}\n*** Move to: {name}\n@@\n {anchor}\n"
        result = self.request(PatchRequest(f"*** Begin Patch\n{patch}*** End Patch\n"))
        if result["status"] == "applied":
            self.moves.append((self.step, path, name))
            self.written_anew[name] = self.step
            STATS["moves"] += 1

    def copy(self, file: int, name: str) -> None:
        paths = [p for p in self.session_files() if p != ".redline.toml"]
        path = paths[file % len(paths)]
        text = self.session_file(path)
        if text is None or name in paths:
            return
        result = self.request(WriteRequest(name, text))
        if result["status"] == "applied":
            self.moves.append((self.step, path, name))
            self.written_anew[name] = self.step
            STATS["copies"] += 1

    def delete(self, file: int) -> None:
        paths = [p for p in self.session_files() if p != ".redline.toml"]
        if len(paths) > 1:
            self.request(DeleteRequest(paths[file % len(paths)]))

    def approve_one(self, which: int) -> None:
        if not self.flags:
            return
        flag = self.flags[which % len(self.flags)]
        approve(self.repo, [flag.edit])
        STATS["approvals"] += 1

    # -- a person on main ----------------------------------------------------------------

    def commit_or_abort(self, merging: str, *args: str) -> None:
        """Finish a merge-like command, or take it back when it conflicted."""
        done = self.git(*args, check=False)
        if done.returncode != 0:
            self.git(merging, "--abort", check=False)
            self.git("reset", "-q", "--hard", "HEAD")
            STATS["conflicts"] += 1
            return
        STATS["git"] += 1

    @rule(action=st.sampled_from(ACTIONS), data=st.data())
    def act(self, action: str, data: st.DataObject) -> None:
        """One thing the agent or a person does (one rule: the list says how often)."""
        STATS[action] = STATS.get(action, 0) + 1
        index, line = data.draw(st.integers(0, 50)), data.draw(st.integers(0, 20))
        if action in ("edit", "tolerant edit"):
            new = data.draw(st.sampled_from(NEW_LINES))
            self.edit(index, line, new, tolerant=action == "tolerant edit")
        elif action == "move":
            self.move(index, data.draw(st.sampled_from(NAMES)), line)
        elif action == "copy":
            self.copy(index, data.draw(st.sampled_from(NAMES)))
        elif action == "delete":
            self.delete(index)
        elif action == "approve":
            self.approve_one(index)
        elif action in ("cherry-pick", "revert"):
            getattr(self, action.replace("-", "_"))(index)
        elif action in ("by hand", "amend"):
            self.by_hand(index, line, data.draw(st.sampled_from(NEW_LINES)), action == "amend")
        else:
            getattr(self, action)()

    def squash(self) -> None:
        done = self.git("merge", "--squash", self.agent.branch, check=False)
        if done.returncode != 0:
            self.git("reset", "-q", "--hard", "HEAD")
            STATS["conflicts"] += 1
            return
        # the commit hook's verdict on the staged squash (pre-commit, in-process)
        if self.git("diff", "--cached", "--quiet", check=False).returncode != 0:
            change = stages.commit_change(self.repo, None, amending=False)
            self.expect(judge(self.repo, ledgers.load(self.repo), [change]), change, "squash")
            self.git("commit", "-q", "--no-verify", "-m", "squash of the session")
            STATS["git"] += 1
        else:
            self.git("reset", "-q", "--hard", "HEAD")

    def merge(self) -> None:
        self.commit_or_abort(
            "merge", "merge", "-q", "--no-ff", "--no-verify", "-m", "merge", self.agent.branch
        )

    def cherry_pick(self, which: int) -> None:
        commits = self.git("rev-list", f"main..{self.agent.branch}").stdout.split()
        if commits:
            self.commit_or_abort("cherry-pick", "cherry-pick", commits[which % len(commits)])

    def rebase(self) -> None:
        replaced = self.git("rev-list", f"main..{self.agent.branch}").stdout.split()
        start = self.rev("main")
        notes_before = self.notes_list()
        self.git("checkout", "-q", "-B", "work", self.agent.branch)
        done = self.git("rebase", "-q", "main", check=False)
        if done.returncode != 0:
            self.git("rebase", "--abort", check=False)
            STATS["conflicts"] += 1
        self.git("checkout", "-q", "main")
        if done.returncode == 0:
            self.git("merge", "-q", "--ff-only", "work")
            # the commits it made, and those git gave a dropped commit's note to
            given = {c for c, n in self.notes_list().items() if notes_before.get(c) != n}
            made = self.git("rev-list", f"{start}..main").stdout.split()
            self.rewrote(replaced, sorted(set(made) | given))
            STATS["git"] += 1
        self.git("branch", "-q", "-D", "work")

    def revert(self, which: int) -> None:
        commits = self.git("rev-list", "--no-merges", f"{self.start}..main").stdout.split()
        if commits:
            self.commit_or_abort("revert", "revert", "--no-edit", commits[which % len(commits)])

    def by_hand(self, file: int, line: int, new: str, amend: bool) -> None:
        paths = self.main_files()
        path = self.root / paths[file % len(paths)]
        lines = path.read_text().splitlines(keepends=True)
        if not lines:
            return
        at = line % len(lines)
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines[at] = indent.rstrip("\n") + new + "\n"
        path.write_text("".join(lines))
        self.git("add", "-A")
        if self.git("diff", "--cached", "--quiet", check=False).returncode == 0:
            return
        if amend and self.rev("main") != self.start and not self.empties_tip():
            replaced = self.rev("main")
            self.git("commit", "-q", "--no-verify", "--amend", "--no-edit")
            self.rewrote([replaced], [self.rev("main")])
        else:
            self.git("commit", "-q", "--no-verify", "-m", "by hand")
        STATS["git"] += 1

    def empties_tip(self) -> bool:
        """Whether what is staged takes back all that main's tip changed (git will not
        amend a commit into an empty one: the change is committed on its own then)."""
        tip = self.repo.revparse_single("main").peel(pygit2.Commit)
        staged = self.git("write-tree").stdout.strip()
        return any(str(p.tree_id) == staged for p in tip.parents[:1])

    def notes_list(self) -> dict[str, str]:
        """Each commit with a note: its note's blob, as git lists them."""
        out = self.git("notes", "--ref=redline", "list", check=False).stdout.split()
        return dict(zip(out[1::2], out[0::2], strict=True))

    def rewrote(self, replaced: list[str], made: list[str]) -> None:
        self.replaced |= {self.raw_change(sha) for sha in replaced}
        self.rewritten |= set(made)

    def raw_change(self, sha: str) -> frozenset[tuple[str, str, str]]:
        """(path, blob before, blob after) for each file the commit changes, as git says."""
        out = self.git("diff-tree", "-r", "--no-renames", "--raw", "--no-commit-id", sha).stdout
        found = set()
        for line in out.splitlines():
            meta, path = line.split("\t", 1)
            _, _, before, after, _ = meta.split()
            found.add((path, before, after))
        return frozenset(found)

    def may_contradict(self, sha: str) -> bool:
        """Whether a commit's note may not describe it, by what git did: a rebase or an
        amend copied the note of a commit whose change was other than this commit's (the
        files the note records, as git's raw diff of the commit does not show them), or
        gave the notes of the commits it dropped to another commit (joined to its own)."""
        if sha not in self.rewritten:
            return False
        note = self.git("notes", "--ref=redline", "show", sha, check=False).stdout
        if note.count('"schema"') > 1:
            return True
        recorded = json.loads(note).get("files")
        if recorded is None:
            return self.raw_change(sha) not in self.replaced
        absent = "0" * 40
        said = {(f["path"], f.get("before") or absent, f.get("after") or absent) for f in recorded}
        return said != set(self.raw_change(sha))

    # -- the gates -------------------------------------------------------------------------

    @invariant()
    def gates_agree_with_the_oracle(self) -> None:
        if self.step == getattr(self, "_checked", None) and not self.dirty():
            return
        self._checked = self.step
        self._heads = self.heads()
        ledger = ledgers.load(self.repo)
        for base, head in ((self.start, "main"), ("main", self.agent.branch)):
            verdict = check_range(self.repo, ledger, base, head)
            self.expect(verdict.findings, verdict.change, f"range {base}..{head}")
        tip = self.repo.revparse_single(self.agent.branch).id
        for squash in (False, True):
            try:
                plan = landing.plan(self.repo, "s", tip, "refs/heads/main", squash)
            except GitModeError:
                continue  # the branches conflict: nothing to judge
            if plan is None:
                continue
            change = stages.Change("landing", plan.parent, plan.tree, (plan.tip,), (plan.old,))
            try:
                check(self.repo, plan)
                found = Findings()
            except LandRefused as refused:
                found = Findings(refused.found, refused.unreadable, refused.missing,
                                 refused.mismatched)  # fmt: skip
            self.expect(found, change, f"land {'--squash' if squash else '--merge'}")

    def heads(self) -> tuple[str, ...]:
        return (self.rev("main"), self.rev(self.agent.branch), str(notes.current(self.repo)))

    def dirty(self) -> bool:
        return getattr(self, "_heads", None) != self.heads()

    def expect(self, found: Findings, change: stages.Change, what: str) -> None:
        """``found`` refuses every uncleared flagged edit ``change`` brings, by the oracle,
        names it, and refuses nothing when none is present."""
        STATS["checks"] += 1
        assert not found.missing and not found.unreadable, (what, found)
        # a note that does not describe its commit is refused (failing closed): only where
        # a rebase or an amend made git copy a note onto another change
        assert all(self.may_contradict(m.commit) for m in found.mismatched), (
            what,
            found.mismatched,
        )
        ledger = ledgers.load(self.repo)
        policy = policy_from_tree(self.repo, change.new)
        named = {b.edit for b in found.blocked}
        for b in found.blocked:  # a flag carried over from an edit names that edit too
            entry = ledger.entries.get(b.edit)
            named |= {str(v.get("edit")) for v in (entry.flagged if entry else []) if "edit" in v}
        present_anywhere = False
        for flag in self.flags:
            if cleared(ledger, policy, flag.edit):
                continue
            now = self.present(flag, change.new)
            present_anywhere = present_anywhere or now
            if now and not self.present(flag, change.parent):
                STATS["must_refuse"] += 1
                assert flag.edit in named, (
                    f"{what}: edit {flag.edit} ({flag.path}) is carried and not refused; "
                    f"the gate named {sorted(named)}"
                )
        if not present_anywhere:
            # A file an edit created (a write, a move's destination) counts carried while a
            # file has its name or a name it was moved to: refusing it where the oracle
            # finds no edit is failing closed, not a miss. So is following a flagged file
            # to a file git pairs with it as a rename or copy (half its lines in common)
            # that the agent wrote from another file with the same lines, or to a file by
            # the edit's name, written anew since, that holds what the edit wrote where
            # it wrote it: the tree cannot tell which file the lines came from.
            created = ("create", "add")
            assert all(
                b.op in created
                or self.paired_by_git(b, change.new)
                or self.holds_what_it_wrote(b, change.new)
                or self.written_over(b)
                for b in found.blocked
            ), (what, found.blocked)
            STATS["must_pass"] += 1
        else:
            STATS["refused" if found.blocked else "passed_with_edit_in_base"] += 1

    def paired_by_git(self, blocked: Any, tree: pygit2.Tree) -> bool:
        """``blocked`` names a file other than the one its edit was made in, whose text
        in ``tree`` has half its lines in common with that edit's file after the edit."""
        if blocked.edited_as is None or blocked.edited_as == blocked.path:
            return False
        text = _blob(self.repo, tree, blocked.path)
        flags = [f for f in self.flags if f.edit == blocked.edit and f.path == blocked.edited_as]
        return text is not None and any(related(text, f) for f in flags)

    def written_over(self, blocked: Any) -> bool:
        """The file ``blocked`` names was written anew by the agent (another file copied
        or moved to the flagged file's name) after the edit: from the trees alone it is
        still the edit's file, whose places hold neither the edit nor what was there
        before."""
        at = self.written_anew.get(blocked.path)
        return at is not None and any(
            f.edit == blocked.edit and at > f.step and blocked.path in self.names(f)
            for f in self.flags
        )

    def holds_what_it_wrote(self, blocked: Any, tree: pygit2.Tree) -> bool:
        """The file ``blocked`` names, by its edit's own name, has the lines the edit wrote
        at the line numbers it wrote them."""
        text = _blob(self.repo, tree, blocked.path)
        if text is None:
            return False
        now = text.splitlines()
        for flag in self.flags:
            if flag.edit != blocked.edit or flag.path != blocked.path:
                continue
            after = flag.after.splitlines()
            matcher = difflib.SequenceMatcher(None, flag.before.splitlines(), after, False)
            written = [
                j
                for op, _, _, j1, j2 in matcher.get_opcodes()
                if op in ("replace", "insert")
                for j in range(j1, j2)
            ]
            if written and all(j < len(now) and now[j] == after[j] for j in written):
                return True
        return False

    def names(self, flag: Flag) -> set[str]:
        found = {flag.path}
        for step, source, destination in self.moves:
            if step > flag.step and source in found:
                found.add(destination)
        return found

    def present(self, flag: Flag, tree: pygit2.Tree | None) -> bool:
        """The oracle: the flagged edit's file (or a move or copy of it) is in ``tree`` and
        ``git merge-file`` taking the edit back changes it."""
        for name in sorted(self.names(flag)):
            text = _blob(self.repo, tree, name) if tree is not None else None
            if text is None:
                continue
            # A file the edit created is its own, by its name, until it is gone; the
            # file the edit was made in is its own while it is of the same lineage — half
            # its lines in common with the edit's texts or with the file it started as
            # (a small file rewritten by hand on main is still that file).
            first = FILES.get(name, "").encode() if name == flag.path else b""
            if (flag.before or name != flag.path) and not related(text, flag, first):
                continue
            if self.changed_by_revert(text, flag):
                return True
        return False

    def changed_by_revert(self, text: bytes, flag: Flag) -> bool:
        key = (str(pygit2.hash(text)), str(pygit2.hash(flag.after)), str(pygit2.hash(flag.before)))
        if key not in self.merged:
            for name, data in (("now", text), ("base", flag.after), ("theirs", flag.before)):
                (self.tmp / name).write_bytes(data)
            done = subprocess.run(
                ["git", "merge-file", "-p", "now", "base", "theirs"],
                cwd=self.tmp, capture_output=True, timeout=60,
            )  # fmt: skip
            assert done.returncode >= 0, done.stderr
            self.merged[key] = done.stdout != text
        return self.merged[key]


class Pinned:
    """Edit ids and commit times drawn from a seed, not from the machine, while a model
    runs: the gates' verdicts may depend on the order of edit and commit ids, and a
    sequence hypothesis found must give the same ids when it is replayed."""

    def __init__(self) -> None:
        self.ids = random.Random(0)
        self.clock = 1_767_225_600  # 2026-01-01, one second more per signature
        self.token_hex = secrets.token_hex
        self.signature = gitrepo.signature
        for package in (redline.gitops, redline.hooks):  # every module that makes commits
            for found in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
                importlib.import_module(found.name)
        self.users = [m for m in list(sys.modules.values()) if _uses_signature(m, self.signature)]
        secrets.token_hex = self.token
        for module in self.users:
            module.signature = self.sign  # type: ignore[attr-defined]

    def token(self, nbytes: int | None = None) -> str:
        return self.ids.getrandbits(8 * (nbytes or 32)).to_bytes(nbytes or 32, "big").hex()

    def sign(self, repo: pygit2.Repository) -> pygit2.Signature:
        self.clock += 1
        made = self.signature(repo)
        return pygit2.Signature(made.name, made.email, self.clock, 0)

    def undo(self) -> None:
        secrets.token_hex = self.token_hex
        for module in self.users:
            module.signature = self.signature  # type: ignore[attr-defined]


def _uses_signature(module: Any, signature: Any) -> bool:
    name = getattr(module, "__name__", "") or ""
    return name.startswith("redline.") and getattr(module, "signature", None) is signature


STATS: dict[str, int] = dict.fromkeys(
    ["runs", "requests", "applied", "flagged", "moves", "copies", "approvals", "git", "conflicts",
     "checks", "must_refuse", "must_pass", "refused", "passed_with_edit_in_base"],
    0,
)  # fmt: skip


def related(text: bytes, flag: Flag, first: bytes = b"") -> bool:
    """Whether a file by one of the edit's names is the edit's file at all: half its lines
    in common with the file before or after the edit (git's rename threshold), measured
    by difflib (for the edit's own name, also with the file it started as). A name the
    agent moved or copied the file to may be taken later by an unrelated file (another file's move cherry-picked), whose lines taking the edit back
    would conflict with: that file does not hold the edit. (A file the edit created is
    not asked by the name the edit gave it: the guard counts it carried there until it is
    gone, and so does the oracle.)"""
    lines = text.splitlines()
    return any(
        difflib.SequenceMatcher(None, lines, side.splitlines(), autojunk=False).ratio() >= 0.5
        for side in (flag.after, flag.before, first)
        if side
    )


def _blob(repo: pygit2.Repository, tree: pygit2.Tree, path: str) -> bytes | None:
    try:
        obj = repo.get(tree[path].id)
    except KeyError:
        return None
    return obj.data if isinstance(obj, pygit2.Blob) else None


def _paths(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str) -> list[str]:
    out = []
    for item in tree:
        if item.type_str == "tree":
            sub = repo.get(item.id)
            assert isinstance(sub, pygit2.Tree)
            out += _paths(repo, sub, f"{prefix}{item.name}/")
        else:
            out.append(f"{prefix}{item.name}")
    return out


def test_every_gate_refuses_what_carries_a_flagged_edit_and_passes_the_rest() -> None:
    for key in STATS:
        STATS[key] = 0
    run_state_machine_as_test(
        Gates,
        settings=settings(
            max_examples=12,
            stateful_step_count=20,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            deadline=None,
        ),
    )
    # The machine made flagged edits, moves and copies, ran git operations, and met
    # cases the gates had to refuse and cases they had to pass (-s shows the counts).
    print("model:", STATS)
    for key in ("flagged", "moves", "copies", "git", "must_refuse", "must_pass"):
        assert STATS[key] > 0, (key, STATS)
