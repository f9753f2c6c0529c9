"""`orchestrate node run/start/stop/status`: this host's node in the fleet (app/fleet/node.py).

The broker is the one MQTT_* names (bus/mqtt_config.py), logged into as the node's
own broker user (MQTT_USERNAME = the node's name, MQTT_PASSWORD): the password stays
in the environment, never on a command line.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import click

from app.fleet import daemon
from app.fleet.options import DEFAULT_PERIOD_S, NodeOptions, check_identity
from app.settings import Settings
from app.terminal.output import shown
from app.tmux.names import default_socket_name
from bus.broker_checks import check_topic_prefix
from bus.errors import BrokerSetupError, InvalidTopic
from bus.fleet_topics import check_node_name
from bus.mqtt_config import BrokerConfig
from registry.fleet_commands import InvalidCommand, control_key, node_key, read_trust
from registry.placement import ANY_NODE
from registry.records import DEFAULT_PREFIX

START_TIMEOUT_S = 20.0


def _name(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    if value == ANY_NODE:
        raise click.BadParameter(f"a node name cannot be {ANY_NODE!r} (submit --node any)")
    try:
        return check_node_name(value)
    except InvalidTopic as exc:
        raise click.BadParameter(str(exc)) from None


def _prefix(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    try:
        return check_topic_prefix(value)
    except BrokerSetupError as exc:
        raise click.BadParameter(str(exc)) from None


Command = TypeVar("Command", bound=Callable[..., Any])


def run_options(command: Command) -> Command:
    """The options `node run` and `node start` share (start passes them on)."""
    for option in reversed(
        [
            click.option(
                "--name", required=True, callback=_name, help="The node's name (its broker user)."
            ),
            click.option(
                "--slots",
                type=click.IntRange(1, 1024),
                default=4,
                show_default=True,
                help="How many jobs this host runs at once.",
            ),
            click.option(
                "--period",
                type=click.FloatRange(1, 3600),
                default=DEFAULT_PERIOD_S,
                show_default=True,
                metavar="SECONDS",
                help="Announce the load this often (changes go out at once).",
            ),
            click.option(
                "--trust",
                type=click.Path(exists=True, dir_okay=False, path_type=Path),
                metavar="KEYFILE",
                help="Execute the commands (take, answer, send, cancel) signed with this key: "
                "the file `orchestrate node key NAME` wrote on the control room. Without it "
                "the node refuses every command.",
            ),
            click.option(
                "--prefix",
                default=DEFAULT_PREFIX,
                show_default=True,
                callback=_prefix,
                metavar="TOPIC",
                help="The fleet's topic prefix.",
            ),
        ]
    ):
        command = option(command)
    return command


def _broker(name: str) -> BrokerConfig:
    config = BrokerConfig.from_env()
    if config is None:
        raise click.UsageError(
            "a node needs the shared broker: set MQTT_BROKER (and MQTT_USERNAME/"
            "MQTT_PASSWORD of the node's broker user)"
        )
    check_identity(config, name)
    return config


def _trusted(path: Path | None) -> bytes | None:
    if path is None:
        return None
    try:
        return read_trust(path)
    except InvalidCommand as exc:
        raise click.BadParameter(str(exc), param_hint="--trust") from None


@click.group()
def node() -> None:
    """Run this host's node: its supervisor, announced to the fleet over MQTT."""


@node.command("run")
@run_options
@click.pass_obj
def run_command(
    settings: Settings, name: str, slots: int, period: float, trust: Path | None, prefix: str
) -> None:
    """Run the node in the foreground (for systemd or a tmux window) until SIGTERM."""
    config = _broker(name)
    key = _trusted(trust)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    options = NodeOptions(name, slots, prefix, period, default_socket_name(), trust)

    def report(line: str) -> None:
        click.echo(shown(line), err=True)

    from app.fleet.node import Node  # the supervisor and tmux: only for a running node

    try:
        code = Node(settings, config, options, report, key).run(stop)
    except daemon.NodeBusy as exc:
        raise click.ClickException(str(exc)) from None
    raise click.exceptions.Exit(code)


@node.command("start")
@run_options
@click.pass_obj
def start_command(
    settings: Settings, name: str, slots: int, period: float, trust: Path | None, prefix: str
) -> None:
    """Run the node in the background; returns once it is announced on the broker."""
    _broker(name)
    _trusted(trust)
    state_dir = settings.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    status = daemon.read_status(state_dir)
    if status.running:
        raise click.ClickException(f"a node already runs here (pid {status.pid}, {status.name})")
    args = ["--name", name, "--slots", str(slots), "--period", f"{period:g}", "--prefix", prefix]
    if trust is not None:
        args += ["--trust", str(trust.resolve())]
    process = daemon.spawn(state_dir, args)
    started = daemon.wait_started(state_dir, process, START_TIMEOUT_S)
    if started is None:
        tail = " / ".join(daemon.log_tail(state_dir, 3)) or "no output"
        raise click.ClickException(f"the node exited at once: {tail}")
    if not started.connected:
        click.echo(
            f"node {name} started (pid {process.pid}) but not yet connected to the broker; "
            f"see {state_dir / 'logs' / daemon.LOG_NAME}"
        )
        return
    click.echo(f"node {name} running (pid {process.pid}), announced on {started.broker}")


@node.command("stop")
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 600),
    default=15.0,
    show_default=True,
    metavar="SECONDS",
    help="How long to wait for it to exit.",
)
@click.pass_obj
def stop_command(settings: Settings, timeout: float) -> None:
    """Stop the background node (it says goodbye on the broker) and wait for it to exit."""
    try:
        status = daemon.stop(settings.state_dir, timeout)
    except TimeoutError as exc:
        raise click.ClickException(str(exc)) from None
    if not status.running:
        click.echo("node not running")
        return
    click.echo(f"node {status.name or '?'} stopped (pid {status.pid})")


@node.command("key")
@click.argument("name", callback=_name)
@click.pass_obj
def key_command(settings: Settings, name: str) -> None:
    """Print node NAME's key (on the control room): save it on NAME's host, mode 0600,
    and run the node with --trust FILE. It signs commands for NAME alone."""
    key = node_key(control_key(settings.state_dir), name)
    click.echo(key.hex())


@node.command("status")
@click.pass_obj
def status_command(settings: Settings) -> None:
    """Say whether this state dir's node runs (exit 0) or not (exit 3)."""
    status = daemon.read_status(settings.state_dir)
    if not status.running:
        click.echo("node not running")
        raise click.exceptions.Exit(3)
    link = "connected to" if status.connected else "not connected to"
    click.echo(f"node {status.name or '?'} running (pid {status.pid}), {link} {status.broker}")
