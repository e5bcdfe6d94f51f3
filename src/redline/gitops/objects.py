"""Writing git objects: blobs and commits, serialised here.

When the writer has a staging backend (the daemon's, see gitops.packs and
gitops.writer) an object goes straight into it: libgit2's own write path looks
for every new object in all backends and, not finding it, rescans the pack
directory first (about 0.1 ms an object) before handing it to the same backend.
Without one, objects are written through libgit2.
Trees are still built by libgit2's TreeBuilder (see gitops.trees), which is
quicker than doing it in Python even with that detour.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import pygit2

from redline.gitops.writer import PLAIN, Writer

COMMIT = int(pygit2.enums.ObjectType.COMMIT)
BLOB = int(pygit2.enums.ObjectType.BLOB)
_NAMES = {COMMIT: b"commit", BLOB: b"blob"}


def write(repo: pygit2.Repository, kind: int, data: bytes, writer: Writer = PLAIN) -> pygit2.Oid:
    """Store one object; its id."""
    staged = writer.staged
    if staged is None:
        return repo.odb.write(kind, data)
    header = b"%s %d\0" % (_NAMES[kind], len(data))
    oid = pygit2.Oid(raw=hashlib.sha1(header + data).digest())
    staged.stage(oid, kind, data)
    return oid


def write_blob(repo: pygit2.Repository, data: bytes, writer: Writer = PLAIN) -> pygit2.Oid:
    return write(repo, BLOB, data, writer)


def write_commit(
    repo: pygit2.Repository,
    tree: pygit2.Oid,
    parents: Sequence[pygit2.Oid],
    author: pygit2.Signature,
    committer: pygit2.Signature,
    message: str,
    writer: Writer = PLAIN,
) -> pygit2.Oid:
    lines = [b"tree " + str(tree).encode()]
    lines += [b"parent " + str(parent).encode() for parent in parents]
    lines.append(b"author " + ident(author))
    lines.append(b"committer " + ident(committer))
    body = b"\n".join(lines) + b"\n\n" + message.encode("utf-8")
    return write(repo, COMMIT, body, writer)


def ident(sig: pygit2.Signature) -> bytes:
    """``Name <email> seconds ±hhmm``, as commits and reflogs record who and when."""
    sign = "-" if sig.offset < 0 else "+"
    hours, minutes = divmod(abs(sig.offset), 60)
    return f"{sig.name} <{sig.email}> {sig.time} {sign}{hours:02d}{minutes:02d}".encode()
