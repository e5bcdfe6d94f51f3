"""redline's settings: ``.redline.toml`` (or ``[tool.redline]`` in ``pyproject.toml``) and
the user's ``config.toml``, read here and nowhere else.

- :mod:`~redline.settings.files`: where they are and the one reading of them (which
  file holds the repository's, its TOML, ``[tool.redline]``), from a folder, a
  commit's files or a tree;
- :mod:`~redline.settings.policy`: the guard policy (``[guard]``, ``[[validate]]``);
- :mod:`~redline.settings.tools`: the permissions and the tool surfaces
  (``[permission]``, ``[compat]``, ``[agent]``).

A file that cannot be used is a :class:`~redline.engine.errors.SettingsError` naming the
file and the key, or the line and column.
"""
