"""engine.paths: the one path policy — what is accepted, how it is normalised, the messages.

Pure: no file system. The same table runs through every mode, against real
files and a real daemon, in tests/test_path_policy.py.
"""

from __future__ import annotations

import pytest

from redline.engine.errors import RequestError
from redline.engine.paths import (
    NAME_MAX,
    PATH_MAX,
    check_characters,
    checked_path,
    is_git_name,
    names_git,
    strip_root,
)


def refused(path: str) -> str:
    with pytest.raises(RequestError) as info:
        checked_path(path)
    assert info.value.field == "path"
    return str(info.value)


# --- accepted, normalised ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "normalised"),
    [
        ("a.txt", "a.txt"),
        ("src/app.py", "src/app.py"),
        ("./a.txt", "a.txt"),
        ("a//b/./c.txt", "a/b/c.txt"),
        ("././x/.//y", "x/y"),
        ("a b/c.txt", "a b/c.txt"),
        ("a..b/c", "a..b/c"),
        ("...", "..."),
        (".hidden", ".hidden"),
        (".gitignore", ".gitignore"),
        (".gitmodules", ".gitmodules"),
        (".github/workflows/ci.yml", ".github/workflows/ci.yml"),
        ("x.git/y", "x.git/y"),
        ("git/config", "git/config"),
        ("a.git", "a.git"),
        (".git2/x", ".git2/x"),
        ("git~2/x", "git~2/x"),
        ("a/c:x.txt", "a/c:x.txt"),  # a colon after the start is a POSIX file name
        ("é/ü.txt", "é/ü.txt"),
        ("x" * NAME_MAX, "x" * NAME_MAX),
    ],
)
def test_accepted_paths_are_normalised(path: str, normalised: str) -> None:
    assert checked_path(path) == normalised


def test_normalising_is_idempotent() -> None:
    for path in ("./a//b.txt", "x/./y", "a.txt"):
        once = checked_path(path)
        assert checked_path(once) == once


# --- refused ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "phrases"),
    [
        ("", ["path is empty", "name a file relative to the root"]),
        ("a\x00b.txt", ["'a\\x00b.txt'", "contains a NUL byte", "name the file without it"]),
        ("\ud800.txt", ["lone surrogate", "as the file's name is spelt"]),
        ("/etc/passwd", ["'/etc/passwd' is absolute", "give it relative to the root"]),
        ("\\x", ["is absolute", "give it relative to the root"]),
        ("\\\\server\\share", ["is absolute"]),
        ("c:notes.txt", ["'c:notes.txt' is absolute", "starts with the drive 'c:'"]),
        ("C:\\x", ["is absolute", "drive 'C:'"]),
        ("c:/x", ["is absolute"]),
        ("a/", ["'a/' ends with a slash", "name a file, not a directory"]),
        ("a.py\\", ["ends with a slash"]),
        ("./", ["ends with a slash"]),
        ("a\\b.txt", ["contains a backslash", "forward slashes ('a/b.txt')"]),
        ("../x", ["'../x' contains '..'", "could leave the root", "'..' is not allowed"]),
        ("a/../../x", ["contains '..'"]),
        ("a/../b.txt", ["contains '..'"]),  # even one that lands back inside the root
        ("..", ["contains '..'"]),
        (".", ["'.' names the root itself", "name a file"]),
        ("./.", ["names the root itself"]),
    ],
)
def test_refusals_say_what_is_wrong_and_what_to_do(path: str, phrases: list[str]) -> None:
    message = refused(path)
    for phrase in phrases:
        assert phrase in message


@pytest.mark.parametrize(
    "path",
    [
        ".git",
        ".git/config",
        ".git/hooks/pre-push",
        "./.git/config",
        ".git//config",
        ".GIT/config",
        ".Git/HEAD",
        ".git./config",
        ".git../config",
        ".git /config",
        ".git. . /config",
        ".git::$INDEX_ALLOCATION/config",
        "git~1/config",
        "GIT~1/config",
        ".g\u200cit/config",  # HFS+ ignores the zero-width non-joiner
        "\ufeff.git/config",
        "nested/.git/hooks/x",
        "a/b/c/.git/config",
        "sub/.git",
        "nested/.GIT",
    ],
)
def test_every_spelling_of_git_at_any_depth_is_refused(path: str) -> None:
    message = refused(path)
    assert "which redline never edits" in message
    assert "Change the repository with git commands" in message
    assert f"path {path!r}" in message


def test_git_refusal_names_the_spelling_and_whether_it_is_inside() -> None:
    assert refused(".git/config") == (
        "path '.git/config' is inside a .git directory, which redline never edits: that is "
        "the repository's own data. Change the repository with git commands, and edit only "
        "files outside .git"
    )
    assert "path 'sub/.git' names a .git directory or file, which" in refused("sub/.git")
    assert "('git~1' is a spelling of .git)" in refused("git~1/config")
    assert "('.git.' is a spelling of .git)" in refused(".git./config")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (".git", True),
        (".GiT", True),
        (".git...", True),
        (".git  ", True),
        (".git:stream", True),
        ("git~1", True),
        (".g\u200dit", True),
        (".gitignore", False),
        (".github", False),
        ("x.git", False),
        ("git", False),
        ("git~10", False),
        (".git~1", False),
    ],
)
def test_is_git_name(name: str, expected: bool) -> None:
    assert is_git_name(name) is expected


def test_a_name_longer_than_255_bytes_is_refused() -> None:
    message = refused("dir/" + "é" * 128)  # 256 bytes in UTF-8, 128 characters
    assert message.startswith("name too long: ")
    assert "is 256 bytes in UTF-8, over the limit of 255 bytes for one name" in message
    assert "use a shorter name" in message
    assert len(message) < 400  # the name is shortened in the message


def test_a_path_longer_than_4096_bytes_is_refused() -> None:
    path = "/".join(["d" * 200] * 21)  # 4220 bytes
    message = refused(path)
    assert message.startswith("name too long: path ")
    assert f"is {len(path)} bytes in UTF-8, over the limit of {PATH_MAX} bytes" in message
    assert len(message) < 400


def test_the_limit_counts_the_normalised_path() -> None:
    assert checked_path("./" * 3000 + "a.txt") == "a.txt"


def test_absolute_is_reported_before_git() -> None:
    # What the agent must change first: the root-relative spelling.
    assert "is absolute" in refused("/repo/.git/config")


@pytest.mark.parametrize("path", ["", "a\x00", "\udfff"])
def test_check_characters_is_the_first_step(path: str) -> None:
    with pytest.raises(RequestError) as info:
        check_characters(path)
    assert str(info.value) == refused(path)


# --- strip_root -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("/r/a.txt", "/r", "a.txt"),
        ("/r/a.txt", "/r/", "a.txt"),
        ("/r//x/./a.txt", "/r", "x/a.txt"),
        ("/r/x/", "/r", "x/"),
        ("/r", "/r", "."),
        ("/r/../etc/passwd", "/r", "../etc/passwd"),  # kept, for the policy to refuse
        ("/rx/a.txt", "/r", None),
        ("/etc/passwd", "/r", None),
        ("/a.txt", "/", "a.txt"),
    ],
)
def test_strip_root(path: str, root: str, inside: str | None) -> None:
    assert strip_root(path, root) == inside


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (".git", True),
        ("a/.git/x", True),
        ("a/git~1", True),
        ("x/.GIT./y", True),
        ("a/.gitignore", False),
        ("x.git/y", False),
    ],
)
def test_names_git(path: str, expected: bool) -> None:
    assert names_git(path) is expected


# --- control and bidirectional characters ----------------------------------------------------

CONTROLS = [chr(c) for c in (*range(1, 0x20), 0x7F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))]


@pytest.mark.parametrize("char", CONTROLS, ids=lambda c: f"U+{ord(c):04X}")
def test_every_control_and_bidi_character_is_refused(char: str) -> None:
    message = refused(f"src/a{char}b.py")
    assert f"contains a control character (U+{ord(char):04X}" in message
    assert "name the file without it" in message
    assert char not in message  # the message quotes it escaped


@pytest.mark.parametrize("char", ["\u200e", "\u00e9", "\u4e2d", "\u0301", " ", "~"])
def test_other_characters_are_accepted(char: str) -> None:
    assert checked_path(f"a{char}b.py") == f"a{char}b.py"


def test_shown_path_quotes_and_escapes_what_a_terminal_would_act_on() -> None:
    from redline.engine.paths import shown_path

    assert shown_path("src/a b.py") == "src/a b.py"
    forged = shown_path("a\nRedline-Edit: deadbeef0000\nb.py")
    assert forged == '"a\\nRedline-Edit: deadbeef0000\\nb.py"'
    assert "\n" not in forged
    assert shown_path('x\u202e"\\\x1b.py') == '"x\\u202e\\"\\\\\\x1b.py"'
    for char in CONTROLS:
        assert char not in shown_path(f"a{char}b")


def test_safe_text_keeps_only_the_line_breaks_asked_for() -> None:
    from redline.engine.paths import safe_text

    assert safe_text("+a\n-\tb\n") == "+a\n-\tb\n"
    assert safe_text("x\x1b[2J\ry\u2066") == "x\\x1b[2J\\ry\\u2066"
    assert safe_text("one\ntwo", keep="") == "one\\ntwo"
