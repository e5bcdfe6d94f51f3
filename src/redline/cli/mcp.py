"""``redline mcp``: serve the model's tool surface over stdio (Model Context Protocol).

This command reads the options, the environment and the configuration, picks
the mode (git mode through a daemon session when ``--repo`` is in a git
repository, else embedded) and hands ``redline.mcp.server`` what to serve.
stdout belongs to the protocol: everything else goes to stderr.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from redline.cli._connect import mainline_settings
from redline.cli.options import repo_option

if TYPE_CHECKING:
    from redline.mcp.backend import Backend
    from redline.mcp.server import Served
    from redline.settings.folder import FolderSettings


@click.command("mcp")
@repo_option
@click.option(
    "--session",
    default=None,
    help="Git mode: the session to apply in (opened, or resumed, on the first call). "
    "Default: a session named for the MCP client (its clientInfo.name).",
)
@click.option(
    "--embedded",
    is_flag=True,
    help="Apply to the files under --repo in this process: no daemon, no commits "
    "(the default when --repo is not in a git repository).",
)
@click.option(
    "--model",
    default=None,
    help="The model the agent runs: picks its tools (patch-native models get apply_patch) "
    "and is recorded in each edit's note. Default: [agent] model in the config files, "
    "else the edit tools.",
)
@click.option("--provider", default=None, help="The model's provider, for compat overrides.")
@click.option(
    "--full",
    is_flag=True,
    help="Each answer's structured content carries every field of the result, null and "
    "empty ones included (by default: the result contract and the fields that say something).",
)
def mcp_command(
    repo: Path,
    session: str | None,
    embedded: bool,
    model: str | None,
    provider: str | None,
    full: bool,
) -> None:
    """Serve redline's tools to an MCP client over stdio.

    \b
    Git mode: each call goes through a daemon session (one commit per change,
    evidence in git notes). Embedded: applies under the folder, in this process.
    The tools are the surface for --model: edit, write, delete, read; or
    apply_patch and read for a patch-native model.
    """
    from redline.daemon.paths import NoRepository, common_dir
    from redline.settings.tools import repository_root

    if session is not None and embedded:
        raise click.UsageError("--session and --embedded exclude each other: choose one mode")
    try:
        common_dir(repo)
        in_git = True
    except NoRepository:
        in_git = False
    if session is not None:
        if not in_git:
            raise click.UsageError(
                f"--session needs a git repository, and {repo} is not in one: give --repo a "
                "path inside a repository, or drop --session to apply under the folder"
            )
        from redline.gitops.names import check_name

        check_name(session)  # refused now rather than on every call
    git_mode = in_git and not embedded
    root = repository_root(repo) if git_mode else repo.resolve()

    from redline.mcp.backend import Daemon, Embedded

    backend: Backend
    folder = None
    if git_mode:
        from redline.cli._connect import daemon_client_started

        backend = Daemon(lambda: daemon_client_started(repo), session)
    else:
        from redline.settings.folder import read_folder

        folder = read_folder(root)  # once, as `redline apply` reads it, for every step
        backend = Embedded(root, folder)
    _serve(root, backend, model, provider, folder, session, repo, full)


def _serve(
    root: Path,
    backend: Backend,
    model: str | None,
    provider: str | None,
    folder: FolderSettings | None,
    session: str | None,
    repo: Path,
    full: bool = False,
) -> None:
    """Serve ``backend``: embedded under the settings ``folder`` holds, or (None) in git
    mode, under the repository's settings as the main line has them committed."""
    from redline.mcp.allowances import Allowances
    from redline.mcp.server import Served
    from redline.settings.tools import load_config
    from redline.tools.definitions import DEFINITIONS
    from redline.tools.surface import select

    git_mode = folder is None
    if folder is not None:
        config = folder.usable_config()
    else:
        # The repository's settings as the main line has them committed, never the
        # session's worktree, where the agent could change them.
        config = load_config(root, mainline_settings(repo, session))
    if model is None:  # the flag wins over [agent] in the config files
        model, provider = config.model, provider or config.provider
    surface = select(model, provider=provider, endpoint="chat", config=config)
    tools = [DEFINITIONS[name] for name in surface.tools]
    where = (
        f"git mode in {root}, session {session or '(named for the client)'}"
        if git_mode
        else f"embedded under {root}"
    )
    click.echo(f"redline mcp: {where}; tools: {', '.join(surface.tools)}", err=True)
    served = Served(tools, backend, Allowances(config.permissions), model, provider, full=full)
    signum = run_stdio(served)
    if signum is not None:  # stopped as asked: quietly, with the signal's exit status
        from redline.fsops.interrupts import Interrupted

        stopped = Interrupted(signum)
        stopped.quiet = True
        raise stopped


def _on_stdio(served: Served) -> int | None:
    """Serve on this process's stdin and stdout; the signal that stopped the server, if any."""
    import anyio

    from redline.mcp.server import serve

    return anyio.run(serve, served)


# Serving on this process's stdin and stdout: the process edge, which the tests replace
# to serve the same ``Served`` over the MCP SDK's in-memory streams.
run_stdio: Callable[[Served], int | None] = _on_stdio
