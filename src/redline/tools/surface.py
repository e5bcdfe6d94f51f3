"""Which tools a model is shown, and in which shape its endpoint takes them.

Patch-native models (the gpt-5 family, every later major version, and
codex-auto-review) were trained on ``apply_patch``: they are shown it alone,
since it adds, deletes and moves files too. Every other model is shown
``edit``, ``write`` and ``delete``. ``read`` is always shown.

Overrides (read by :mod:`redline.settings.tools`) ``compat.apply_patch.enabled`` and
``freeform``, each unset (inferred), true or false, per model, per provider or
for every model; the model's beats the provider's beats every model's.
``enabled`` says whether the model is shown apply_patch instead of edit (false
also keeps apply_patch out of the fallbacks); ``freeform`` whether apply_patch
is a custom tool carrying the Lark grammar rather than a JSON function, which
only Responses endpoints can show (inferred: true for patch-native models).

Permissions decide the rest: a tool denied for every path is not shown, a
non-patch-native model whose ``edit`` is denied falls back to ``apply_patch``
with ``write`` and ``delete``, and a patch-native model whose ``apply_patch`` is
denied (or disabled) falls back to ``edit``, ``write`` and ``delete``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from redline.tools.definitions import DEFINITIONS, FREEFORM_PATCH_DESCRIPTION
from redline.tools.permissions import Permissions


class Override(Protocol):
    """One compat setting as a settings file gives it."""

    @property
    def value(self) -> bool: ...
    @property
    def key(self) -> str: ...  # as written, e.g. 'compat.apply_patch.freeform'
    @property
    def source(self) -> str: ...  # the file it came from


class ToolSettings(Protocol):
    """What the settings say of the tools (``redline.settings.tools.Config``)."""

    @property
    def permissions(self) -> Permissions: ...

    def apply_patch_setting(
        self, setting: Any, model: str | None, provider: str | None
    ) -> Override | None: ...


ENDPOINTS = ("responses", "chat", "anthropic")
PATCH_NATIVE_NAMES = frozenset({"codex-auto-review"})
# "gpt-5", "gpt-5-mini", "gpt-5.5", "gpt-6-astra", "gpt-12"…: a major version >= 5.
_GPT_MAJOR = re.compile(r"gpt-(\d+)(?![0-9a-z])")
_FIRST_PATCH_NATIVE_MAJOR = 5


def is_patch_native(model: str | None) -> bool:
    """Whether ``model`` was trained on apply_patch (unknown and None: no).

    A provider prefix is ignored: ``openai/gpt-5``, ``azure/openai/gpt-5``,
    ``openai:gpt-5``; so is a date or tag suffix (``gpt-5-2025-08-07``).
    """
    if not model:
        return False
    name = model.strip().lower().rsplit("/", 1)[-1]
    for candidate in (name, name.split(":", 1)[-1]):
        if candidate in PATCH_NATIVE_NAMES or candidate.startswith("codex-auto-review-"):
            return True
        found = _GPT_MAJOR.match(candidate)
        if found is not None and int(found[1]) >= _FIRST_PATCH_NATIVE_MAJOR:
            return True
    return False


_OPENAI_PROVIDERS = frozenset({"openai", "azure", "azure_openai", "azure-openai"})
_OPENAI_MODEL = re.compile(r"(gpt-|chatgpt|o\d|codex)")


def endpoint_for(model: str, provider: str | None = None) -> tuple[str, str]:
    """The API shape a model is most likely called through, and why: Anthropic's models
    and provider → ``anthropic``; OpenAI's → ``responses``; any other → ``chat``."""
    named = (provider or _prefix(model) or "").strip().lower()
    if named == "anthropic":
        return "anthropic", "provider anthropic"
    if named in _OPENAI_PROVIDERS:
        return "responses", f"provider {named}"
    if named:
        return "chat", f"provider {named}, not OpenAI's or Anthropic's"
    name = model.strip().lower().rsplit("/", 1)[-1].split(":", 1)[-1]
    if name.startswith("claude"):
        return "anthropic", "an Anthropic model"
    if _OPENAI_MODEL.match(name) or is_patch_native(name):
        return "responses", "an OpenAI model"
    return "chat", "a model of neither OpenAI nor Anthropic"


@dataclass(frozen=True)
class Surface:
    tools: tuple[str, ...]  # e.g. ("apply_patch", "read") or ("edit", "write", "delete", "read")
    freeform_patch: bool  # apply_patch shown as a freeform custom tool (Responses endpoint)
    notes: tuple[str, ...]  # why: fallbacks taken, overrides applied


def select(
    model: str | None,
    *,
    provider: str | None = None,
    endpoint: str = "chat",
    config: ToolSettings | None = None,
) -> Surface:
    """The tools ``model`` is shown on ``endpoint`` under ``config`` (None: no settings)."""
    _check_endpoint(endpoint)
    provider = provider or _prefix(model)
    native = is_patch_native(model)
    notes = [
        f"{model or 'no model given'}: "
        + (
            "patch-native (inferred: apply_patch)"
            if native
            else "not patch-native (inferred: edit, write, delete)"
        )
    ]
    enabled = freeform = None
    if config is not None:
        enabled = config.apply_patch_setting("enabled", model, provider)
        freeform = config.apply_patch_setting("freeform", model, provider)
    prefer_patch = native if enabled is None else enabled.value
    if enabled is not None:
        notes.append(f"{enabled.key} = {_toml(enabled.value)} (from {enabled.source})")

    permissions = config.permissions if config is not None else Permissions()
    can = {tool: permissions.available(tool) for tool in ("edit", "apply_patch", "write", "delete")}
    patch_ok = can["apply_patch"] and (enabled is None or enabled.value)
    if prefer_patch and patch_ok:
        tools = ["apply_patch"]
    elif prefer_patch and can["edit"]:
        notes.append("apply_patch is denied for every path: edit, write and delete instead")
        tools = ["edit", "write", "delete"]
    elif prefer_patch:
        notes.append("apply_patch and edit are denied for every path")
        tools = ["write", "delete"]
    elif can["edit"]:
        tools = ["edit", "write", "delete"]
    elif patch_ok:
        notes.append("edit is denied for every path: apply_patch, write and delete instead")
        tools = ["apply_patch", "write", "delete"]
    else:
        why = "denied for every path" if not can["apply_patch"] else "disabled"
        notes.append(f"edit is denied for every path and apply_patch {why}")
        tools = ["write", "delete"]
    for tool in ("write", "delete"):
        if tool in tools and not can[tool]:
            notes.append(f"{tool} is denied for every path: not shown")
    tools = [tool for tool in tools if can[tool]]
    tools.append("read")

    shown_freeform = False
    if "apply_patch" in tools:
        wanted = native if freeform is None else freeform.value
        if freeform is not None:
            notes.append(f"{freeform.key} = {_toml(freeform.value)} (from {freeform.source})")
        if wanted and endpoint == "responses":
            shown_freeform = True
            notes.append("apply_patch is a freeform custom tool carrying the Lark grammar")
        elif wanted:
            notes.append("apply_patch is a JSON function: freeform needs a responses endpoint")
        else:
            notes.append("apply_patch is a JSON function")
    return Surface(tuple(tools), shown_freeform, tuple(notes))


def render(surface: Surface, endpoint: str) -> list[dict[str, Any]]:
    """The tool list exactly as ``endpoint`` takes it (what a model is shown)."""
    _check_endpoint(endpoint)
    shown = []
    for name in surface.tools:
        if name == "apply_patch" and surface.freeform_patch and endpoint == "responses":
            shown.append(_custom_patch_tool())
            continue
        definition = DEFINITIONS[name]
        if endpoint == "responses":
            shown.append(
                {
                    "type": "function",
                    "name": definition.name,
                    "description": definition.description,
                    "parameters": definition.parameters,
                }
            )
        elif endpoint == "chat":
            shown.append(
                {
                    "type": "function",
                    "function": {
                        "name": definition.name,
                        "description": definition.description,
                        "parameters": definition.parameters,
                    },
                }
            )
        else:
            shown.append(
                {
                    "name": definition.name,
                    "description": definition.description,
                    "input_schema": definition.parameters,
                }
            )
    return shown


def _custom_patch_tool() -> dict[str, Any]:
    from redline.tools.grammar import grammar_text

    return {
        "type": "custom",
        "name": "apply_patch",
        "description": FREEFORM_PATCH_DESCRIPTION,
        "format": {"type": "grammar", "syntax": "lark", "definition": grammar_text()},
    }


def downgraded_patch_call(
    arguments: Mapping[str, Any],
    *,
    model: str | None = None,
    provider: str | None = None,
    over_mcp: bool = False,
) -> str | None:
    """The error for apply_patch arguments that arrived as ``{"input": "..."}``, else None,
    worded for the front end that received them.

    ``redline apply`` and the daemon are fed by a harness that shows the model its
    tools: there, a gateway between the model and redline turned the freeform custom
    tool into a JSON function, so the patch came under the name the custom tool's
    input has; the fix is to show the model the JSON form (a setting). Over MCP
    (``over_mcp``) the model is shown apply_patch as a JSON function taking
    ``{"patch": "..."}`` already: the caller only has to send the patch under that
    name, and no setting would change anything.
    """
    if "patch" in arguments or not isinstance(arguments.get("input"), str):
        return None
    if over_mcp:
        return (
            'apply_patch arguments arrived as {"input": "..."}, but this server\'s apply_patch '
            'takes the patch text as {"patch": "..."} (see its inputSchema); nothing was '
            'applied. Call apply_patch again with the same patch text as the "patch" argument'
        )
    from redline.userdirs import user_config_file

    if model:
        table = f'[compat.models."{model}".apply_patch]'
    elif provider:
        table = f"[compat.providers.{provider}.apply_patch]"
    else:
        table = "[compat.apply_patch]"
    return (
        'apply_patch arguments arrived as {"input": "..."} instead of {"patch": "..."}: '
        "something between the model and redline (a gateway or proxy) turned the freeform "
        "apply_patch tool into a JSON function, and nothing was applied. Set "
        f"compat.apply_patch.freeform: false — {table} freeform = false — in the "
        f"repository's .redline.toml or in {user_config_file()}, so the model is shown "
        'apply_patch as a JSON function taking {"patch": "..."}; then send the patch again'
    )


def _prefix(model: str | None) -> str | None:
    """The provider a model name carries (``openai`` of ``openai/gpt-5``), if any."""
    if model and "/" in model:
        return model.split("/", 1)[0]
    return None


def _toml(value: bool) -> str:
    return "true" if value else "false"


def _check_endpoint(endpoint: str) -> None:
    if endpoint not in ENDPOINTS:
        raise ValueError(f"unknown endpoint {endpoint!r}; use one of {', '.join(ENDPOINTS)}")
