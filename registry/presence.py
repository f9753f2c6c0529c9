"""A fleet node's presence message: written by the node, checked by the control room.

One JSON object, retained on ``<prefix>/nodes/<node>/presence`` (``bus.fleet_topics``)::

    {"v": 1, "node": "box2", "online": true, "boot": 1764316800000, "seq": 7,
     "host": "box2.lan", "agents": {"claude": "2.1.197", "demo": "0.1.0"},
     "slots": 4, "slots_used": 1, "load": [0.4, 0.3, 0.2], "period_s": 30, "sent_at_ms": ...}

and, as the node's last will or its goodbye, ``{"v": 1, "node": "box2", "online":
false, "boot": ..., "left": "lost" | "stopped"}``.

``boot`` (the node's start, epoch ms) and ``seq`` (its announcements, counted) order
the messages of one node: a redelivered old announcement never undoes a newer one or
a will. A will carries no ``seq``: it ends the boot it names, whatever was announced
in it, and a later announcement of the same boot (the node reconnected after the
broker gave it up) brings it back.

A node is a machine someone else may run, so everything in it is checked as hostile
text (``bus.text``): a host name or version with a hidden character is refused, not
cleaned, and so is a message whose ``node`` is not its topic's (the broker's ACL lets a
node write only its own topic; the name inside must agree).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Final

from bus.fleet_topics import NODE_NAME
from bus.text import find_hidden
from registry.errors import RegistryError
from registry.vocabulary import NodeLeft

PRESENCE_VERSION: Final = 1
MAX_PRESENCE_BYTES: Final = 16 * 1024
MAX_AGENTS: Final = 32
MAX_SLOTS: Final = 1024
AGENT_KIND: Final = re.compile(r"[a-z][a-z0-9_-]{0,31}")


class InvalidPresence(RegistryError):
    """A presence message the registry will not record (malformed, or not its topic's)."""


@dataclass(frozen=True)
class Presence:
    """One node's announcement, or its departure (``online`` False, ``left`` says how)."""

    node: str
    online: bool
    boot: int
    seq: int | None = None
    host: str = ""
    agents: dict[str, str | None] = field(default_factory=dict)
    slots: int = 0
    slots_used: int = 0
    load: tuple[float, float, float] = (0.0, 0.0, 0.0)
    period_s: float = 30.0
    left: NodeLeft | None = None

    def to_json(self) -> bytes:
        """The message as it travels."""
        body: dict[str, Any] = {
            "v": PRESENCE_VERSION,
            "node": self.node,
            "online": self.online,
            "boot": self.boot,
        }
        if self.online:
            body |= {
                "seq": self.seq,
                "host": self.host,
                "agents": self.agents,
                "slots": self.slots,
                "slots_used": self.slots_used,
                "load": list(self.load),
                "period_s": self.period_s,
            }
        else:
            body["left"] = str(self.left or NodeLeft.LOST)
        return json.dumps(body, separators=(",", ":")).encode("utf-8")


def departure(node: str, boot: int, left: NodeLeft) -> Presence:
    """The message a node leaves behind (its will: LOST; its goodbye: STOPPED)."""
    return Presence(node=node, online=False, boot=boot, left=left)


def parse_presence(topic_node: str, payload: bytes) -> Presence:
    """The presence in ``payload``, arrived on ``topic_node``'s topic (``InvalidPresence``
    with the reason otherwise)."""
    if len(payload) > MAX_PRESENCE_BYTES:
        raise InvalidPresence(f"presence of {len(payload)} bytes (at most {MAX_PRESENCE_BYTES})")
    try:
        body = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InvalidPresence(f"presence is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise InvalidPresence("presence is not a JSON object")
    if body.get("v") != PRESENCE_VERSION:
        raise InvalidPresence(f"presence version {_short(body.get('v'))} (this reads 1)")
    node = body.get("node")
    if node != topic_node:
        raise InvalidPresence(f"presence names node {_short(node)} on {topic_node!r}'s topic")
    online = body.get("online")
    if not isinstance(online, bool):
        raise InvalidPresence("presence 'online' must be true or false")
    boot = _whole(body, "boot", 0, 2**62)
    if not online:
        try:
            left = NodeLeft(body.get("left", NodeLeft.LOST))
        except ValueError:
            raise InvalidPresence(f"presence 'left' is {_short(body.get('left'))}") from None
        return departure(topic_node, boot, left)
    slots = _whole(body, "slots", 0, MAX_SLOTS)
    return Presence(
        node=topic_node,
        online=True,
        boot=boot,
        seq=_whole(body, "seq", 0, 2**62),
        host=_text(body.get("host"), "host", 253),
        agents=_agents(body.get("agents")),
        slots=slots,
        slots_used=_whole(body, "slots_used", 0, 100_000),
        load=_load(body.get("load")),
        period_s=_number(body.get("period_s"), "period_s", 1.0, 86_400.0),
    )


def _short(value: object) -> str:
    return repr(value).encode("unicode_escape").decode("ascii")[:40]


def _whole(body: dict[str, Any], key: str, low: int, high: int) -> int:
    value = body.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidPresence(f"presence {key!r} must be a whole number {low}-{high}")
    return value


def _number(value: object, key: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidPresence(f"presence {key!r} must be a number")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise InvalidPresence(f"presence {key!r} must be from {low:g} to {high:g}")
    return number


def _text(value: object, key: str, limit: int) -> str:
    if not isinstance(value, str) or not value or len(value) > limit:
        raise InvalidPresence(f"presence {key!r} must be text of 1-{limit} characters")
    if find_hidden(value) is not None:
        raise InvalidPresence(f"presence {key!r} holds a hidden character")
    return value


def _agents(value: object) -> dict[str, str | None]:
    if not isinstance(value, dict) or len(value) > MAX_AGENTS:
        raise InvalidPresence(f"presence 'agents' must be an object of at most {MAX_AGENTS}")
    agents: dict[str, str | None] = {}
    for kind, version in value.items():
        if not AGENT_KIND.fullmatch(kind):
            raise InvalidPresence(f"presence names an agent {_short(kind)}")
        agents[kind] = None if version is None else _text(version, "agent version", 64)
    return dict(sorted(agents.items()))


def _load(value: object) -> tuple[float, float, float]:
    if not isinstance(value, list) or len(value) != 3:
        raise InvalidPresence("presence 'load' must be three numbers (1, 5, 15 minutes)")
    one, five, fifteen = (_number(item, "load", 0.0, 1e6) for item in value)
    return (one, five, fifteen)


def is_node_name(name: str) -> bool:
    """Whether ``name`` can name a node (``bus.fleet_topics.NODE_NAME``)."""
    return NODE_NAME.fullmatch(name) is not None
