"""``redline tools``: the tool list a model is shown, printed by the real command.

Run in this process as a subprocess would run it (``support.cli``), with an
empty HOME and the user's config folder under ``tmp_path``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import lark
import pytest
from jsonschema import Draft202012Validator

from conformance_paths import LENIENT_SCENARIOS, MALFORMED_SCENARIOS, SCENARIOS, scenario_names
from conformance_paths import MISSING as NO_SCENARIOS
from redline.tools.grammar import grammar_text
from support import cli as inproc
from support.env import without_caller_variables

ENDPOINTS = ("responses", "chat", "anthropic")
MODELS = ("gpt-5", "gpt-5-codex", "codex-auto-review", "claude-sonnet-4-5", "qwen3-coder", "o3")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    clean = without_caller_variables(os.environ)
    clean.update(HOME=str(home), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    return clean


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    (folder / ".git").mkdir(parents=True)  # a working directory, as the command finds it
    (folder / "src").mkdir()
    return folder


def tools(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return inproc.run(["tools", *args], env=env, cwd=cwd)


def tool_list(env: dict[str, str], cwd: Path, *args: str) -> list[dict[str, Any]]:
    proc = tools(env, cwd, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    shown = json.loads(proc.stdout)
    assert isinstance(shown, list)
    return shown


def name(tool: dict[str, Any]) -> str:
    return str(tool["function"]["name"] if "function" in tool else tool["name"])


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_every_json_function_has_a_valid_schema(
    env: dict[str, str], repo: Path, endpoint: str
) -> None:
    for model in MODELS:
        for tool in tool_list(env, repo, "--model", model, "--endpoint", endpoint):
            if tool.get("type") == "custom":
                continue
            parameters = (
                tool["function"]["parameters"]
                if endpoint == "chat"
                else tool["parameters" if endpoint == "responses" else "input_schema"]
            )
            Draft202012Validator.check_schema(parameters)
            assert parameters["type"] == "object"
            assert isinstance(tool.get("description") or tool["function"]["description"], str)


def test_surfaces_per_model_and_endpoint(env: dict[str, str], repo: Path) -> None:
    shown = tool_list(env, repo, "--model", "gpt-5", "--endpoint", "responses")
    assert [(t["type"], t["name"]) for t in shown] == [
        ("custom", "apply_patch"),
        ("function", "read"),
    ]
    shown = tool_list(env, repo, "--model", "gpt-5", "--endpoint", "chat")
    assert [name(t) for t in shown] == ["apply_patch", "read"]
    assert shown[0]["function"]["parameters"]["required"] == ["patch"]
    shown = tool_list(env, repo, "--model", "claude-sonnet-4-5", "--endpoint", "anthropic")
    assert [name(t) for t in shown] == ["edit", "write", "delete", "read"]
    assert all(set(t) == {"name", "description", "input_schema"} for t in shown)


def _custom_grammar(env: dict[str, str], repo: Path) -> Any:
    [patch, _] = tool_list(env, repo, "--model", "gpt-5", "--endpoint", "responses")
    assert patch["format"]["type"] == "grammar"
    assert patch["format"]["syntax"] == "lark"
    assert patch["format"]["definition"] == grammar_text()
    return lark.Lark(patch["format"]["definition"], parser="lalr")


def test_the_printed_grammar_accepts_every_codex_conformance_patch(
    env: dict[str, str], repo: Path
) -> None:
    names = scenario_names()
    if not names:
        pytest.skip(NO_SCENARIOS)
    grammar = _custom_grammar(env, repo)
    accepted = []
    for scenario in names:
        text = (SCENARIOS / scenario / "patch.txt").read_text(encoding="utf-8")
        try:
            grammar.parse(text)
        except lark.exceptions.LarkError:
            continue
        accepted.append(scenario)
    # Every well-formed strict patch; the malformed ones and those only the lenient
    # parser reads (padded markers) are refused.
    assert accepted == [n for n in names if n not in MALFORMED_SCENARIOS | set(LENIENT_SCENARIOS)]


def test_the_repository_settings_change_the_list(
    env: dict[str, str], repo: Path, tmp_path: Path
) -> None:
    user = tmp_path / "xdg" / "redline" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("[compat.providers.openrouter.apply_patch]\nfreeform = false\n")
    args = ("--model", "openrouter/gpt-5", "--endpoint", "responses")
    assert tool_list(env, repo, *args)[0]["type"] == "function"
    (repo / ".redline.toml").write_text(
        '[compat.models."openrouter/gpt-5".apply_patch]\nfreeform = true\n'
        '[permission]\n"*" = "allow"\napply_patch = "deny"\n'
    )
    assert [name(t) for t in tool_list(env, repo, *args)] == ["write", "delete", "read"]
    # --repo names the repository from elsewhere; a folder inside it finds it too
    elsewhere = tmp_path
    assert [name(t) for t in tool_list(env, elsewhere, *args, "--repo", str(repo / "src"))] == [
        "write",
        "delete",
        "read",
    ]


def test_the_summary_says_what_is_shown_and_why(env: dict[str, str], repo: Path) -> None:
    (repo / ".redline.toml").write_text('[permission]\nedit = "deny"\napply_patch = "allow"\n')
    proc = tools(env, repo, "--model", "claude-sonnet-4-5")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.startswith(
        "Tools for claude-sonnet-4-5 on the anthropic endpoint (picked for an Anthropic "
        "model; --endpoint chooses another):\n"
    )
    assert (
        "  apply_patch  JSON\n  write        JSON\n  delete       JSON\n  read         JSON\n"
        in out
    )
    assert "claude-sonnet-4-5: not patch-native (inferred: edit, write, delete)" in out
    assert "edit is denied for every path: apply_patch, write and delete instead" in out
    assert f'permission.edit = "deny"  ({repo / ".redline.toml"})' in out
    assert f"Settings read: {repo / '.redline.toml'}" in out


def test_a_bad_setting_is_reported_without_a_traceback(env: dict[str, str], repo: Path) -> None:
    (repo / ".redline.toml").write_text('[permission]\nedit = "sometimes"\n')
    proc = tools(env, repo, "--model", "gpt-5", "--json")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert f"invalid redline configuration in {repo / '.redline.toml'}: permission.edit: " in (
        proc.stderr
    )


def test_an_unknown_endpoint_is_a_usage_error(env: dict[str, str], repo: Path) -> None:
    proc = tools(env, repo, "--model", "gpt-5", "--endpoint", "completions")
    assert proc.returncode == 2
    assert "'completions' is not one of 'responses', 'chat', 'anthropic'" in proc.stderr


@pytest.mark.parametrize(
    ("args", "endpoint", "why"),
    [
        (("--model", "claude-sonnet-4-5"), "anthropic", "an Anthropic model"),
        (("--model", "anthropic/claude-opus-4"), "anthropic", "provider anthropic"),
        (("--model", "gpt-5"), "responses", "an OpenAI model"),
        (("--model", "gpt-4o"), "responses", "an OpenAI model"),
        (("--model", "o3-mini"), "responses", "an OpenAI model"),
        (("--model", "gpt-5", "--provider", "openrouter"), "chat",
         "provider openrouter, not OpenAI's or Anthropic's"),
        (("--model", "qwen3-coder"), "chat", "a model of neither OpenAI nor Anthropic"),
    ],
)  # fmt: skip
def test_the_endpoint_follows_the_provider_unless_named(
    env: dict[str, str], repo: Path, args: tuple[str, ...], endpoint: str, why: str
) -> None:
    out = tools(env, repo, *args).stdout
    assert out.splitlines()[0] == (
        f"Tools for {args[1]} on the {endpoint} endpoint (picked for {why}; --endpoint "
        "chooses another):"
    )
    shown = tool_list(env, repo, *args)
    assert shown == tool_list(env, repo, *args, "--endpoint", endpoint)
    named = tools(env, repo, *args, "--endpoint", "chat").stdout
    assert named.splitlines()[0] == f"Tools for {args[1]} on the chat endpoint:"
