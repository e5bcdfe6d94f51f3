"""Session names, checked without pygit2: the CLI refuses a bad name before it starts a daemon."""

from __future__ import annotations

import re

from redline.gitops.errors import SessionError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def check_name(name: str) -> None:
    if not _NAME.fullmatch(name) or name.endswith((".lock", ".")) or ".." in name:
        raise SessionError(
            f"invalid session name {name!r}: use letters, digits, '.', '_' and '-' "
            "(up to 63 characters, starting with a letter or digit)"
        )
