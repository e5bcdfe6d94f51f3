"""The tool settings: ``[permission]``, ``[compat]`` and ``[agent]``, from the repository
and the user.

Read from two files:

- the user's ``config.toml`` in the platform's config folder
  (``platformdirs.user_config_dir("redline")``: ``~/.config/redline`` on Linux,
  ``$XDG_CONFIG_HOME/redline`` when that is set);
- the repository's ``.redline.toml``, or the ``[tool.redline]`` table of its
  ``pyproject.toml`` when there is no ``.redline.toml`` (as the guard reads its
  policy): in embedded mode the files in the folder; in git mode the files as
  the session's main line has them committed (:class:`Committed`, read by the
  caller), never the session's worktree, where the agent works.

Permissions are decided per file and the stricter decision stands: the
repository can add restrictions, never lift the user's (tools.permissions).
One permission only the user's file can give: ``policy_files = "allow"``, an
agent's leave to change those settings files in embedded mode.

The shape (the README's "Tool surfaces and permissions" section says more)::

    [compat.apply_patch]                     # every model
    enabled = true                           # unset: inferred from the model
    freeform = false
    [compat.providers.openrouter.apply_patch]
    freeform = false
    [compat.models."gpt-5-mini".apply_patch]
    enabled = false

    [permission]
    "*" = "allow"                            # allow | deny | ask
    apply_patch = "ask"                      # alias: patch

    [agent]                                  # the model ``redline mcp`` serves when
    model = "gpt-5"                          # no --model is given (usually the user's
    provider = "openai"                      # file: the agent is the user's choice)
    [permission.edit]                        # path globs, the last match wins
    "**" = "allow"
    "migrations/**" = "deny"

"Key by key": a compat setting (``enabled`` of one scope) from the repository
replaces the user's. ``[guard]`` and ``[[validate]]`` are the
guard's (:mod:`redline.settings.policy`) and are not read here.

Validated by hand, like the guard's policy: ``redline apply`` reads this before
every request batch, and pydantic costs ~70 ms to import.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, cast

from redline.engine.errors import SettingsError
from redline.engine.policy import POLICY_FILE, POLICY_SECTIONS, glob_problem
from redline.engine.records import field, record
from redline.settings import files
from redline.settings.files import Committed
from redline.tools.permissions import (
    ACTIONS,
    ALIASES,
    TOOL_KEYS,
    Action,
    PathRule,
    Permissions,
)
from redline.userdirs import user_config_file

PYPROJECT = "pyproject.toml"
README_SECTION = 'the README\'s "Tool surfaces and permissions" section'
SETTINGS = ("enabled", "freeform")
Setting = Literal["enabled", "freeform"]
Scope = Literal["all", "provider", "model"]
_SECTIONS = {"permission", "compat", "agent", *POLICY_SECTIONS}
_AGENT_KEYS = ("model", "provider")


class ConfigError(SettingsError):
    """A tool setting in ``source`` cannot be used (see :class:`SettingsError`)."""

    what = "redline configuration"
    see = README_SECTION


@record(frozen=True)
class Override:
    """One compat setting as a file gives it."""

    value: bool
    key: str  # as written, e.g. 'compat.providers.openrouter.apply_patch.freeform'
    source: str  # the file it came from


@record(frozen=True)
class Config:
    """The tool settings of the settings files: the permissions, the compat overrides, the
    agent's model."""

    permissions: Permissions = field(default_factory=Permissions)
    # (scope, name, setting) -> Override; name is "" for scope "all".
    compat: Mapping[tuple[Scope, str, Setting], Override] = field(default_factory=dict)
    sources: tuple[str, ...] = ()  # the files read, user's first
    # [agent]: the model (and its provider) a tool server serves when not told
    model: str | None = None
    provider: str | None = None
    # The user's leave for an agent to change redline's settings files (.redline.toml,
    # [tool.redline]) in embedded mode: ``[permission] policy_files = "allow"``.
    policy_files: bool = False

    def apply_patch_setting(
        self, setting: Setting, model: str | None, provider: str | None
    ) -> Override | None:
        """The override of ``setting`` for this model and provider: the model's (its full
        name, then without a provider prefix), else the provider's, else every model's;
        None when no file sets it (the value is inferred)."""
        candidates: list[tuple[Scope, str]] = []
        if model:
            candidates.append(("model", model))
            bare = model.rsplit("/", 1)[-1]
            if bare != model:
                candidates.append(("model", bare))
        if provider:
            candidates.append(("provider", provider))
        candidates.append(("all", ""))
        for scope, name in candidates:
            found = self.compat.get((scope, name, setting))
            if found is not None:
                return found
        return None


def repository_root(start: Path) -> Path:
    """The working directory of the repository around ``start`` (``start`` outside one)."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def load_config(
    root: Path,
    committed: Committed | None = None,
    user_file: Path | None = None,
    disk: files.Reader | None = None,
) -> Config:
    """The settings for the repository (or plain folder) whose working directory is ``root``;
    the repository's file as ``committed`` holds it when given (git mode), else as ``root``
    has it (read by ``disk``, default :func:`~redline.settings.files.folder_reader`).
    ``user_file``: the user's config file (default :func:`user_config_file`; the daemon
    names the one of the environment it started in).

    ConfigError, naming the file and the key, when either file is unusable.
    """
    layers: list[dict[str, tuple[PathRule, ...]]] = []
    compat: dict[tuple[Scope, str, Setting], Override] = {}
    sources: list[str] = []
    agent: dict[str, str] = {}
    policy_files = False
    repository = _repository_file(root, committed, disk)
    for (data, source), own in ((_user_file(user_file), True), (repository, False)):
        if data is None:
            layers.append({})
            continue
        sources.append(source)
        rules, settings = _parse(data, source, user=own)
        if own:
            policy_files = _policy_files(data.get("permission"), source)
        layers.append(rules)
        compat.update(settings)
        agent.update(_agent(data.get("agent", {}), source))
    user, repository_rules = layers
    return Config(
        Permissions(repository_rules, str(root), user),
        compat,
        tuple(sources),
        agent.get("model"),
        agent.get("provider"),
        policy_files,
    )


def user_allows_policy_files(user_file: Path | None = None) -> bool:
    """Whether the user's own config file lets an agent change redline's settings files in
    embedded mode (``[permission] policy_files = "allow"``); False when it cannot be read
    (what is wrong with it is reported by the permission check)."""
    data, source = _user_file_quietly(user_file)
    if data is None:
        return False
    try:
        return _policy_files(data.get("permission"), source)
    except ConfigError:
        return False


def _user_file_quietly(path: Path | None = None) -> tuple[dict[str, Any] | None, str]:
    try:
        return _user_file(path)
    except ConfigError:
        return None, ""


def parse_config(text: str, source: str) -> Config:
    """One file's settings (for tests and tools that hold the text)."""
    rules, settings = _parse(files.parse(text, source, ConfigError), source)
    return Config(Permissions(rules), settings, (source,))


def _user_file(path: Path | None = None) -> tuple[dict[str, Any] | None, str]:
    path = path or user_config_file()
    return _read(path, str(path)), str(path)


def _repository_file(
    root: Path, committed: Committed | None, disk: files.Reader | None = None
) -> tuple[dict[str, Any] | None, str]:
    """redline's table in the repository's settings file and the source naming it: as
    ``committed`` holds it (git mode), else as the folder ``root`` has it."""
    if committed is None:
        read = _disk(root, disk or files.folder_reader(root))
        own = str(root / POLICY_FILE)
        section_source = f"{root / PYPROJECT} [tool.redline]"
        whole_source = str(root / PYPROJECT)
    else:
        read = committed.read
        own = f"{POLICY_FILE} {committed.where}"
        section_source = whole_source = f"{PYPROJECT} [tool.redline] {committed.where}"
    found = files.find(read)
    if found is None:
        return None, section_source
    source = own if found.whole else whole_source
    if committed is None:
        try:
            text = found.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError(source, "file", f"cannot be read ({exc})") from None
    else:
        text = found.text()
    data = files.parse(text, source, ConfigError)
    if found.whole:
        return data, own
    section = files.section(data)
    if section is not None and not isinstance(section, dict):
        raise ConfigError(section_source, "tool.redline", "must be a table")
    return section, section_source


def _disk(root: Path, disk: files.Reader) -> files.Reader:
    def read(name: str) -> bytes | None:
        try:
            return disk(name)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise ConfigError(str(root / name), "file", f"cannot be read ({reason})") from None

    return read


def _read(path: Path, source: str) -> dict[str, Any] | None:
    """The user's file as TOML; None when it is missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(source, "file", f"cannot be read ({reason})") from None
    return files.parse(text, source, ConfigError)


def _parse(
    data: dict[str, Any], source: str, user: bool = False
) -> tuple[dict[str, tuple[PathRule, ...]], dict[tuple[Scope, str, Setting], Override]]:
    unknown = sorted(set(data) - _SECTIONS)
    if unknown:
        raise ConfigError(
            source,
            unknown[0],
            "unknown key; use [permission], [compat], [agent] (or the guard's [guard] and "
            "[[validate]])",
        )
    _agent(data.get("agent", {}), source)
    rules = _permissions(data.get("permission", {}), source, user)
    return rules, _compat(data.get("compat", {}), source)


def _agent(table: Any, source: str) -> dict[str, str]:
    """``[agent]``: ``model`` and ``provider``, names as the model's API spells them."""
    if not isinstance(table, dict):
        raise ConfigError(source, "agent", "must be a table with model and provider")
    for key, value in table.items():
        if key not in _AGENT_KEYS:
            raise ConfigError(source, f"agent.{key}", "unknown key; use model, provider")
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(source, f"agent.{key}", "must be a non-empty string")
    return {key: value.strip() for key, value in table.items()}


# --- [permission] -------------------------------------------------------------------------


POLICY_FILES_KEY = "policy_files"


def _policy_files(table: Any, source: str) -> bool:
    """The user's ``[permission] policy_files``: "allow" lets an agent change redline's
    settings files in embedded mode; "deny" (the default) does not."""
    if not isinstance(table, dict) or POLICY_FILES_KEY not in table:
        return False
    value = table[POLICY_FILES_KEY]
    if value not in ("allow", "deny"):
        raise ConfigError(
            source,
            f"permission.{POLICY_FILES_KEY}",
            f'must be "allow" or "deny" (got {value!r}); "allow" lets an agent change '
            ".redline.toml and [tool.redline] in embedded mode",
        )
    return bool(value == "allow")


def _permissions(table: Any, source: str, user: bool = False) -> dict[str, tuple[PathRule, ...]]:
    if not isinstance(table, dict):
        raise ConfigError(source, "permission", "must be a table of tool = action")
    rules: dict[str, tuple[PathRule, ...]] = {}
    written: dict[str, str] = {}
    for key, value in table.items():
        if key == POLICY_FILES_KEY:
            if not user:
                raise ConfigError(
                    source,
                    f"permission.{POLICY_FILES_KEY}",
                    "only your own config file can let an agent change redline's settings "
                    f"files ({user_config_file()}); a repository's file cannot give that "
                    "leave — remove the key from it",
                )
            continue
        tool = ALIASES.get(key, key)
        if tool not in TOOL_KEYS:
            raise ConfigError(
                source,
                f"permission.{_key(key)}",
                'unknown tool; use edit, apply_patch (or patch), write, delete or "*" '
                "(read needs no permission)",
            )
        if tool in written:
            raise ConfigError(
                source,
                f"permission.{_key(key)}",
                f"{key} and {written[tool]} name the same tool; keep one",
            )
        written[tool] = key
        rules[tool] = _tool_rules(key, value, source)
    return rules


def _tool_rules(key: str, value: Any, source: str) -> tuple[PathRule, ...]:
    where = f"permission.{_key(key)}"
    if isinstance(value, str):
        return (PathRule(None, _action(value, where, source), f'{where} = "{value}"', source),)
    if not isinstance(value, dict) or not value:
        raise ConfigError(
            source,
            where,
            'must be "allow", "deny" or "ask", or a table of path globs to actions '
            f"(got {value!r})",
        )
    rules = []
    for pattern, action in value.items():
        at = f"{where}.{_key(pattern)}"
        problem = glob_problem(pattern)
        if problem is not None:
            raise ConfigError(source, at, problem)
        rule = f'{at} = "{action}"'
        rules.append(PathRule(pattern, _action(action, at, source), rule, source))
    return tuple(rules)


def _action(value: Any, where: str, source: str) -> Action:
    if value not in ACTIONS:
        raise ConfigError(source, where, f'must be "allow", "deny" or "ask" (got {value!r})')
    return cast(Action, value)


def _key(name: str) -> str:
    """A TOML key as it must be written: bare when it can be, else quoted."""
    if name and all(c.isascii() and (c.isalnum() or c in "-_") for c in name):
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- [compat] -----------------------------------------------------------------------------


def _compat(table: Any, source: str) -> dict[tuple[Scope, str, Setting], Override]:
    if not isinstance(table, dict):
        raise ConfigError(source, "compat", "must be a table")
    unknown = sorted(set(table) - {"apply_patch", "providers", "models"})
    if unknown:
        raise ConfigError(
            source,
            f"compat.{_key(unknown[0])}",
            "unknown key; use [compat.apply_patch], [compat.providers.<name>.apply_patch] "
            'or [compat.models."<model>".apply_patch]',
        )
    found: dict[tuple[Scope, str, Setting], Override] = {}
    if "apply_patch" in table:
        _settings(found, "all", "", table["apply_patch"], "compat.apply_patch", source)
    for scope, plural in (("provider", "providers"), ("model", "models")):
        names = table.get(plural, {})
        if not isinstance(names, dict):
            raise ConfigError(source, f"compat.{plural}", "must be a table of names")
        for name, entry in names.items():
            where = f"compat.{plural}.{_key(name)}"
            if not isinstance(entry, dict) or set(entry) - {"apply_patch"}:
                raise ConfigError(source, where, "must hold only an apply_patch table")
            if "apply_patch" in entry:
                scoped = cast(Scope, scope)
                _settings(found, scoped, name, entry["apply_patch"], f"{where}.apply_patch", source)
    return found


def _settings(
    found: dict[tuple[Scope, str, Setting], Override],
    scope: Scope,
    name: str,
    table: Any,
    where: str,
    source: str,
) -> None:
    if not isinstance(table, dict):
        raise ConfigError(source, where, "must be a table with enabled and/or freeform")
    for setting, value in table.items():
        at = f"{where}.{_key(setting)}"
        if setting not in SETTINGS:
            raise ConfigError(source, at, "unknown key; use enabled or freeform")
        if not isinstance(value, bool):
            raise ConfigError(
                source, at, f"must be true or false (leave it out to infer it; got {value!r})"
            )
        found[(scope, name, cast(Setting, setting))] = Override(value, at, source)
