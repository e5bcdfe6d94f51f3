"""Which paths a request may name: one policy for every mode. Pure, no I/O.

:func:`checked_path` turns the path an agent sent into the relative POSIX path
redline works on, or raises :class:`~redline.engine.errors.RequestError` (field
``"path"``) whose message names the path, says what is wrong and what to send
instead. Embedded edits, embedded apply_patch and git mode all use it, so a
path is accepted or refused the same way everywhere; what the file system adds
(symbolic links, a git directory that a ``.git`` file points to) is
:mod:`redline.fsops.confine`.

Normalised away: ``.`` components and repeated slashes (``./a//b.txt`` is
``a/b.txt``). Refused, in this order:

- an empty path, a NUL byte, a character UTF-8 cannot encode (a lone surrogate);
- a control character (U+0001–U+001F, U+007F) or a bidirectional control
  (U+202A–U+202E, U+2066–U+2069): a newline in a name could forge a line of a
  commit message (a ``Redline-Edit:`` trailer), and these characters hide or
  reorder text where a path is shown;
- an absolute path: a leading ``/`` or ``\\``, or a drive letter (``c:``) at
  the start — ``c:notes.txt`` too, which Windows reads relative to drive C's
  current folder. An absolute path *inside* the root is accepted: the file
  system layer makes it relative first (:func:`strip_root` is its pure part);
- a trailing slash (``/`` or ``\\``): a directory, not a file;
- a backslash anywhere (see below);
- a ``..`` component, even one that would land back inside the root;
- a path naming nothing (``.``);
- a ``.git`` component at any depth (a nested repository's ``nested/.git/…``
  too) in every spelling git itself protects: any case (``.GIT``), trailing dots
  and spaces (``.git.``, ``.git ``, which Windows strips), an NTFS stream
  (``.git::$INDEX_ALLOCATION``), the 8.3 short name ``git~1``, and the
  characters HFS+ ignores (``.g\\u200cit``);
- a name longer than 255 bytes in UTF-8, or a path longer than 4096 bytes.

What redline prints or writes into a commit message shows a path through
:func:`shown_path`, and other text through :func:`safe_text`, so a name git
holds with such characters (a hand-made commit, a file another tool made)
never reaches a terminal or a message raw.

Backslashes are refused rather than read one way or the other. On Windows
``a\\b.txt`` is ``b.txt`` in folder ``a``; on POSIX it is one file whose name
holds a backslash, which git for Windows cannot even check out. redline cannot
tell which the agent meant, and a guess writes the wrong file: the refusal says
to use forward slashes, which costs one retry.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NoReturn

from redline.engine.errors import RequestError

NAME_MAX = 255  # bytes of one file or folder name (ext4, APFS, NTFS in UTF-16 units)
PATH_MAX = 4096  # bytes of a whole path (Linux)

_DRIVE = re.compile(r"[A-Za-z]:")
# After git's is_ntfs_dotgit / is_hfs_dotgit (read-cache.c, utf8.c).
_DOTGIT = re.compile(r"(?:\.git|git~1)[. ]*(?::.*)?", re.IGNORECASE | re.DOTALL)
_HFS_IGNORED = dict.fromkeys(
    [*range(0x200C, 0x2010), *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF]
)
_SHOWN = 120  # characters of a path quoted in a message
# Control characters and the bidirectional controls (embeddings, overrides, isolates).
_UNSAFE = re.compile("[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069]")
_QUOTED = re.compile('[\x00-\x1f\x7f\u202a-\u202e\u2066-\u2069"\\\\]')
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_CONTROL_NAMES = {
    "\t": "tab",
    "\n": "line feed",
    "\r": "carriage return",
    "\x1b": "escape",
    "\x7f": "delete",
}


def checked_path(path: str) -> str:
    """The relative POSIX path ``path`` names, normalised; RequestError if it is refused."""
    check_characters(path)
    if path[0] in "/\\" or _DRIVE.match(path):
        drive = f" (it starts with the drive {path[:2]!r})" if _DRIVE.match(path) else ""
        _refuse(
            f"path {_quoted(path)} is absolute{drive}; give it relative to the root "
            "(an absolute path is accepted only inside the root)"
        )
    if path.endswith(("/", "\\")):
        _refuse(f"path {_quoted(path)} ends with a slash; name a file, not a directory")
    if "\\" in path:
        _refuse(
            f"path {_quoted(path)} contains a backslash; separate folders with forward "
            f"slashes ({_quoted(path.replace(chr(92), '/'))}) — redline does not edit "
            "file names that contain a backslash"
        )
    parts = [part for part in path.split("/") if part and part != "."]
    if ".." in parts:
        _refuse(
            f"path {_quoted(path)} contains '..', which could leave the root; '..' is not "
            "allowed — name the file by its path from the root"
        )
    if not parts:
        _refuse(f"path {_quoted(path)} names the root itself, not a file; name a file")
    for i, part in enumerate(parts):
        if is_git_name(part):
            _refuse(git_message(path, part, last=i == len(parts) - 1))
        size = len(part.encode("utf-8"))
        if size > NAME_MAX:
            _refuse(
                f"name too long: {_quoted(part, 40)} in path {_quoted(path, 60)} is {size} "
                f"bytes in UTF-8, over the limit of {NAME_MAX} bytes for one name; "
                "use a shorter name"
            )
    relative = "/".join(parts)
    size = len(relative.encode("utf-8"))
    if size > PATH_MAX:
        _refuse(
            f"name too long: path {_quoted(relative, 60)} is {size} bytes in UTF-8, over the "
            f"limit of {PATH_MAX} bytes for a whole path; use a shorter path"
        )
    return relative


def check_characters(path: str) -> None:
    """Refuse a path no file can have: empty, with a NUL byte, or not encodable in UTF-8.

    The first step of :func:`checked_path`, also run where a request is parsed.
    """
    if not path:
        _refuse("path is empty; name a file relative to the root")
    if "\x00" in path:
        _refuse(
            f"path {_quoted(path)} contains a NUL byte, which no file name can hold; "
            "name the file without it"
        )
    unsafe = _UNSAFE.search(path)
    if unsafe is not None:
        _refuse(
            f"path {_quoted(path)} contains a control character ({describe_character(unsafe[0])}), "
            "which redline does not accept in a file name: it could fake a line of a commit "
            "message or hide text where the path is shown; name the file without it"
        )
    if not path.isascii():
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            _refuse(
                f"path {_quoted(path)} contains a character no file name can hold (a lone "
                "surrogate); send the path as the file's name is spelt"
            )


def has_control_character(text: str) -> bool:
    """Whether ``text`` holds a control or bidirectional character (NUL included)."""
    return _UNSAFE.search(text) is not None


def describe_character(char: str) -> str:
    """``U+000A line feed``, ``U+202E right-to-left override``: a character by code and name."""
    name = _CONTROL_NAMES.get(char) or unicodedata.name(char, "").lower()
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def shown_path(path: str) -> str:
    """``path`` as redline prints it or writes it into a commit message: as it is, or —
    when it holds a control or bidirectional character — in double quotes with those
    characters (and ``"`` and ``\\``) escaped, as git quotes such a path. Never more
    than one line, never text a terminal would act on."""
    if _UNSAFE.search(path) is None:
        return path
    return '"' + _QUOTED.sub(_escape, path) + '"'


def safe_text(text: str, keep: str = "\n\t") -> str:
    """``text`` with every control and bidirectional character escaped but those in
    ``keep`` (line breaks and tabs of a diff, say): what may reach a terminal."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda m: m[0] if m[0] in keep else _escape(m), text)


def _escape(match: re.Match[str]) -> str:
    char = match[0]
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def is_git_name(name: str) -> bool:
    """Whether a file system may take ``name`` (one component) for ``.git``."""
    if not name.isascii():
        name = name.translate(_HFS_IGNORED)
    return _DOTGIT.fullmatch(name) is not None


def names_git(path: str) -> bool:
    """Whether any component of the relative POSIX ``path`` is a spelling of ``.git``."""
    return any(is_git_name(part) for part in path.split("/"))


GIT_REFUSAL = (
    "which redline never edits: that is the repository's own data. Change the repository "
    "with git commands, and edit only files outside .git"
)


def git_message(path: str, name: str, *, last: bool) -> str:
    """The refusal of ``path``, whose component ``name`` is a spelling of ``.git``."""
    where = "names a .git directory or file" if last else "is inside a .git directory"
    spelt = "" if name == ".git" else f" ({_quoted(name)} is a spelling of .git)"
    return f"path {_quoted(path)} {where}{spelt}, {GIT_REFUSAL}"


def strip_root(path: str, root: str) -> str | None:
    """``path`` relative to ``root`` when it is spelt inside it (both absolute, POSIX).

    Component by component, with no file system: ``.`` and repeated slashes do
    not count, ``..`` is kept for :func:`checked_path` to refuse, and a
    trailing slash is kept for it to report. None when ``path`` lies elsewhere.
    """
    parts = [part for part in path.split("/") if part and part != "."]
    base = [part for part in root.split("/") if part and part != "."]
    if parts[: len(base)] != base:
        return None
    rest = "/".join(parts[len(base) :])
    if not rest:
        return "."
    return rest + "/" if path.endswith("/") else rest


def _quoted(text: str, limit: int = _SHOWN) -> str:
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"… ({len(text)} characters)"


def _refuse(message: str) -> NoReturn:
    raise RequestError(message, "path")
