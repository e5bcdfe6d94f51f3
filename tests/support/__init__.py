"""What the tests share, in one place (as pre-commit keeps its ``testing/`` package).

- :mod:`support.env` — the pinned git identity, the hermetic environment, the HOME
  guard, short runtime folders, and the environment a subprocess gets;
- :mod:`support.repos` — real repositories built with the ``git`` binary, and what
  git reads back of them;
- :mod:`support.requests` — request builders (``edit``, ``patch``, ``write``…);
- :mod:`support.cli` — ``redline`` run in this process (click's runner) with the
  environment, working folder and stdin a process would have;
- :mod:`support.daemon` — the daemon on a thread of this process, started where the
  CLI would start a process, and stopped after each test;
- :mod:`support.settings_reads` — how often a folder's settings files are read;
- :mod:`support.leaks` — the check, at the end of the run, that no daemon or
  ``redline mcp`` a test started is still alive.

Real processes stay where the process is what a test proves; those tests are marked
``e2e`` (see ``pyproject.toml``).
"""
