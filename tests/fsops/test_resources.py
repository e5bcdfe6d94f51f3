"""A failure of the machine in words: what ran out, and what to do."""

from __future__ import annotations

import errno
import os
import resource

import pytest

from redline.fsops.resources import ResourceError, explain, is_resource, resource_errno


def _error(number: int, filename: str | None = "/repo/.git/objects/pack/x") -> OSError:
    return OSError(number, os.strerror(number), filename)


@pytest.mark.parametrize(
    ("number", "what", "remedy"),
    [
        (errno.ENOSPC, "the disk is full", "free space on the file system that holds /repo"),
        (errno.EROFS, "the file system is read-only", "remount its file system read-write"),
        (errno.EACCES, "permission was denied", "give your user write access to /repo"),
        (errno.EMFILE, "the process has too many files open", "raise the open-file limit"),
        (errno.ENFILE, "the system has too many files open", "stop some programs"),
        (errno.ENOENT, "a file or folder redline was using was removed", "retry"),
    ],
)
def test_each_resource_says_what_ran_out_and_what_to_do(
    number: int, what: str, remedy: str
) -> None:
    text = explain(_error(number))
    assert text.startswith(f"{what} ({os.strerror(number)}); ")
    assert remedy in text
    assert text.endswith("then retry") or text.endswith(
        "retry; if it keeps failing, check that "
        "no program deletes files under "
        "/repo/.git/objects/pack/x"
    )


def test_the_open_file_limit_is_named() -> None:
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    assert f"`ulimit -n`; it is {soft} now" in explain(_error(errno.EMFILE))


def test_libgit2s_errors_without_an_errno_are_read_from_their_message() -> None:
    exc = OSError("failed to write to '/r/.git/index.lock': No space left on device")
    assert exc.errno is None
    assert resource_errno(exc) == errno.ENOSPC
    assert explain(exc, "/r").startswith("the disk is full (No space left on device); ")


def test_other_errors_are_not_resources() -> None:
    assert not is_resource(_error(errno.EEXIST))
    assert not is_resource(ValueError("No space left on device"))
    assert explain(_error(errno.EEXIST)).startswith("File exists (/repo/.git/objects/pack/x)")


def test_a_resource_error_says_what_failed_why_and_what_became_of_the_request() -> None:
    exc = ResourceError(
        "cannot write the edit's objects", _error(errno.ENOSPC), "nothing was written"
    )
    assert str(exc) == (
        "cannot write the edit's objects: the disk is full (No space left on device); free "
        "space on the file system that holds /repo/.git/objects/pack/x, then retry — nothing "
        "was written"
    )
