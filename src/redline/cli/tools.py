"""``redline tools``: the tool definitions a model is shown, for its endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command("tools")
@click.option("--model", required=True, help="The model's name, e.g. gpt-5 or claude-sonnet-4-5.")
@click.option(
    "--provider",
    default=None,
    help="The provider serving it (for [compat.providers.<name>] overrides); a prefix of "
    "the model's name (openai/gpt-5) is used when not given.",
)
@click.option(
    "--endpoint",
    type=click.Choice(["responses", "chat", "anthropic"]),
    default=None,
    help="The API shape: OpenAI Responses, Chat Completions, or Anthropic Messages "
    "[default: from the provider — anthropic for Anthropic's models, responses for "
    "OpenAI's, chat for any other].",
)
@click.option("--json", "as_json", is_flag=True, help="Print the exact tool list, as JSON.")
@click.option(
    "--repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    show_default="the current directory",
    help="The repository (or folder) whose .redline.toml applies.",
)
def tools_command(
    model: str, provider: str | None, endpoint: str | None, as_json: bool, repo: Path
) -> None:
    """Print the tools MODEL should be shown, with the settings of the repository.

    \b
    redline tools --model gpt-5 --json            (OpenAI's: the responses endpoint)
    redline tools --model claude-sonnet-4-5      (Anthropic's: the anthropic endpoint)
    redline tools --model qwen3-coder --endpoint responses

    Settings: [compat] and [permission] in .redline.toml (or pyproject's
    [tool.redline]) over the user's config.toml; see the README.
    """
    from redline.settings.tools import load_config, repository_root
    from redline.tools.surface import endpoint_for, render, select

    picked = ""
    if endpoint is None:
        endpoint, why = endpoint_for(model, provider)
        picked = f" (picked for {why}; --endpoint chooses another)"
    config = load_config(repository_root(repo))
    surface = select(model, provider=provider, endpoint=endpoint, config=config)
    shown = render(surface, endpoint)
    if as_json:
        click.echo(json.dumps(shown, indent=2, ensure_ascii=False))
        return
    click.echo(f"Tools for {model} on the {endpoint} endpoint{picked}:")
    for tool in shown:
        name = tool.get("name") or tool["function"]["name"]
        kind = "freeform custom tool (Lark grammar)" if tool.get("type") == "custom" else "JSON"
        click.echo(f"  {name:<12} {kind}")
    click.echo("Why:")
    for note in surface.notes:
        click.echo(f"  - {note}")
    rules = config.permissions.every_rule
    if rules:
        click.echo(
            "Permission rules (in each file the last match wins; the stricter file's "
            "decision stands):"
        )
        for rule in rules:
            click.echo(f"  {rule.rule}  ({rule.source})")
    read = ", ".join(config.sources) if config.sources else "none (defaults)"
    click.echo(f"Settings read: {read}")
    click.echo("The exact definitions: add --json.")
