"""The settings of a folder edited in this process (embedded mode), read once.

``redline apply`` without a session, and ``redline mcp`` in embedded mode, edit
the files under a folder: its
settings files (:mod:`~redline.settings.files`) and the user's own are read
once, when the stream starts, and each part goes to the step that needs it —
the guard policy (which files are validated), the permissions, and the user's
leave for an agent to change the settings files themselves. A part that cannot
be used is kept with its error: the policy's refuses every edit, the
permissions' every request but a read.
"""

from __future__ import annotations

from pathlib import Path

from redline.engine.errors import SettingsError
from redline.engine.policy import POLICY_FILE, PYPROJECT, Policy
from redline.engine.records import record
from redline.settings import files
from redline.settings.policy import policy_in_directory
from redline.settings.tools import Config, load_config, user_allows_policy_files


@record(frozen=True)
class FolderSettings:
    """What the settings say for one folder. ``policy`` is None when no settings file is
    there (nothing to validate) or when it cannot be used (``policy_error`` says why);
    ``config`` is None when a file cannot be used (``config_error``)."""

    policy: Policy | None
    policy_error: SettingsError | None
    config: Config | None
    config_error: SettingsError | None
    policy_files: bool  # the user's leave for agents to change the settings files

    def usable_config(self) -> Config:
        """The permissions and tool settings (the SettingsError saying why they cannot be
        used, when they cannot)."""
        if self.config is None:
            assert self.config_error is not None
            raise self.config_error
        return self.config


def read_folder(root: Path, user_file: Path | None = None) -> FolderSettings:
    """The settings for the folder ``root`` and its user (``user_file``: the user's config
    file, default the platform's), each file read once."""
    disk = files.cached(files.folder_reader(root))
    policy: Policy | None = None
    policy_error: SettingsError | None = None
    if (root / POLICY_FILE).is_file() or (root / PYPROJECT).is_file():
        try:
            policy = policy_in_directory(root, disk)
        except SettingsError as exc:
            policy_error = exc
    config: Config | None = None
    config_error: SettingsError | None = None
    try:
        config = load_config(root, user_file=user_file, disk=disk)
    except SettingsError as exc:
        config_error = exc
    if config is not None:
        leave = config.policy_files
    else:
        leave = user_allows_policy_files(user_file)
    return FolderSettings(policy, policy_error, config, config_error, leave)
