"""What `node run` is asked for, checked before anything heavy is imported or started."""

from __future__ import annotations

from dataclasses import dataclass

from bus.errors import MqttConfigError
from bus.mqtt_config import BrokerConfig

DEFAULT_PERIOD_S = 30.0


@dataclass(frozen=True)
class NodeOptions:
    """What ``node run`` was asked for (checked by the command)."""

    name: str
    slots: int
    prefix: str
    period_s: float = DEFAULT_PERIOD_S
    tmux_socket: str = "orchestrate"


def check_identity(config: BrokerConfig, name: str) -> None:
    """Refuse a broker user that is not the node's own: the ACL would drop every
    presence it sends, and the node would look dead while running."""
    if config.username and config.username != name:
        raise MqttConfigError(
            f"MQTT_USERNAME is {config.username!r} but the node is {name!r}: a node logs "
            f"in as its own broker user (orchestrate broker config --node {name}:PASS)"
        )
