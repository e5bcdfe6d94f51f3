"""The git hooks tests install, answered by ``redline`` in this process.

``redline hooks install`` writes a hook that runs ``$python -m redline guard
--stage HOOK`` (or ``notes import`` after a fetch), ``$python`` being the
installing interpreter. While :func:`hooks_in_process` is in force, commands
run through ``support.cli`` install hooks whose ``$python`` is a small Perl
script (:data:`SHIM`, a few milliseconds to start where Python takes a third
of a second): for ``-m redline guard|notes`` it hands its arguments, working
folder, environment, stdin and process id to a server on a thread of this
process, which runs that ``redline`` command there (``support.cli``, with
``os.getpid()`` naming the hook's process) and sends back its exit code,
stdout and stderr; anything else it runs with the real interpreter. So
git still runs the installed hook script — its legacy chaining, the refs a
pre-push hook reads, the arguments — and stops at the guard's exit code, while
the guard itself runs in-process. A hook that fires while this process is
already inside a ``redline`` command (a fetch that ``redline notes sync``
runs, say) is run by the real interpreter instead. Tests marked ``e2e`` keep
hooks that start a real Python.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from support import cli

PERL = shutil.which("perl")

SHIM_SOURCE = r"""#!{perl}
# The interpreter of the hooks the redline tests install (tests/support/hooks.py).
use strict;
use warnings;
use Cwd ();
use IO::Socket::UNIX;

my $real = '{python}';
my $path = '{socket}';
if (@ARGV >= 3 && $ARGV[0] eq '-m' && $ARGV[1] eq 'redline'
    && ($ARGV[2] eq 'guard' || $ARGV[2] eq 'notes') && -S $path) {
    binmode STDIN;
    my $stdin = do { local $/; <STDIN> };
    $stdin = '' unless defined $stdin;
    my $host = IO::Socket::UNIX->new(Type => SOCK_STREAM(), Peer => $path);
    if ($host) {
        binmode $host;
        my @ask = (Cwd::getcwd(), join("\0", @ARGV[2 .. $#ARGV]),
                   join("\0", map { "$_=$ENV{$_}" } sort keys %ENV), $stdin, $$);
        print $host join('', map { length($_) . ':' . $_ . ',' } @ask);
        shutdown($host, 1);
        my $reply = do { local $/; <$host> };
        my @got;
        while (defined $reply && $reply =~ s/^(\d+)://s) {
            push @got, substr($reply, 0, $1, '');
            substr($reply, 0, 1, '');
        }
        if (@got == 3) {
            binmode STDOUT;
            binmode STDERR;
            print STDOUT $got[1];
            print STDERR $got[2];
            exit($got[0]);
        }
    }
    open(my $child, '|-', $real, @ARGV) or die "cannot run $real: $!";
    binmode $child;
    print $child $stdin;
    close($child);
    exit($? >> 8);
}
exec { $real } $real, @ARGV or die "cannot run $real: $!";
"""


def _netstrings(data: bytes) -> list[bytes]:
    fields = []
    while data:
        size, _, rest = data.partition(b":")
        n = int(size)
        fields.append(rest[:n])
        data = rest[n + 1 :]
    return fields


def _netstring(value: bytes) -> bytes:
    return str(len(value)).encode() + b":" + value + b","


@contextlib.contextmanager
def as_process(pid: int) -> Iterator[None]:
    """``os.getpid()`` is the hook's process while its command runs here: the guard looks
    at that process's ancestors for the git command that runs it (``commit --amend``,
    ``push --dry-run``), as it would in the hook's own Python."""
    real = os.getpid
    os.getpid = lambda: pid
    try:
        yield
    finally:
        os.getpid = real


class HookHost:
    """The server the shim talks to, on a thread of this process."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="rl-hooks-", dir="/tmp"))
        self.path = self.folder / "host.sock"
        self.shim = self.folder / "python"
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(self.path))
        self._listener.listen(16)
        self.shim.write_text(
            SHIM_SOURCE.replace("{perl}", str(PERL))
            .replace("{python}", sys.executable)
            .replace("{socket}", str(self.path))
        )
        self.shim.chmod(0o755)
        self._thread = threading.Thread(target=self._serve, name="redline-hook-host", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:  # closed: the run is over
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            chunks = []
            while chunk := conn.recv(1 << 16):
                chunks.append(chunk)
            cwd, argv, environ, stdin, pid = _netstrings(b"".join(chunks))
            args = [a.decode() for a in argv.split(b"\0")]
            env = dict(
                line.decode(errors="surrogateescape").split("=", 1)
                for line in environ.split(b"\0")
                if b"=" in line
            )
            if not cli.turn.acquire(blocking=False):
                conn.sendall(b"")  # inside a redline command already: the shim runs Python
                return
            try:
                with as_process(int(pid)):
                    done = cli.run_bytes(args, input=stdin, env=env, cwd=cwd.decode())
            finally:
                cli.turn.release()
            conn.sendall(
                _netstring(str(done.returncode).encode())
                + _netstring(done.stdout)
                + _netstring(done.stderr)
            )

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept()
        self._listener.close()
        self._thread.join(timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)


_host: list[HookHost] = []


def host() -> HookHost:
    """The run's one hook host (started on first use)."""
    if not _host:
        _host.append(HookHost())
    return _host[0]


def close() -> None:
    while _host:
        _host.pop().close()


@contextlib.contextmanager
def hooks_in_process() -> Iterator[None]:
    """Hooks installed by in-process commands in the block call back into this process."""
    if PERL is None:  # without Perl, hooks start Python as they do for users
        yield
        return
    saved = cli.interpreter
    cli.interpreter = str(host().shim)
    try:
        yield
    finally:
        cli.interpreter = saved


def installed_interpreter() -> str:
    """The interpreter in-process commands record in the hooks they install."""
    return cli.interpreter or sys.executable
