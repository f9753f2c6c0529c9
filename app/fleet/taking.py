"""A node's link to its control room: signed commands in, confirmations and job events out.

The node subscribes to ``<prefix>/nodes/<name>/commands`` under a durable client id
(a persistent MQTT 5 session, QoS 1): commands sent while it was down wait at the
broker. Each command is verified against the key it trusts (``--trust KEYFILE``,
``registry/fleet_commands.py``); an unsigned or forged one is refused, logged and
answered with a refusal. A verified one is executed once (its id recorded with its
confirmation; a redelivery only gets the confirmation again), through the same
Orchestrator a local command uses: ``take`` registers the job under the control
room's id and token and starts its agent in a pane of this host's tmux server, in a
work dir of its own (``<state>/work/<job>``); the supervisor observes it as any other.

The events of the jobs it took are read from the node's own bus and published on
``<prefix>/nodes/<name>/jobs/<job>/events`` (QoS 1). After each (re)connection the
node sends them all again: the control room's (job, seq) dedupe drops the copies, and
an event the broker never acknowledged before a crash is not lost. A job the node's
supervisor ended without an event of its agent (its pane died, it sat idle when done)
is told with an event of the node's own, signed with the job's token: ``completed``
or ``error`` with the supervisor's reason, at the next seq (the job is over here, so
that seq is the same each time it is sent).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

from app.approvals.question import parse_answer
from app.control import Orchestrator, launch
from app.control.launch import LaunchRecord
from app.settings import Settings
from bus.errors import BusError
from bus.fleet_topics import commands_topic, confirms_topic, node_job_events_topic
from bus.mqtt import MqttSubscriber, ReceivedMessage
from bus.mqtt_config import BrokerConfig
from registry.bus_types import JOB_EVENT
from registry.errors import JobNotFound, RegistryError
from registry.events import build_event, event_from_dict
from registry.fleet_commands import (
    Command,
    Confirmation,
    DoneCommands,
    InvalidCommand,
    verify,
)
from registry.signing import sign
from registry.vocabulary import FINAL_JOB_STATUSES, EventType, FleetVerb, JobStatus

log = logging.getLogger(__name__)

FORWARD_INTERVAL_S = 0.1
"""How often the node looks for new events of its jobs on its own bus."""
WORK_DIR = "work"


class FleetLink:
    """Commands from the control room executed here, and the taken jobs' events sent."""

    def __init__(
        self,
        settings: Settings,
        config: BrokerConfig,
        name: str,
        prefix: str,
        tmux_socket: str,
        key: bytes | None,
        report: Callable[[str], None],
    ) -> None:
        self.settings = settings
        self.name = name
        self.prefix = prefix
        self.key = key
        self.report = report
        self.orchestrator = Orchestrator(settings, tmux_socket=tmux_socket)
        self.done = DoneCommands(self.orchestrator.registry.db)
        self.sub = MqttSubscriber(
            config,
            [commands_topic(prefix, name)],
            client_id=f"orch-node-{name}-link"[:64],
            manual_ack=True,
        )
        self._told: set[tuple[str, int]] = set()
        """(job, last seq) of taken jobs known to be over, their ending sent (cleared on
        a reconnection; a resumed job that ends again has a later seq)."""

    def run(self, stop: threading.Event) -> None:
        """Until ``stop``: execute commands as they come, forward events in between."""
        self.sub.start()
        cursor = 0
        connection = -1
        try:
            while not stop.is_set():
                message = self.sub.get(timeout=FORWARD_INTERVAL_S)
                if self.sub.connected_count != connection:  # resend all: dedupe drops copies
                    connection, cursor = self.sub.connected_count, 0
                    self._told.clear()
                try:
                    if message is not None:
                        self._handle(message)
                    cursor = self._forward(cursor)
                    self._tell_endings()
                except (BusError, RegistryError, sqlite3.Error) as exc:
                    # the database busy or failing: said, tried again (an unacked
                    # command comes again with the next connection)
                    self.report(f"node {self.name}: link: {exc}")
        finally:
            self.sub.stop()
            self.orchestrator.registry.db.close()

    def _handle(self, message: ReceivedMessage) -> None:
        try:
            command = verify(message.payload, self.key, self.name)
        except InvalidCommand as exc:
            self.report(f"node {self.name}: refused a command: {exc}")
            self.sub.ack(message)
            return
        confirmation = self.done.confirmation(command.id)
        if confirmation is None:
            outcome = self.execute(command)
            self.done.record(command, outcome)
            confirmation = outcome.to_json()
            word = "done" if outcome.ok else "failed"
            self.report(f"node {self.name}: {command.verb} job {command.job_id} {word}")
        self.sub.publish(confirms_topic(self.prefix, self.name), confirmation)
        self.sub.ack(message)

    def execute(self, command: Command) -> Confirmation:
        """Run one verified command; what happened, as its confirmation says it."""
        try:
            detail = self._run(command)
            ok = True
        except Exception as exc:  # any refusal: the control room hears why, in one line
            detail, ok = f"{type(exc).__name__}: {exc}".splitlines()[0], False
        return Confirmation(command.id, command.job_id, str(command.verb), ok, detail)

    def _run(self, command: Command) -> str:
        orchestrator = self.orchestrator
        job_id, args = command.job_id, command.args
        if command.verb == FleetVerb.TAKE:
            return self._take(command)
        if job_id not in self.done.taken_jobs():
            raise JobNotFound(f"job {job_id} was never taken by node {self.name}")
        by = "control room (fleet)"
        if command.verb == FleetVerb.ANSWER:
            answered = orchestrator.answer(job_id, parse_answer(str(args.get("reply", ""))), by=by)
            return f"answered {answered.answer} ({answered.how})"
        if command.verb == FleetVerb.SEND:
            sent = orchestrator.send_input(job_id, str(args.get("text", "")), by=by)
            return f"sent {sent} characters"
        reason = str(args["reason"]) if args.get("reason") else None
        if command.verb == FleetVerb.CANCEL:
            job = orchestrator.cancel(job_id, by=by, reason=reason)
            return f"cancelled ({job.status})"
        if command.verb == FleetVerb.RESUME:
            job = orchestrator.resume_job(job_id, reason=reason or f"resumed by {by}")
            return f"resumed ({job.status})"
        raise InvalidCommand(f"unknown verb {command.verb}")

    def _take(self, command: Command) -> str:
        """Register the control room's job here under its id and token, and start it."""
        orchestrator = self.orchestrator
        args = command.args
        try:
            orchestrator.registry.get(command.job_id)
            return "already taken"
        except JobNotFound:
            pass
        token = args.get("token")
        artifacts = args.get("expected_artifacts") or []
        environment = dict(os.environ)
        # refused (not installed here) before anything is stored on this node
        launch.adapter_checked(str(args["agent"]), None, self.settings.state_dir, environment)
        job = orchestrator.registry.register(
            str(args["prompt"]),
            str(args["agent"]),
            str(args["agent_session"]),
            timeout_sec=int(args["timeout_sec"]),
            idle_timeout_sec=int(args["idle_timeout_sec"]),
            expected_artifacts=[str(item) for item in artifacts],
            sign_events=isinstance(token, str),
            done_when=str(args["done_when"]) if args.get("done_when") else None,
            adopt=(command.job_id, token if isinstance(token, str) else None),
        )
        workdir = Path(self.settings.state_dir) / WORK_DIR / job.job_id
        workdir.mkdir(mode=0o700, parents=True, exist_ok=True)
        record = LaunchRecord(None, str(workdir))
        record.save(orchestrator.job_dir(job.job_id))
        started = orchestrator.job_control.start(
            job, record, environment, why=f"taken by node {self.name}"
        )
        return f"started in session {started.agent_session} on node {self.name}"

    def _forward(self, cursor: int) -> int:
        """Publish the taken jobs' events after bus seq ``cursor``; the new cursor (it
        stops at the first one that could not be handed to paho)."""
        taken = set(self.done.taken_jobs())
        if not taken:
            return cursor
        bus = self.orchestrator.registry.bus
        for message in bus.read_after(cursor, limit=500):
            if message.type == JOB_EVENT and message.correlation_id in taken:
                topic = node_job_events_topic(self.prefix, self.name, message.correlation_id)
                payload = _event_bytes(message.payload)
                if not self.sub.publish(topic, payload):
                    return cursor
            cursor = message.seq
        return cursor

    def _tell_endings(self) -> None:
        """Send the ending of each taken job the supervisor ended without an event."""
        registry = self.orchestrator.registry
        for job_id in self.done.taken_jobs():
            try:
                job = registry.get(job_id)
            except JobNotFound:
                continue
            if job.status not in FINAL_JOB_STATUSES or (job_id, job.last_seq) in self._told:
                continue
            reason = registry.status_reasons([job_id]).get(job_id)
            if reason is not None and job.status in ENDINGS:
                event = build_event(job_id, job.last_seq + 1, ENDINGS[job.status], reason[:500])
                if job.auth_token:
                    event = sign(event, job.auth_token)
                topic = node_job_events_topic(self.prefix, self.name, job_id)
                if not self.sub.publish(topic, event.to_bytes()):
                    return
            self._told.add((job_id, job.last_seq))


ENDINGS: dict[str, EventType] = {
    JobStatus.COMPLETED: EventType.COMPLETED,
    JobStatus.ERROR: EventType.ERROR,
}
"""The event that tells the control room of a status the node's supervisor set."""


def _event_bytes(payload: object) -> bytes:
    """The event as the control room's recorder reads it (its wire JSON)."""
    if not isinstance(payload, dict):
        return b"{}"
    return event_from_dict(payload).to_bytes()
