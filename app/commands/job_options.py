"""The options that describe a job, shared by `job register` and `submit`."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO, Any, TypeVar

import click

from registry.errors import InvalidJobInput
from registry.records import (
    DEFAULT_IDLE_TIMEOUT_SEC,
    DEFAULT_TIMEOUT_SEC,
    MAX_TIMEOUT_SEC,
    check_seconds,
)

F = TypeVar("F", bound=Callable[..., Any])


def _checked_seconds(ctx: click.Context, param: click.Parameter, value: int) -> int:
    """The registry's own timeout check, run while the command line is parsed, so
    `submit` refuses a bad timeout before it looks for tmux; its InvalidJobInput
    is exit 1, as the same refusal from `job register` always was."""
    return check_seconds(param.opts[0], value)


def _seconds_option(name: str, default: int, what: str) -> Callable[[F], F]:
    return click.option(
        name,
        default=default,
        show_default=True,
        type=int,
        callback=_checked_seconds,
        metavar="SECONDS",
        help=f"{what} (1-{MAX_TIMEOUT_SEC}, i.e. up to 30 days).",
    )


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
    _seconds_option("--timeout", DEFAULT_TIMEOUT_SEC, "Seconds the job may run"),
    _seconds_option("--idle-timeout", DEFAULT_IDLE_TIMEOUT_SEC, "Seconds without an event"),
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
        try:
            return prompt_file.read()
        except UnicodeDecodeError as exc:  # a prompt is typed into a pane: text only
            raise InvalidJobInput(
                f"--prompt-file {prompt_file.name} is not UTF-8 text "
                f"(bad byte at offset {exc.start})"
            ) from None
    if prompt is None:
        raise InvalidJobInput("--prompt or --prompt-file is required")
    return prompt


def broker_block(host: str | None, port: int | None) -> dict[str, Any] | None:
    """The broker in effect: --broker/--port laid over the MQTT_* env; None for neither.
    `job register` and `submit` read it the same way."""
    if host is None and port is None and not os.environ.get("MQTT_BROKER"):
        return None  # the common case: no paho import at all
    from bus.mqtt_config import resolve_broker

    flags: dict[str, Any] = {}
    if host is not None:
        flags["host"] = host
    if port is not None:
        flags["port"] = port
    config = resolve_broker(os.environ, flags or None)
    if config is None:
        raise InvalidJobInput("--port needs --broker HOST (or MQTT_BROKER in the environment)")
    return config.to_block()
