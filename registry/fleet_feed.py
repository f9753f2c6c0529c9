"""The fleet's side of the ingest bridge: presence into the nodes table, then placement,
and the events of placed jobs from their nodes.

``registry/ingest.py`` hands each batch it received here first: the messages on a
presence topic (``bus.fleet_topics``) are recorded (``registry/nodes.py``) and
acknowledged, and a node's announcement tries the placements still waiting
(``registry/placement.py``): the job placed when a node that can take it appears.
Each announcing node is then sent (again) the signed ``take`` command of every job
placed on it that it has not reported yet; the node takes each once.

A node's job events arrive on ``<prefix>/nodes/<node>/jobs/<job>/events``: the
broker's ACL lets only that node write there, and the event is believed only when the
registry placed that job on that node (``node_events``); it is then recorded as if it
had arrived on the job's own topic, with every other check of the recorder (its
signature with the job's token, its seq, the job's state). The nodes' confirmations of
commands are recorded beside the commands sent (``confirmations``).
"""

from __future__ import annotations

import dataclasses
import logging
import sqlite3

from bus.errors import BusError
from bus.fleet_topics import (
    commands_topic,
    node_and_job_of_events,
    node_of_confirms,
    node_of_presence,
)
from bus.mqtt import MqttSubscriber, ReceivedMessage
from registry.errors import RegistryError
from registry.fleet_commands import (
    Confirmation,
    SentCommands,
    node_key,
    signed,
    take_command,
)
from registry.jobstore import JobStore
from registry.placement import PlacementStore
from registry.presence import InvalidPresence

log = logging.getLogger(__name__)


def take_presence(
    placements: PlacementStore,
    prefix: str,
    sub: MqttSubscriber,
    batch: list[ReceivedMessage],
    key: bytes | None = None,
) -> list[ReceivedMessage]:
    """Record and acknowledge the presence messages in ``batch``; the rest, in order.

    A presence that cannot be recorded (refused, or the database busy past its
    timeout) is acknowledged all the same: the node announces itself again every
    period, so the next one repairs it, and an unacknowledged message would hold one
    of the broker's in-flight places until the next connection."""
    rest: list[ReceivedMessage] = []
    announced = False
    heard: set[str] = set()
    for message in batch:
        node = node_of_presence(prefix, message.topic)
        if node is None:
            rest.append(message)
            continue
        try:
            outcome = placements.nodes.record_message(prefix, message.topic, message.payload)
            announced = announced or outcome == "recorded"
            if outcome == "recorded":
                heard.add(node)
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
    if key is not None:
        for node in sorted(heard):
            send_takes(placements, prefix, sub, node, key)
    return rest


def send_takes(
    placements: PlacementStore, prefix: str, sub: MqttSubscriber, node: str, key: bytes
) -> int:
    """Send ``node`` the take command of each job placed on it and still pending; how
    many went out (one not sent now goes at the node's next announcement)."""
    sent = 0
    try:
        node_online = any(n.name == node and n.online for n in placements.nodes.nodes())
        if not node_online:
            return 0
        store = JobStore(placements.bus)
        sent_commands = SentCommands(placements.db)
        for job_id in placements.pending_on(node):
            command = take_command(store.get(job_id), node)
            sent_commands.sent(command)
            if sub.publish(commands_topic(prefix, node), signed(command, node_key(key, node))):
                sent += 1
    except (BusError, RegistryError, sqlite3.Error) as exc:
        log.warning("could not send node %s its jobs: %s", node, exc)
    return sent


def node_events(
    placements: PlacementStore, prefix: str, sub: MqttSubscriber, batch: list[ReceivedMessage]
) -> list[ReceivedMessage]:
    """The batch with each node's job event readdressed to its job's own topic when the
    job is placed on that node; one that is not is refused (logged and acknowledged)."""
    kept: list[ReceivedMessage] = []
    store: JobStore | None = None
    for message in batch:
        owner = node_and_job_of_events(prefix, message.topic)
        if owner is None:
            kept.append(message)
            continue
        node, job_id = owner
        try:
            placement = placements.get(job_id)
            if placement is None or placement.node != node:
                log.warning(
                    "refused an event from node %s for job %s: not placed on it", node, job_id[:16]
                )
                sub.ack(message)
                continue
            store = store or JobStore(placements.bus)
            topic = store.get(job_id).events_topic
        except RegistryError as exc:
            log.warning("refused an event from node %s: %s", node, exc)
            sub.ack(message)
            continue
        kept.append(dataclasses.replace(message, topic=topic))
    return kept


def confirmations(
    sent: SentCommands, prefix: str, sub: MqttSubscriber, batch: list[ReceivedMessage]
) -> list[ReceivedMessage]:
    """Record and acknowledge the nodes' confirmations in ``batch``; the rest, in order.
    (The command that waited for one has recorded it already; this is for the one whose
    sender is gone.) A confirmation that cannot be recorded now is acknowledged all the
    same: the node confirms again whenever the command comes again."""
    rest: list[ReceivedMessage] = []
    for message in batch:
        node = node_of_confirms(prefix, message.topic)
        if node is None:
            rest.append(message)
            continue
        confirmation = Confirmation.from_json(message.payload)
        if confirmation is None:
            log.warning("refused a confirmation from node %s: not one", node)
        else:
            try:
                sent.confirmed(node, confirmation)
            except (BusError, sqlite3.Error) as exc:
                log.warning("could not record a confirmation from node %s: %s", node, exc)
        sub.ack(message)
    return rest
