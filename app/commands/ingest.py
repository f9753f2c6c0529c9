"""`orchestrate ingest`: run the MQTT -> SQLite bus bridge alone, until interrupted.

Each event it commits is one JSON line on stdout ({job_id, seq, event,
status, bus_seq}); refusals and connection trouble are logged on stderr.
With no broker configured there is nothing to bridge: one line, exit 1
(every other command works on the SQLite bus alone).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from types import FrameType

import click

from app.commands.json_option import ALWAYS_JSON_OPTION
from app.settings import Settings
from registry.ingest import IngestBridge
from registry.jobs import Recorded
from registry.records import DEFAULT_PREFIX


def print_recorded(recorded: Recorded) -> None:
    """One JSON line per committed event."""
    line = {
        "job_id": recorded.job_id,
        "seq": recorded.seq,
        "event": recorded.event.event,
        "status": recorded.status,
        "bus_seq": recorded.bus_seq,
    }
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def announce(bridge: IngestBridge, stop: threading.Event, patience_s: float = 3.0) -> None:
    """Say on stderr when the bridge is first subscribed (scripts wait for this line),
    once if another bridge of this state dir runs (this one waits), and once if the
    broker cannot be reached for a while (it keeps retrying)."""
    deadline: float | None = time.monotonic() + patience_s
    said_standby = False
    while not stop.wait(0.05):
        if bridge.state == "connected":
            click.echo(f"orchestrate: ingesting {bridge.topic} from {bridge.config.url}", err=True)
            return
        if bridge.state == "standby":
            if not said_standby:
                said_standby = True
                click.echo(
                    f"orchestrate: another ingest (or control room) already ingests into "
                    f"{bridge.state_dir}; waiting to take over when it stops",
                    err=True,
                )
            deadline = time.monotonic() + patience_s  # patience starts once it connects
        elif deadline is not None and time.monotonic() > deadline:
            deadline = None
            why = bridge.last_error or "no answer"
            click.echo(
                f"orchestrate: still connecting to {bridge.config.url} ({why}); retrying",
                err=True,
            )


@click.command()
@click.option(
    "--prefix",
    default=DEFAULT_PREFIX,
    show_default=True,
    metavar="TOPIC",
    help="Ingest <prefix>/+/events.",
)
@click.option("--broker", "host", metavar="HOST", help="Broker host (default: $MQTT_BROKER).")
@click.option("--port", type=click.IntRange(1, 65535), metavar="N", help="Broker port.")
@click.option("--quiet", is_flag=True, help="Do not print committed events.")
@ALWAYS_JSON_OPTION
@click.pass_obj
def ingest(
    settings: Settings, prefix: str, host: str | None, port: int | None, quiet: bool
) -> None:
    """Record every job event arriving over MQTT into the bus, exactly once."""
    from bus.errors import MqttConfigError
    from bus.mqtt import resolve_broker

    flags: dict[str, object] = {}
    if host:
        flags["host"] = host
    if port is not None:
        flags["port"] = port
    config = resolve_broker(os.environ, flags or None)
    if config is None:
        raise MqttConfigError(
            "no MQTT broker configured (set MQTT_BROKER or pass --broker): nothing to "
            "ingest; events still reach the SQLite bus through `orchestrate publish`"
        )
    try:
        bridge = IngestBridge(
            settings.state_dir,
            config,
            prefix=prefix,
            busy_timeout_ms=settings.busy_timeout_ms,
            on_recorded=None if quiet else print_recorded,
        )
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--prefix") from None
    stop = threading.Event()

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    threading.Thread(target=announce, args=(bridge, stop), daemon=True).start()
    bridge.run(stop)
    stats = bridge.stats
    click.echo(
        f"orchestrate: ingest stopped: {stats.recorded} recorded, {stats.duplicates} "
        f"duplicate(s), {stats.refused} refused",
        err=True,
    )
