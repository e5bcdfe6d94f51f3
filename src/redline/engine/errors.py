"""Every error redline raises on purpose, drawn as one tree.

    RedlineError                  exit code 1 unless noted
    ├── FileFormatError           a file's bytes cannot be edited as text
    │   ├── BinaryFileError       NUL bytes or no text encoding fits
    │   └── EncodingError         the edited text cannot be written back in the file's encoding
    ├── RequestError              a request is malformed (status ``invalid``); exit 2
    │   └── PatchSyntaxError      an apply_patch text breaks the format (engine.patch_parse)
    ├── MergeRefusal              a tolerant match cannot be applied without a guess
    │   ├── MergeConflict         the edit changes text that differs in the file
    │   └── TooDifferent          the block is another block, not the one quoted
    ├── HunkError                 an apply_patch hunk cannot be placed (engine.hunks)
    ├── _GroupFailure             one file group of a patch cannot be planned; caught inside
    │                             engine.patch_plan, never seen outside it
    ├── GitModeError              a git-mode operation cannot proceed (gitops.errors)
    │   ├── NotARepository        the path is not inside a git repository
    │   │   └── NoRepository      the same, found by the CLI without pygit2 (daemon.paths)
    │   ├── SessionError          a session is missing, exists already, or cannot be closed
    │   │   └── WorktreeGone      its worktree folder was removed under it
    │   ├── RefMoved              a branch moved while redline was committing to it
    │   ├── LandError             a session cannot land: conflict, dirty or moved target
    │   │                         (gitops.landing)
    │   ├── CorruptNotes          refs/notes/redline cannot be read as a notes commit
    │   ├── RequestRedacted       a kept request held likely secrets: it cannot be run again
    │   │                         as sent (gitops.sent)
    │   └── SigningError          the reviewer's signing setup cannot sign or verify an
    │                             approval (gitops.signing)
    ├── LockHeld                  another process holds git's lock on a file (fsops.atomic)
    ├── ResourceError             the machine refused a write: a full disk, a read-only file
    │                             system, no file descriptors left (fsops.resources)
    ├── SettingsError             a settings file cannot be used: its file, and the key or
    │   │                         the line and column (engine.errors)
    │   ├── PolicyError           the guard policy does not parse or validate (settings.policy)
    │   └── ConfigError           a tool setting ([permission], [compat]) is unusable
    │                             (settings.tools)
    ├── ApprovalError             an approval cannot be recorded (hooks.approve)
    ├── LandRefused               the guard refuses to land a session (hooks.land)
    ├── InstallError              the guard's hooks cannot be installed or removed (hooks.install)
    ├── RangeError                `redline guard --range` names no two commits (hooks.gate); exit 2
    ├── DaemonError               the daemon cannot be started, reached or stopped
    │   │                         (daemon.client)
    │   ├── DaemonBusy            it did not accept a connection within the deadline
    │   ├── UntrustedDaemon       its socket is served by another user, or by an
    │   │                         unverifiable one
    │   ├── OtherProtocol         it speaks another protocol version and ran nothing
    │   └── UnsafeDirectory       a folder for its files is not the user's private folder
    │                             (daemon.paths)
    ├── RpcError                  the daemon answered a call with an error (daemon.protocol)
    └── SettingError              an environment setting the CLI reads is unusable; exit 2
                                  (cli.boundary)

The classes live in their layer's module (the engine imports neither pygit2
nor sockets); this drawing is the one place that shows them all, and a test
checks that every subclass appears in it. Each carries the data a caller needs
to explain it; ``str(exc)`` is the user-facing message and says what to do
next, and ``exit_code`` is the process exit status the CLI gives it (the CLI's
one error boundary, ``redline.cli.boundary``, is where it is used).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    import tomllib


class RedlineError(Exception):
    """Base class of every error redline raises on purpose."""

    exit_code = 1


class FileFormatError(RedlineError):
    """The file's bytes cannot be edited as text."""


class BinaryFileError(FileFormatError):
    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(
            f"file is binary or not in a detectable text encoding ({reason}); "
            "redline edits text files only — change it with another tool"
        )


class EncodingError(FileFormatError):
    def __init__(self, encoding: str, character: str) -> None:
        self.encoding = encoding
        self.character = character
        super().__init__(
            f"the new text contains {character!r} (U+{ord(character):04X}), which the file's "
            f"encoding {encoding} cannot represent; use characters {encoding} supports "
            "or convert the file to UTF-8 first"
        )


class RequestError(RedlineError):
    """A request that cannot be carried out as written."""

    exit_code = 2

    def __init__(self, message: str, field: str | None = None) -> None:
        self.field = field
        super().__init__(message)


class MergeRefusal(RedlineError):
    """A tolerant match that cannot be adapted without guessing (engine.merge)."""


class MergeConflict(MergeRefusal):
    """The edit changes text that differs in the file; nothing can be merged safely."""

    def __init__(self, line: int, expected: str, found: str, reason: str = "") -> None:
        super().__init__(reason or f"line {line + 1} of old_string differs in the file")
        self.line = line  # 0-based line within old_string
        self.expected = expected
        self.found = found
        self.reason = reason


class TooDifferent(MergeRefusal):
    """The block differs from old_string in more than one real line: it is another block."""

    def __init__(self, drifted: int) -> None:
        super().__init__(f"{drifted} lines differ in content")
        self.drifted = drifted


_TOML_POSITION = re.compile(
    r"^(?P<reason>.*) \(at (?:line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$", re.S
)


class SettingsError(RedlineError):
    """A settings file cannot be used: ``source`` names the file (and the table in it),
    ``where`` the key — or the line and column, also in ``line`` and ``column``, when the
    file is not TOML — and ``problem`` says why. A subclass names what the file held
    (``what``) and where the format is described (``see``)."""

    what = "redline settings"
    see = "the README"

    def __init__(
        self,
        source: str,
        where: str,
        problem: str,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.source = source
        self.where = where
        self.problem = problem
        self.line = line
        self.column = column
        super().__init__(
            f"invalid {self.what} in {source}: {where}: {problem}. Fix the file and retry "
            f"(see {self.see})"
        )

    @property
    def file(self) -> str:
        """The file to fix (``source`` may name a section of it)."""
        return self.source.partition(" ")[0]

    @classmethod
    def not_toml(cls, exc: tomllib.TOMLDecodeError, text: str, source: str) -> Self:
        """The parser's reason, line and column (tomllib puts them in its message only)."""
        found = _TOML_POSITION.match(str(exc))
        if found is None:
            return cls(source, "TOML", f"not valid TOML: {exc}")
        if found["line"] is not None:
            line, column = int(found["line"]), int(found["column"])
        else:  # at the end of the document: after its last character
            lines = text.split("\n")
            line, column = len(lines), len(lines[-1]) + 1
        where = f"line {line}, column {column}"
        return cls(source, where, f"not valid TOML: {found['reason']}", line, column)
