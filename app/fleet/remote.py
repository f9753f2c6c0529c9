"""The control room's side of a command on a remote job: signed, sent, confirmed.

``answer``, ``send`` and ``job cancel`` ask ``placed_node`` first: a job placed on a
fleet node is commanded there (``registry/fleet_commands.py``), not in a local pane.
The command is signed with that node's key, published QoS 1 on the node's commands
topic (``publish_once``: it returns after the broker's PUBACK, so the broker holds
it), and the command waits for the node's confirmation on its confirms topic,
subscribed before sending so none is missed.

A node that is offline does not lose the command: its persistent session at the
broker keeps it until it returns. The command says so and exits 3 at once rather
than wait (a person expects to hear where it stands, not to hang until a box comes
back); ``--wait SECONDS`` waits that long for the confirmation instead. An online node
that does not confirm within the wait gets the same line, exit 3.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Final

import click

from app.fleet.options import DEFAULT_WAIT_S
from app.settings import Settings
from app.terminal.output import shown
from bus.fleet_topics import commands_topic, confirms_topic
from bus.mqtt import MqttSubscriber
from bus.mqtt_config import BrokerConfig, new_client_id
from bus.mqtt_publisher import publish_once
from registry import placement as placements_table
from registry.fleet_commands import (
    Command,
    Confirmation,
    SentCommands,
    control_key,
    node_key,
    signed,
    take_command,
)
from registry.placement import PlacementStore
from registry.records import DEFAULT_PREFIX, Job, iso_from_ms
from registry.vocabulary import Activity, JobStatus

CONNECT_TIMEOUT_S: Final = 10.0
QUEUED_EXIT: Final = 3
"""Exit code of a command sent but not confirmed (yet): it runs when the node returns."""


@dataclass(frozen=True)
class Sent:
    """A command sent to a node: its confirmation, or None and why it has none yet."""

    command: Command
    confirmation: Confirmation | None
    pending: str = ""


def placed_node(settings: Settings, job_id: str) -> str | None:
    """The fleet node ``job_id`` is placed on (None: a local job, or not placed yet)."""
    return placements_table.placed_node(settings.open_registry().db.conn, job_id)[1]


def _broker() -> BrokerConfig:
    config = BrokerConfig.from_env()
    if config is None:
        raise click.UsageError(
            "this job runs on a fleet node: set MQTT_BROKER (and the control room's "
            "MQTT_USERNAME/MQTT_PASSWORD) to command it"
        )
    return config


def offline_since(settings: Settings, node: str) -> str | None:
    """Why ``node`` counts as offline ("offline since 12:03 (lost)"), None if online."""
    registry = settings.open_registry()
    known = {n.name: n for n in PlacementStore(registry.bus).nodes.nodes()}
    found = known.get(node)
    if found is None:
        return "was never heard of"
    if found.online:
        return None
    when = iso_from_ms(found.last_seen_ms) if found.last_seen_ms else "?"
    return f"is offline since {when} ({found.left or 'silent'})"


def send(
    settings: Settings,
    command: Command,
    wait_s: float | None,
    *,
    prefix: str = DEFAULT_PREFIX,
) -> Sent:
    """Sign and send ``command``; wait for its confirmation (see the module doc)."""
    config = _broker()
    offline = offline_since(settings, command.node)
    if wait_s is None:
        wait_s = 0.0 if offline else DEFAULT_WAIT_S
    payload = signed(command, node_key(control_key(settings.state_dir), command.node))
    sent = SentCommands(settings.open_registry().db)
    sent.sent(command)  # before it goes: `job why` knows of it whatever happens next
    sub = MqttSubscriber(
        config,
        [confirms_topic(prefix, command.node)],
        client_id=new_client_id("orch-confirms"),
        session_expiry_s=0,
    )
    sub.start()
    try:
        if wait_s > 0 and not sub.wait_connected(CONNECT_TIMEOUT_S):
            raise click.ClickException(f"cannot reach the broker {config.url}: {sub.last_error}")
        publish_once(config, commands_topic(prefix, command.node), payload)
        deadline = time.monotonic() + wait_s
        while (left := deadline - time.monotonic()) > 0:
            message = sub.get(timeout=min(left, 0.5))
            if message is None:
                continue
            confirmation = Confirmation.from_json(message.payload)
            if confirmation is not None and confirmation.id == command.id:
                sent.confirmed(command.node, confirmation)
                return Sent(command, confirmation)
    finally:
        sub.stop()
    if offline:
        why = f"node {command.node} {offline}; the command will run when it returns"
    else:
        why = f"node {command.node} did not confirm within {wait_s:g} s; the command waits for it"
    return Sent(command, None, why)


def say(sent: Sent, done: str) -> None:
    """Print the outcome: ``done`` plus the node's word (exit 0), its refusal (exit 1),
    or where the command waits (exit 3)."""
    job_id = sent.command.job_id
    if sent.confirmation is None:
        click.echo(f"job {job_id}: {sent.command.verb} sent (command {sent.command.id}); "
                   f"{sent.pending}", err=True)  # fmt: skip
        raise click.exceptions.Exit(QUEUED_EXIT)
    detail = shown(sent.confirmation.detail)
    if not sent.confirmation.ok:
        raise click.ClickException(f"job {job_id}: node {sent.command.node} refused: {detail}")
    click.echo(f"job {job_id}: {done} on node {sent.command.node}: {detail}")


def send_take(settings: Settings, job_id: str, node: str) -> Sent:
    """Send a just-placed job to its node (the ingest bridge sends it again at the
    node's next announcement if this one is lost; its id makes it taken once)."""
    registry = settings.open_registry()
    return send(settings, take_command(registry.get(job_id), node), 0.0)


def resume_here(settings: Settings, job_id: str, reason: str) -> Job:
    """The control room's record of a remote job made pending again (a new attempt,
    its earlier events refused from here on) before its node is told to resume it."""
    registry = settings.open_registry()
    job = registry.get(job_id)
    if job.status == JobStatus.RUNNING and job.activity == Activity.INTERRUPTED:
        return registry.requeue_interrupted(job_id, reason)
    return registry.resume(job_id, reason)
