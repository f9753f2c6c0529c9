"""The `orchestrate` command line.

Subcommands are imported lazily so that a one-shot `orchestrate publish` run by
an agent never pays for Textual, libtmux or Spark imports.
"""

from __future__ import annotations

import gc
import importlib
import logging
import os
import sys
from pathlib import Path
from typing import Any

import click

from app.settings import (
    POLICY_ENV,
    Settings,
    SettingsError,
    busy_timeout_from_env,
    find_state_dir,
    worktree_mode_from_env,
)

# command name -> "module:attribute"; each module is imported only when used.
LAZY_COMMANDS: dict[str, str] = {
    "job": "app.commands.job:job",
    "publish": "app.commands.publish:publish",
    "subscribe": "app.commands.subscribe:subscribe",
    "ingest": "app.commands.ingest:ingest",
    "msg": "app.commands.msg:msg",
    "export": "app.commands.msg:export",
    "watch": "app.commands.watch:watch",
    "broker": "app.commands.broker:broker",
    "history": "app.commands.history:history",
    "submit": "app.commands.submit:submit",
    "session": "app.commands.session:session",
    "answer": "app.commands.answer:answer",
    "demo": "app.commands.demo:demo",
    "reconcile": "app.commands.reconcile:reconcile",
    "hook": "app.commands.hook:hook",
    "supervise": "app.commands.supervise:supervise",
    "doctor": "app.commands.doctor:doctor",
    "send": "app.commands.send:send",
    "attach": "app.commands.send:attach",
    "review": "app.commands.review:review",
    "gc": "app.commands.gc:gc",
    "status": "app.commands.status:status",
    "metrics": "app.commands.metrics:metrics",
    "policy": "app.commands.policy:policy",
    "node": "app.commands.node:node",
    "nodes": "app.commands.nodes:nodes",
    "acp-run": "app.commands.acp_run:acp_run",
}

# Commands that run for a moment and exit: they keep the garbage collector off
# as `app.entry` started them (short-lived, nothing cyclic worth collecting).
ONE_SHOT_COMMANDS = frozenset({"publish"})


class LazyGroup(click.Group):
    """A click group that imports a subcommand's module only when it is invoked."""

    def __init__(self, *args: Any, lazy_commands: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy_commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, attribute = self.lazy_commands[cmd_name].split(":")
            command: click.Command = getattr(importlib.import_module(module_name), attribute)
            return command
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, lazy_commands=LAZY_COMMANDS)
@click.option(
    "--state-dir",
    "--registry-dir",
    "state_dir",
    metavar="DIR",
    help="State directory (default: $ORCHESTRATE_HOME, else the nearest .orchestrate/).",
)
@click.option(
    "--policy",
    "policy_file",
    metavar="FILE",
    help="Approval policy file (default: $ORCHESTRATE_POLICY, else <state dir>/policy.toml).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log debug detail on stderr.")
@click.version_option(package_name="orchestrate")
@click.pass_context
def cli(ctx: click.Context, state_dir: str | None, policy_file: str | None, verbose: bool) -> None:
    """orchestrate: a control room for coding agents running in tmux."""
    if ctx.invoked_subcommand not in ONE_SHOT_COMMANDS:
        gc.enable()
    if policy_file:
        # Through the environment, as ORCHESTRATE_HOME: the panes, hooks and
        # supervisors this command starts read the same policy (app/policy/rules.py).
        os.environ[POLICY_ENV] = str(Path(policy_file).expanduser().resolve())
    from app.terminal.output import ShownFormatter

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(ShownFormatter("orchestrate: %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING, handlers=[handler])
    ctx.obj = Settings(
        state_dir=find_state_dir(state_dir),
        busy_timeout_ms=busy_timeout_from_env(),
        worktree=worktree_mode_from_env(),
    )


def domain_errors() -> tuple[type[Exception], ...]:
    """The error types a command turns into one line on stderr and an exit code."""
    from app.agents.config import AgentConfigError
    from app.git.errors import GitError
    from app.policy.rules import PolicyError
    from app.tmux.errors import TmuxError
    from bus.errors import BusError
    from registry.errors import RegistryError

    return (
        BusError,
        RegistryError,
        TmuxError,
        GitError,
        SettingsError,
        AgentConfigError,
        PolicyError,
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI, turning domain errors into `orchestrate: <reason>`."""
    from app.command_line import check_command_line, check_environment
    from app.terminal.output import shown

    args = sys.argv[1:] if argv is None else list(argv)
    try:
        check_environment(os.environ)
        check_command_line(cli, args, "orchestrate")
        # standalone_mode=False turns ctx.exit(n) into a return value: pass it on.
        code = cli.main(args=args, prog_name="orchestrate", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("orchestrate: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # One line, like every other error; click's default adds the usage block, and
        # some of its messages span lines (a missing Choice lists one choice a line).
        where = exc.ctx.command_path if exc.ctx is not None else "orchestrate"
        reason = " ".join(exc.format_message().split()).rstrip(".")
        click.echo(shown(f"{where}: {reason} (see '{where} --help')"), err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        click.echo(shown(f"Error: {exc.format_message()}"), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except domain_errors() as exc:
        click.echo(shown(f"orchestrate: {exc}"), err=True)
        sys.exit(getattr(exc, "exit_code", 1))
    except KeyboardInterrupt:
        sys.exit(130)
    sys.exit(code if type(code) is int else 0)
