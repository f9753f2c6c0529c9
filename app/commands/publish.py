"""`orchestrate publish`: an agent reports one event for its job (seed 000 §2).

The agent's hot path: it runs once per event from inside a pane, so it imports
the registry and nothing heavy (no Textual, libtmux, Spark; paho only when the
job has a broker). The event is recorded locally first (seq allocation,
signing, status move and bus append in one transaction), then handed to the
remote transports.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import BinaryIO

import click

from app.settings import Settings
from registry.errors import InvalidEvent
from registry.events import Event
from registry.jobs import Recorded
from registry.records import Job

TOKEN_ENV = "ORCHESTRATE_JOB_TOKEN"


def parse_data(text: str | None) -> dict[str, object]:
    """The --data argument: a JSON object (or @file.json)."""
    if text is None:
        return {}
    source = "--data"
    if text.startswith("@"):
        source = f"--data file {text[1:]}"
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InvalidEvent(f"cannot read {source}: {exc}") from exc
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidEvent(f"{source} is not valid JSON: {exc.msg} at char {exc.pos}") from None
    except RecursionError:
        raise InvalidEvent(f"{source} is nested too deeply") from None
    if not isinstance(value, dict):
        raise InvalidEvent(f"{source} must be a JSON object")
    return value


@click.command()
@click.option(
    "--job",
    "job_id",
    envvar="ORCHESTRATE_JOB",
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
@click.pass_obj
def publish(
    settings: Settings,
    job_id: str | None,
    event: str | None,
    detail: str,
    data_text: str | None,
    attempts: int,
    raw: BinaryIO | None,
) -> None:
    """Publish one event for a job: recorded locally, then sent to remote subscribers."""
    registry = settings.open_registry()
    if raw is not None:
        recorded = registry.record_event(raw.read(), via="cli")
        sys.stdout.write(recorded.event.to_bytes().decode("utf-8") + "\n")
        return
    if not job_id:
        raise click.UsageError("--job is required (or set ORCHESTRATE_JOB)")
    if not event:
        raise click.UsageError("--event is required")
    recorded = registry.publish(
        job_id, event, detail, parse_data(data_text), token=os.environ.get(TOKEN_ENV) or None
    )
    sys.stdout.write(recorded.event.to_bytes().decode("utf-8") + "\n")
    sys.stdout.flush()
    send_remote(registry.get(recorded.job_id), recorded, attempts)


def send_remote(job: Job, recorded: Recorded, attempts: int) -> None:
    """The transport seam: carry a locally recorded event to remote subscribers.

    Today that is MQTT, when the job has a broker block; the SQLite bus already
    holds the event. A failure here is reported with exit 1, saying the event
    is safe locally, so an agent does not republish it under a new seq.
    """
    if job.broker is None:
        return
    from bus.errors import MqttError

    try:
        send_mqtt(job, recorded.event, attempts)
    except MqttError as exc:
        click.echo(
            f"orchestrate: job {job.job_id} seq {recorded.seq} is recorded locally, "
            f"but was not sent over MQTT: {exc}",
            err=True,
        )
        sys.exit(exc.exit_code)


def send_mqtt(job: Job, event: Event, attempts: int) -> None:
    """QoS 1 to ``<topic_prefix>/events``, retained when terminal (seed 000 §2.3)."""
    from bus.mqtt_config import resolve_broker
    from bus.mqtt_publisher import publish_once

    config = resolve_broker(os.environ, job.broker)
    if config is None:
        return
    publish_once(
        config, job.events_topic, event.to_bytes(), retain=event.is_terminal, attempts=attempts
    )
