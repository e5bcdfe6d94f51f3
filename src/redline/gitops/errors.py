"""Errors of git mode.

RedlineError (engine.errors)
└── GitModeError            a git-mode operation cannot proceed; the message says why
    ├── NotARepository      the path is not inside a git repository
    ├── SessionError        a session is missing, exists already, or cannot be closed
    └── RefMoved            a branch moved while redline was committing to it
"""

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


class RefMoved(GitModeError):
    def __init__(self, ref: str) -> None:
        self.ref = ref
        super().__init__(
            f"{ref} moved while redline was committing to it (another process committed "
            "there); nothing was written — retry the request"
        )
