"""The options that describe a job, shared by `job register` and `submit`."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, TypeVar

import click

from registry.errors import InvalidJobInput
from registry.records import DEFAULT_IDLE_TIMEOUT_SEC, DEFAULT_TIMEOUT_SEC

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option("--prompt", metavar="TEXT", help="What the agent should do."),
    click.option(
        "--prompt-file",
        type=click.File("r", encoding="utf-8"),
        help="Read the prompt from a file ('-' for stdin) instead of --prompt.",
    ),
    click.option(
        "--agent", required=True, metavar="NAME", help="Agent kind: demo, claude-code, ..."
    ),
    click.option(
        "--agent-session", required=True, metavar="LABEL", help="Session label, e.g. tmux:claude."
    ),
    click.option("--timeout", default=DEFAULT_TIMEOUT_SEC, show_default=True, type=int),
    click.option("--idle-timeout", default=DEFAULT_IDLE_TIMEOUT_SEC, show_default=True, type=int),
    click.option("--artifact", "artifacts", multiple=True, metavar="FILE", help="Expected output."),
    click.option("--no-sign", is_flag=True, help="No auth_token: accept unsigned events (PoC)."),
)


def job_spec_options(command: F) -> F:
    """Add --prompt/--prompt-file, --agent, --agent-session, the timeouts, --artifact
    and --no-sign, in that order of --help."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def read_prompt(prompt: str | None, prompt_file: IO[str] | None) -> str:
    """The prompt from exactly one of --prompt and --prompt-file."""
    if prompt_file is not None:
        if prompt is not None:
            raise InvalidJobInput("give --prompt or --prompt-file, not both")
        return prompt_file.read()
    if prompt is None:
        raise InvalidJobInput("--prompt or --prompt-file is required")
    return prompt
