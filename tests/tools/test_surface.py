"""tools.surface: which tools each model is shown, per override and permission, per endpoint."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import lark
import pytest
from jsonschema import Draft202012Validator

from conformance_paths import LENIENT_SCENARIOS, MALFORMED_SCENARIOS, SCENARIOS, scenario_names
from conformance_paths import MISSING as NO_SCENARIOS
from redline.settings.tools import Config, load_config, parse_config
from redline.tools.definitions import DEFINITIONS, FREEFORM_PATCH_DESCRIPTION
from redline.tools.grammar import grammar_text
from redline.tools.surface import (
    ENDPOINTS,
    Surface,
    downgraded_patch_call,
    is_patch_native,
    render,
    select,
)

PATCH_NATIVE = [
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "gpt-5-codex",
    "gpt-5.5",
    "gpt-5.1-codex-max",
    "gpt-5-2025-08-07",
    "gpt-6-astra",
    "gpt-7",
    "gpt-12-turbo",
    "codex-auto-review",
    "openai/gpt-5",
    "azure/openai/gpt-5-mini",
    "openai:gpt-5",
    "GPT-5",
]
EDIT_MODELS = [
    "gpt-4o",
    "gpt-4",
    "gpt-4.1",
    "gpt-3.5-turbo",
    "chatgpt-4o-latest",
    "o3",
    "o4-mini",
    "gpt-oss-120b",
    "openai/gpt-oss-20b",
    "claude-sonnet-4-5",
    "claude-3-5-haiku",
    "anthropic/claude-opus-4",
    "qwen3-coder",
    "qwen2.5-72b",
    "glm-4.6",
    "deepseek-v3",
    "deepseek-coder",
    "gemini-2.5-pro",
    "mistral-large",
    "some-unknown-model",
    "",
]
MODELS = PATCH_NATIVE + EDIT_MODELS
EDIT_SURFACE = ("edit", "write", "delete", "read")
PATCH_SURFACE = ("apply_patch", "read")


@pytest.mark.parametrize("model", PATCH_NATIVE)
def test_patch_native_models(model: str) -> None:
    assert is_patch_native(model)


@pytest.mark.parametrize("model", EDIT_MODELS)
def test_every_other_model_is_not_patch_native(model: str) -> None:
    assert not is_patch_native(model)


def test_no_model_is_not_patch_native() -> None:
    assert not is_patch_native(None)
    assert select(None).tools == EDIT_SURFACE


# --- every override combination ----------------------------------------------------------

STATES = (None, True, False)  # unset, true, false
COMBINATIONS = list(itertools.product(STATES, STATES))  # (enabled, freeform)


def expected(model: str, enabled: bool | None, freeform: bool | None, endpoint: str) -> Surface:
    """The rule as the issue states it, written out plainly."""
    native = model in PATCH_NATIVE
    patch = native if enabled is None else enabled
    tools = PATCH_SURFACE if patch else EDIT_SURFACE
    wants_freeform = native if freeform is None else freeform
    shown_freeform = patch and wants_freeform and endpoint == "responses"
    return Surface(tools, shown_freeform, ())


def compat(scope: str, model: str, enabled: bool | None, freeform: bool | None) -> str:
    table = {
        "all": "[compat.apply_patch]",
        "provider": "[compat.providers.acme.apply_patch]",
        "model": f'[compat.models."{model}".apply_patch]',
    }[scope]
    lines = [table]
    for name, value in (("enabled", enabled), ("freeform", freeform)):
        if value is not None:
            lines.append(f"{name} = {str(value).lower()}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(("enabled", "freeform"), COMBINATIONS)
@pytest.mark.parametrize("model", [m for m in MODELS if m])
def test_every_model_with_every_override(
    model: str, enabled: bool | None, freeform: bool | None
) -> None:
    for scope, endpoint in itertools.product(("all", "provider", "model"), ENDPOINTS):
        config = parse_config(compat(scope, model, enabled, freeform), ".redline.toml")
        surface = select(model, provider="acme", endpoint=endpoint, config=config)
        want = expected(model, enabled, freeform, endpoint)
        got = (surface.tools, surface.freeform_patch)
        assert got == (want.tools, want.freeform_patch), (scope, endpoint)


@pytest.mark.parametrize(("model_level", "provider_level"), list(itertools.product(STATES, STATES)))
@pytest.mark.parametrize("model", ["gpt-5", "claude-sonnet-4-5"])
def test_the_model_setting_beats_the_provider_setting(
    model: str, model_level: bool | None, provider_level: bool | None
) -> None:
    text = compat("provider", model, provider_level, provider_level) + compat(
        "model", model, model_level, model_level
    )
    config = parse_config(text, ".redline.toml")
    surface = select(model, provider="acme", endpoint="responses", config=config)
    decided = model_level if model_level is not None else provider_level
    want = expected(model, decided, decided, "responses")
    assert (surface.tools, surface.freeform_patch) == (want.tools, want.freeform_patch)
    # another provider does not get acme's setting
    other = select(model, provider="other", endpoint="responses", config=config)
    want = expected(model, model_level, model_level, "responses")
    assert (other.tools, other.freeform_patch) == (want.tools, want.freeform_patch)


def test_a_provider_prefix_in_the_name_is_the_provider(tmp_path: Path) -> None:
    config = parse_config(compat("provider", "", False, None).replace("acme", "openai"), "x")
    assert select("openai/gpt-5", config=config).tools == EDIT_SURFACE
    assert select("gpt-5", config=config).tools == PATCH_SURFACE


@pytest.mark.parametrize(("user", "repository"), list(itertools.product(STATES, STATES)))
def test_the_repository_file_beats_the_user_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, user: bool | None, repository: bool | None
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "redline").mkdir(parents=True)
    (tmp_path / "xdg" / "redline" / "config.toml").write_text(compat("all", "", None, user))
    (tmp_path / ".redline.toml").write_text(compat("model", "gpt-5", None, repository))
    surface = select("gpt-5", endpoint="responses", config=load_config(tmp_path))
    decided = repository if repository is not None else user
    assert surface.freeform_patch is (True if decided is None else decided)
    assert any("compat." in note for note in surface.notes) is (decided is not None)


def test_notes_say_where_an_override_came_from() -> None:
    config = parse_config('[compat.models."gpt-5".apply_patch]\nenabled = false\n', "repo.toml")
    surface = select("gpt-5", endpoint="responses", config=config)
    assert surface.tools == EDIT_SURFACE
    assert "compat.models.gpt-5.apply_patch.enabled = false (from repo.toml)" in surface.notes


def test_freeform_needs_a_responses_endpoint() -> None:
    for endpoint in ("chat", "anthropic"):
        surface = select("gpt-5", endpoint=endpoint)
        assert not surface.freeform_patch
        assert "apply_patch is a JSON function: freeform needs a responses endpoint" in (
            surface.notes
        )


# --- the five permission examples, and the surface each yields ---------------------------

PERMISSION_EXAMPLES = [
    # rules, patch-native surface, non-patch-native surface
    ('edit = "allow"', PATCH_SURFACE, EDIT_SURFACE),
    ('edit = "allow"\napply_patch = "deny"', EDIT_SURFACE, EDIT_SURFACE),
    (
        'apply_patch = "allow"\nedit = "deny"',
        PATCH_SURFACE,
        ("apply_patch", "write", "delete", "read"),
    ),
    ('"*" = "deny"\napply_patch = "allow"', PATCH_SURFACE, ("edit", "read")),
    (
        '"*" = "allow"\napply_patch = "deny"',
        ("write", "delete", "read"),
        ("write", "delete", "read"),
    ),
]


@pytest.mark.parametrize(
    ("rules", "native", "other"), PERMISSION_EXAMPLES, ids=[r for r, _, _ in PERMISSION_EXAMPLES]
)
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_the_permission_examples_and_their_surfaces(
    rules: str, native: tuple[str, ...], other: tuple[str, ...], endpoint: str
) -> None:
    config = parse_config(f"[permission]\n{rules}\n", ".redline.toml")
    assert select("gpt-5", endpoint=endpoint, config=config).tools == native
    assert select("claude-sonnet-4-5", endpoint=endpoint, config=config).tools == other
    shown = [
        _name(tool) for tool in render(select("gpt-5", endpoint=endpoint, config=config), endpoint)
    ]
    assert tuple(shown) == native


def test_a_patch_native_model_with_apply_patch_disabled_falls_back_to_edit() -> None:
    config = parse_config("[compat.apply_patch]\nenabled = false\n", "x")
    assert select("gpt-5-codex", config=config).tools == EDIT_SURFACE


def test_disabled_apply_patch_is_no_fallback_for_a_denied_edit() -> None:
    text = '[compat.apply_patch]\nenabled = false\n[permission]\nedit = "deny"\napply_patch = "allow"\n'
    surface = select("claude-sonnet-4-5", config=parse_config(text, "x"))
    assert surface.tools == ("write", "delete", "read")
    assert "edit is denied for every path and apply_patch disabled" in surface.notes


def test_a_tool_denied_only_on_some_paths_is_still_shown() -> None:
    text = '[permission.edit]\n"migrations/**" = "deny"\n[permission.write]\n"**" = "ask"\n'
    assert select("claude-sonnet-4-5", config=parse_config(text, "x")).tools == EDIT_SURFACE


def test_apply_patch_enabled_for_a_model_trained_on_edit() -> None:
    config = parse_config('[compat.models."qwen3-coder".apply_patch]\nenabled = true\n', "x")
    surface = select("qwen3-coder", endpoint="responses", config=config)
    assert surface.tools == PATCH_SURFACE
    assert not surface.freeform_patch  # freeform stays inferred: not patch-native


# --- renderings -----------------------------------------------------------------------------


def _name(tool: dict[str, Any]) -> str:
    return str(tool["function"]["name"] if "function" in tool else tool["name"])


def _parameters(tool: dict[str, Any]) -> dict[str, Any] | None:
    if tool.get("type") == "custom":
        return None
    if "function" in tool:
        return dict(tool["function"]["parameters"])
    return dict(tool["parameters"] if "parameters" in tool else tool["input_schema"])


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize(
    "surface", [EDIT_SURFACE, PATCH_SURFACE, ("apply_patch", "write", "delete", "read")]
)
def test_each_endpoint_gets_its_shape(endpoint: str, surface: tuple[str, ...]) -> None:
    shown = render(Surface(surface, False, ()), endpoint)
    assert [_name(tool) for tool in shown] == list(surface)
    for tool in shown:
        definition = DEFINITIONS[_name(tool)]
        if endpoint == "responses":
            assert tool == {
                "type": "function",
                "name": definition.name,
                "description": definition.description,
                "parameters": definition.parameters,
            }
        elif endpoint == "chat":
            assert tool == {
                "type": "function",
                "function": {
                    "name": definition.name,
                    "description": definition.description,
                    "parameters": definition.parameters,
                },
            }
        else:
            assert tool == {
                "name": definition.name,
                "description": definition.description,
                "input_schema": definition.parameters,
            }
        parameters = _parameters(tool)
        assert parameters is not None
        Draft202012Validator.check_schema(parameters)


def test_the_freeform_patch_tool_on_a_responses_endpoint() -> None:
    [patch, read] = render(select("gpt-5", endpoint="responses"), "responses")
    assert patch == {
        "type": "custom",
        "name": "apply_patch",
        "description": FREEFORM_PATCH_DESCRIPTION,
        "format": {"type": "grammar", "syntax": "lark", "definition": grammar_text()},
    }
    assert read["type"] == "function" and read["name"] == "read"


def test_a_freeform_surface_renders_as_json_elsewhere() -> None:
    surface = select("gpt-5", endpoint="responses")
    assert surface.freeform_patch
    [chat_patch, _] = render(surface, "chat")
    assert chat_patch["function"]["parameters"] == DEFINITIONS["apply_patch"].parameters


def test_an_unknown_endpoint_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown endpoint 'completions'; use one of responses"):
        select("gpt-5", endpoint="completions")
    with pytest.raises(ValueError, match="unknown endpoint"):
        render(Surface(EDIT_SURFACE, False, ()), "completions")


# --- the grammar the custom tool carries -----------------------------------------------------


def _custom_grammar() -> Any:
    [patch, _] = render(select("gpt-5", endpoint="responses"), "responses")
    return lark.Lark(patch["format"]["definition"], parser="lalr")


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, id=n)
        for n in scenario_names()
        if n not in MALFORMED_SCENARIOS and n not in LENIENT_SCENARIOS
    ]
    or [pytest.param(None, marks=pytest.mark.skip(reason=NO_SCENARIOS))],
)
def test_the_custom_tools_grammar_accepts_every_codex_conformance_patch(name: str) -> None:
    text = (SCENARIOS / name / "patch.txt").read_text(encoding="utf-8")
    assert _custom_grammar().parse(text)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, id=n) for n in sorted(MALFORMED_SCENARIOS | set(LENIENT_SCENARIOS))],
)
def test_the_grammar_refuses_the_malformed_and_padded_ones(name: str) -> None:
    path = SCENARIOS / name / "patch.txt"
    if not path.is_file():
        pytest.skip(NO_SCENARIOS)
    with pytest.raises(lark.exceptions.LarkError):
        _custom_grammar().parse(path.read_text(encoding="utf-8"))


# --- a gateway that downgraded the custom tool ---------------------------------------------


def test_input_instead_of_patch_is_explained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    error = downgraded_patch_call({"input": "*** Begin Patch\n*** End Patch"}, model="gpt-5")
    assert error is not None
    assert error.startswith(
        'apply_patch arguments arrived as {"input": "..."} instead of {"patch": "..."}'
    )
    assert "compat.apply_patch.freeform: false" in error
    assert '[compat.models."gpt-5".apply_patch] freeform = false' in error
    assert str(tmp_path / "xdg" / "redline" / "config.toml") in error
    assert ".redline.toml" in error
    by_provider = downgraded_patch_call({"input": "x"}, provider="openrouter")
    assert by_provider is not None and "[compat.providers.openrouter.apply_patch]" in by_provider
    anywhere = downgraded_patch_call({"input": "x"})
    assert anywhere is not None and "[compat.apply_patch] freeform = false" in anywhere


@pytest.mark.parametrize(
    "arguments", [{"patch": "x"}, {"patch": "x", "input": "y"}, {}, {"input": 3}]
)
def test_other_arguments_are_not_a_downgrade(arguments: dict[str, Any]) -> None:
    assert downgraded_patch_call(arguments) is None


def test_a_default_config_is_no_settings() -> None:
    assert select("gpt-5", config=Config()) == select("gpt-5")
