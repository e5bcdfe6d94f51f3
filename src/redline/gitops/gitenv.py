"""The environment of a process redline starts: git, and the daemon itself.

Git reads variables that send it to another repository than the one it is
pointed at: ``GIT_DIR``, ``GIT_WORK_TREE``, ``GIT_INDEX_FILE``,
``GIT_OBJECT_DIRECTORY``, ``GIT_ALTERNATE_OBJECT_DIRECTORIES``,
``GIT_COMMON_DIR``, ``GIT_NAMESPACE``, ``GIT_CEILING_DIRECTORIES``... A hook
runs with several of them set for the repository git is committing in, and a
caller may export them for its own work. redline always names the repository
itself (``git -C``, ``--repo``), so it drops every ``GIT_*`` variable but the
few that describe the user's git installation and configuration files rather
than a repository.

Dropped on purpose among the ``GIT_CONFIG*`` family: ``GIT_CONFIG_PARAMETERS``
and ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_<n>``/``GIT_CONFIG_VALUE_<n>`` are the
``git -c`` settings of the one command that ran redline (they can set
``core.worktree``, and a daemon outlives that command); ``GIT_CONFIG`` points
the repository's own configuration at another file.

No pygit2 here: the CLI imports this module to start the daemon.
"""

from __future__ import annotations

from collections.abc import Mapping

# Not about a repository: where git's programs are, and which of the user's and
# the system's configuration files it reads (as HOME and XDG_CONFIG_HOME do).
KEPT = frozenset({"GIT_EXEC_PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_CONFIG_NOSYSTEM"})


def without_git_redirects(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the ``GIT_*`` variables that could point git elsewhere."""
    return {k: v for k, v in environ.items() if not k.startswith("GIT_") or k in KEPT}
