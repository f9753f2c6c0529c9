"""What `node run` is asked for, checked before anything heavy is imported or started."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

import click

from bus.errors import MqttConfigError
from bus.mqtt_config import BrokerConfig

DEFAULT_PERIOD_S = 30.0
DEFAULT_WAIT_S: Final = 30.0
"""How long a command on a remote job waits for its node's confirmation."""

WAIT_OPTION: Final = click.option(
    "--wait",
    "wait_s",
    type=click.FloatRange(0, 3600),
    default=None,
    metavar="SECONDS",
    help="For a job on a fleet node: how long to wait for the node's confirmation "
    f"(default {DEFAULT_WAIT_S:g} s when it is online; 0 when offline: the command waits "
    "at the broker and runs when the node returns, exit 3).",
)


@dataclass(frozen=True)
class NodeOptions:
    """What ``node run`` was asked for (checked by the command)."""

    name: str
    slots: int
    prefix: str
    period_s: float = DEFAULT_PERIOD_S
    tmux_socket: str = "orchestrate"
    trust: Path | None = None
    """The key file of the control room whose commands this node executes (None: none)."""


def check_identity(config: BrokerConfig, name: str) -> None:
    """Refuse a broker user that is not the node's own: the ACL would drop every
    presence it sends, and the node would look dead while running."""
    if config.username and config.username != name:
        raise MqttConfigError(
            f"MQTT_USERNAME is {config.username!r} but the node is {name!r}: a node logs "
            f"in as its own broker user (orchestrate broker config --node {name}:PASS)"
        )
