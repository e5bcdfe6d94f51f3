"""Who is at the other end of a connected Unix socket: its user id, from the kernel.

Both ends check it: the daemon serves only the user who started it, and a
client talks only to a daemon of its own user (a socket in a shared place
could be someone else's). :func:`peer_uid` asks the kernel — ``SO_PEERCRED``
on Linux and OpenBSD, ``LOCAL_PEERCRED`` on macOS and FreeBSD — and returns
None where the platform cannot tell. Callers fail closed on None: a peer that
cannot be verified is refused, never let in.
"""

from __future__ import annotations

import socket
import struct
import sys

_SOL_LOCAL = 0  # macOS and FreeBSD: the socket level of LOCAL_PEERCRED
_LOCAL_PEERCRED = 1
_XUCRED_VERSION = 0
# struct xucred {u_int cr_version; uid_t cr_uid; short cr_ngroups; gid_t cr_groups[16];}
_XUCRED = struct.Struct("=IIh2x16I")


def peer_uid(sock: socket.socket) -> int | None:
    """The effective user id of the peer of ``sock``; None when the platform cannot tell."""
    try:
        if sys.platform.startswith("linux") and hasattr(socket, "SO_PEERCRED"):
            # struct ucred {pid_t pid; uid_t uid; gid_t gid;}
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return int(struct.unpack("iIi", raw)[1])
        if sys.platform.startswith("openbsd") and hasattr(socket, "SO_PEERCRED"):
            # struct sockpeercred {uid_t uid; gid_t gid; pid_t pid;}
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            return int(struct.unpack("IIi", raw)[0])
        if sys.platform == "darwin" or sys.platform.startswith("freebsd"):
            option = getattr(socket, "LOCAL_PEERCRED", _LOCAL_PEERCRED)
            raw = sock.getsockopt(_SOL_LOCAL, option, _XUCRED.size)
            version, uid, *_ = _XUCRED.unpack(raw.ljust(_XUCRED.size, b"\0"))
            return int(uid) if version == _XUCRED_VERSION else None
    except OSError:
        return None
    return None
