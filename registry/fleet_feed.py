"""The fleet's side of the ingest bridge: presence into the nodes table, then placement.

``registry/ingest.py`` hands each batch it received here first: the messages on a
presence topic (``bus.fleet_topics``) are recorded (``registry/nodes.py``) and
acknowledged, and a node's announcement tries the placements still waiting
(``registry/placement.py``): the job placed when a node that can take it appears.
"""

from __future__ import annotations

import logging
import sqlite3

from bus.errors import BusError
from bus.fleet_topics import node_of_presence
from bus.mqtt import MqttSubscriber, ReceivedMessage
from registry.placement import PlacementStore
from registry.presence import InvalidPresence

log = logging.getLogger(__name__)


def take_presence(
    placements: PlacementStore, prefix: str, sub: MqttSubscriber, batch: list[ReceivedMessage]
) -> list[ReceivedMessage]:
    """Record and acknowledge the presence messages in ``batch``; the rest, in order.

    A presence that cannot be recorded (refused, or the database busy past its
    timeout) is acknowledged all the same: the node announces itself again every
    period, so the next one repairs it, and an unacknowledged message would hold one
    of the broker's in-flight places until the next connection."""
    rest: list[ReceivedMessage] = []
    announced = False
    for message in batch:
        if node_of_presence(prefix, message.topic) is None:
            rest.append(message)
            continue
        try:
            outcome = placements.nodes.record_message(prefix, message.topic, message.payload)
            announced = announced or outcome == "recorded"
        except InvalidPresence as exc:
            log.warning("refused a presence on %s: %s", message.topic, exc)
        except (BusError, sqlite3.Error) as exc:
            log.warning("could not record a presence on %s: %s", message.topic, exc)
        sub.ack(message)
    if announced:
        try:
            for placed in placements.place_waiting():
                log.info("job %s placed on node %s", placed.job_id, placed.node)
        except (BusError, sqlite3.Error) as exc:  # the next announcement tries again
            log.warning("could not place the waiting jobs: %s", exc)
    return rest
