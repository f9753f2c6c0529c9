"""`orchestrate publish`: an agent reports one event for its job (seed 000 §2).

The agent's hot path: it runs once per event from inside a pane, so it imports
nothing heavy (no Textual, libtmux, Spark; paho only when there is a broker).

An event counts as delivered once it is in the registry. Two ways, chosen by
where the registry is:
* on this host (the state dir holds ``state.db``): the event is recorded
  locally first (seq allocation, signing, status move and bus append in one
  transaction), then handed to MQTT when the job has a broker;
* on another host (no ``state.db`` here, or ``--remote``): the event is stored
  in this host's outbox (``<state dir>/outbox/``, on disk before anything is
  sent; its seq from ``registry.remote_seq``), then published over MQTT. The
  broker comes from ``MQTT_*`` and the token from ``ORCHESTRATE_JOB_TOKEN``;
  the control room's ingest bridge records it and confirms it, and only then
  does the outbox let it go. Exit 0 means: in the outbox and acknowledged by
  the broker. Whatever is not confirmed yet when this exits is re-sent by a
  background ``orchestrate publish --flush --follow`` (``app.commands.delivery_flusher``),
  which this starts when none runs. This path does not import the registry's
  database code.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, BinaryIO

import click

from app.commands.json_argument import read_json_argument
from app.commands.json_option import ALWAYS_JSON_OPTION
from app.settings import JOB_ENV, JOB_TOKEN_ENV, TOPIC_PREFIX_ENV, Settings
from app.terminal.output import json_text
from registry.errors import InvalidEvent
from registry.events import Event, build_event

if TYPE_CHECKING:
    from bus.delivery_outbox import OutboxMessage
    from bus.mqtt_config import BrokerConfig
    from registry.delivery import AgentOutbox
    from registry.jobs import Recorded
    from registry.records import Job

# How long a publish waits for the control room's confirmation when no flusher
# runs (it is usually there in a few ms); without one a flusher is started.
CONFIRM_WAIT_S = 1.0


def parse_data(text: str | None) -> dict[str, object]:
    """The --data argument: a JSON object (or @file.json)."""
    if text is None:
        return {}
    value = read_json_argument(text, "--data")
    if not isinstance(value, dict):
        source = "--data" if not text.startswith("@") else f"--data file {text[1:]}"
        raise InvalidEvent(f"{source} must be a JSON object")
    return value


@click.command()
@click.option(
    "--job",
    "job_id",
    envvar=JOB_ENV,
    metavar="ID",
    help="The job (default: $ORCHESTRATE_JOB).",
)
@click.option("--event", metavar="EVENT", help="started, progress, permission_required, ...")
@click.option("--detail", default="", help="Safe text: no absolute paths, no secrets.")
@click.option("--data", "data_text", metavar="JSON", help="A JSON object (or @file.json).")
@click.option(
    "--attempts",
    default=3,
    show_default=True,
    type=click.IntRange(1, 20),
    help="MQTT publish attempts (jobs with a broker).",
)
@click.option(
    "--raw",
    type=click.File("rb"),
    help="Record a ready-made wire event from a file ('-' for stdin), e.g. a relay.",
)
@click.option(
    "--remote",
    is_flag=True,
    help="The job's registry is on another host: send over MQTT only "
    "(the default when this host has no registry).",
)
@click.option(
    "--topic-prefix",
    envvar=TOPIC_PREFIX_ENV,
    metavar="TOPIC",
    help="Remote only: the job's topic prefix (default: jobs/<job>).",
)
@click.option(
    "--flush",
    is_flag=True,
    help="Send this host's outbox (events the control room has not confirmed) and wait.",
)
@click.option(
    "--wait",
    "wait_s",
    default=10.0,
    show_default=True,
    type=click.FloatRange(0, 3600),
    help="--flush: seconds to wait for the confirmations.",
)
@click.option("--follow", is_flag=True, hidden=True, help="--flush: the background flusher.")
@ALWAYS_JSON_OPTION
@click.pass_context
def publish(
    ctx: click.Context,
    job_id: str | None,
    event: str | None,
    detail: str,
    data_text: str | None,
    attempts: int,
    raw: BinaryIO | None,
    remote: bool,
    topic_prefix: str | None,
    flush: bool,
    wait_s: float,
    follow: bool,
) -> None:
    """Publish one event for a job: recorded locally, then sent to remote subscribers."""
    settings: Settings = ctx.obj
    if flush or follow:
        flush_outbox(settings, follow=follow, wait_s=wait_s)
        return
    remote = remote or not settings.db_path.exists()
    if raw is not None:
        if remote:
            raise click.UsageError(
                f"--raw records into this host's registry; there is none in {settings.state_dir}"
                if not settings.db_path.exists()
                else "--raw records into this host's registry: not with --remote"
            )
        recorded = settings.open_registry().record_event(raw.read(), via="cli")
        sys.stdout.write(json_text(recorded.event.to_bytes().decode("utf-8")) + "\n")
        return
    if not job_id:
        raise click.UsageError("--job is required (or set ORCHESTRATE_JOB)")
    if not event:
        raise click.UsageError("--event is required")
    token = os.environ.get(JOB_TOKEN_ENV) or None
    if remote:
        publish_remote(settings, job_id, event, detail, parse_data(data_text), token,
                       topic_prefix or f"jobs/{job_id}", attempts)  # fmt: skip
        return
    if ctx.get_parameter_source("topic_prefix") is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--topic-prefix is for --remote; a local job has its own")
    registry = settings.open_registry()
    recorded = registry.publish(job_id, event, detail, parse_data(data_text), token=token)
    sys.stdout.write(json_text(recorded.event.to_bytes().decode("utf-8")) + "\n")
    sys.stdout.flush()
    send_remote(registry.get(recorded.job_id), recorded, attempts)


def publish_remote(
    settings: Settings,
    job_id: str,
    event: str,
    detail: str,
    data: dict[str, object],
    token: str | None,
    topic_prefix: str,
    attempts: int,
) -> None:
    """An agent whose registry is on another host: build, sign, keep in the outbox,
    send over MQTT.

    Everything is validated before the seq is taken, so bad input costs no seq.
    """
    from bus.errors import MqttConfigError
    from bus.mqtt_config import resolve_broker, validate_publish_topic
    from registry.delivery import AgentOutbox
    from registry.signing import sign

    config = resolve_broker(os.environ, None)
    if config is None:
        raise MqttConfigError(
            f"no registry in {settings.state_dir} and no MQTT_BROKER set: nowhere to "
            "publish (set MQTT_BROKER for a job registered on another host)"
        )
    topic = validate_publish_topic(f"{topic_prefix.rstrip('/')}/events")
    build_event(job_id, 1, event, detail, data)  # refuse bad input before taking a seq

    def make_event(seq: int) -> Event:
        built = build_event(job_id, seq, event, detail, data)
        return sign(built, token) if token else built

    box = AgentOutbox(settings.state_dir)
    try:
        queued = box.queue(job_id, topic, config.url, make_event)
        if not token:
            click.echo(
                f"orchestrate: warning: {JOB_TOKEN_ENV} is not set; job {job_id} seq "
                f"{queued.position} goes unsigned (a job that signs will drop it)",
                err=True,
            )
        sys.stdout.write(json_text(queued.payload.decode("utf-8")) + "\n")
        sys.stdout.flush()
        deliver_queued(settings, box, config, queued, attempts)
    finally:
        box.close()


def deliver_queued(
    settings: Settings,
    box: AgentOutbox,
    config: BrokerConfig,
    queued: OutboxMessage,
    attempts: int,
) -> None:
    """Send an event the outbox holds; leave a background flusher to finish the job
    when the control room has not confirmed everything (see the module doc)."""
    from app.commands.delivery_flusher import flusher_running, start_flusher
    from bus.delivery_sender import deliver
    from bus.errors import BrokerAuthError, MqttConfigError, MqttError, MqttTlsError, PublishRefused
    from registry.delivery import applied_topic

    running = flusher_running(settings.state_dir, config.url)
    where = f"job {queued.stream} seq {queued.position}"
    try:
        confirmation = deliver(
            config, queued, applied_topic(queued.topic),
            confirm_wait=0 if running else CONFIRM_WAIT_S, attempts=attempts,
        )  # fmt: skip
    except PublishRefused as exc:
        box.outbox.discard(queued)  # refused now, refused on every try
        click.echo(f"orchestrate: {where} was refused by the broker, not kept: {exc}", err=True)
        sys.exit(exc.exit_code)
    except MqttError as exc:
        if not isinstance(exc, (BrokerAuthError, MqttTlsError, MqttConfigError)):
            if not running:
                start_flusher(settings.state_dir)
            how = "a background `orchestrate publish --flush` sends it when the broker answers"
        else:
            how = "`orchestrate publish --flush` sends it once the broker lets this host in"
        click.echo(
            f"orchestrate: {where} is not at the broker yet, and waits in this host's "
            f"outbox (do not publish it again; {how}): {exc}",
            err=True,
        )
        sys.exit(exc.exit_code)
    if confirmation is not None and confirmation.has(queued.position):
        box.outbox.confirm(queued.stream, confirmation)
    else:
        box.outbox.mark_sent([queued])
        if confirmation is not None:
            box.outbox.confirm(queued.stream, confirmation)
    if not running and box.outbox.pending_count(config.url):
        start_flusher(settings.state_dir)


def flush_outbox(settings: Settings, *, follow: bool, wait_s: float) -> None:
    """`publish --flush`: send what the outbox holds; exit 1 if some stays unconfirmed."""
    from app.commands.delivery_flusher import flush

    confirmed, left = flush(settings.state_dir, follow=follow, wait_s=wait_s)
    if follow:
        return
    if left:
        click.echo(
            f"orchestrate: {left} event(s) still wait in the outbox: not confirmed by the "
            f"control room within {wait_s:g} s (is its ingest running, the broker up?)",
            err=True,
        )
        sys.exit(1)
    click.echo(f"orchestrate: outbox empty ({confirmed} confirmed)", err=True)


def send_remote(job: Job, recorded: Recorded, attempts: int) -> None:
    """The transport seam: carry a locally recorded event to remote subscribers.

    Today that is MQTT, when the job has a broker block; the SQLite bus already
    holds the event. A failure here is reported with exit 1, saying the event
    is safe locally, so an agent does not republish it under a new seq.
    """
    if job.broker is None:
        return
    from bus.mqtt_config import resolve_broker

    config = resolve_broker(os.environ, job.broker)
    if config is not None:
        send_or_exit(
            config, job.events_topic, recorded.event, attempts, " (it is recorded locally)"
        )


def send_or_exit(config: BrokerConfig, topic: str, event: Event, attempts: int, note: str) -> None:
    """QoS 1 to ``topic``, retained when terminal (seed 000 §2.3); a failure is one
    line (with ``note``: where the event stands) and the MqttError's exit code."""
    from bus.errors import MqttError
    from bus.mqtt_publisher import publish_once

    try:
        publish_once(config, topic, event.to_bytes(), retain=event.is_terminal, attempts=attempts)
    except MqttError as exc:
        click.echo(
            f"orchestrate: job {event.job_id} seq {event.seq} was not sent over MQTT{note}: {exc}",
            err=True,
        )
        sys.exit(exc.exit_code)
