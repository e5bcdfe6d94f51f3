"""Errors of git mode (their place in the tree: ``redline.engine.errors``)."""

from __future__ import annotations

from redline.engine.errors import RedlineError


class GitModeError(RedlineError):
    pass


class NotARepository(GitModeError):
    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(
            f"{path} is not inside a git repository; run redline from a repository or pass --repo"
        )


class SessionError(GitModeError):
    pass


class WorktreeGone(SessionError):
    """A session's worktree folder (or its link to the repository) was removed."""

    def __init__(self, name: str, worktree: str) -> None:
        self.name = name
        self.worktree = worktree
        super().__init__(
            f"the worktree of session {name!r} ({worktree}) is gone: something removed it. "
            f"Nothing was applied. `redline session open --name {name}` checks the session's "
            "branch out there again (its history is kept), then retry"
        )


class RefMoved(GitModeError):
    def __init__(self, ref: str) -> None:
        self.ref = ref
        super().__init__(
            f"{ref} moved while redline was committing to it (another process committed "
            "there); nothing was written — retry the request"
        )


class CorruptNotes(GitModeError):
    """The notes ref cannot be read as a notes commit; ``problem`` says what is wrong
    with it and ``remedy`` how to repair it (git's own commands)."""

    def __init__(self, ref: str, problem: str, remedy: str | None = None) -> None:
        self.ref = ref
        self.problem = problem
        self.remedy = remedy or (
            f"Restore it with `git update-ref {ref} <good commit>` (`git reflog {ref}` lists "
            f"its earlier values), fetch it again with `git fetch <remote> +{ref}:{ref}`, "
            f"or remove it with `git update-ref -d {ref}` (which forgets every recorded edit "
            "and approval)"
        )
        super().__init__(
            f"{ref} {problem}, so redline cannot read the edit evidence (the guard refuses "
            f"commits and pushes until it can). {self.remedy}"
        )


class RequestRedacted(GitModeError):
    """The request kept for ``edit`` had likely secrets replaced (gitops.sent): what it
    says is not what the agent sent, so it is never run again as if it were."""

    def __init__(self, edit: str) -> None:
        self.edit = edit
        super().__init__(
            f"the request kept for edit {edit} held likely secrets, which were redacted "
            "before it went into the notes: it cannot be run again as sent; review the "
            "edit's commit instead (`git show`)"
        )
