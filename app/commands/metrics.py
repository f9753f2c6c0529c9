"""`orchestrate metrics`: the registry's live numbers in Prometheus text format.

Without options it prints them once on stdout; ``--serve PORT`` serves them at
``http://127.0.0.1:PORT/metrics`` for a Prometheus to scrape. Both go through
one prometheus_client collector that reads the registry afresh on every
collection (``registry.live_stats``: read-only, one short snapshot), so a
scrape is never stale; all it keeps between scrapes is the event counts of the
append-only bus, to count only what came since. prometheus_client writes the
format, label escaping included: agent names are hostile text.
"""

from __future__ import annotations

import logging
import signal
import socketserver
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import click
from prometheus_client import CollectorRegistry, generate_latest, make_wsgi_app
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric

from app.settings import Settings
from bus.errors import BusError
from registry.live_stats import EventTally, LiveStats, read_live_stats

log = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"
_LOOPBACK_NAMES = frozenset({LOOPBACK, "localhost"})


class RegistryCollector:
    """A prometheus_client collector over one state dir, read on each ``collect``.

    It keeps the event counts of its last read (``EventTally``: the bus is
    append-only), so a scrape counts only the messages that came since; scrapes
    take turns on it.

    ``on_error`` None: a failed read raises (the one-shot stdout mode turns it
    into one line and exit 1). Otherwise the error goes to ``on_error`` and the
    scrape still answers, with ``orchestrate_up 0``, so a server keeps serving
    through a locked or damaged database and reports it where alerts look.
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        busy_timeout_ms: int,
        on_error: Callable[[BusError], None] | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.busy_timeout_ms = busy_timeout_ms
        self.on_error = on_error
        self._tally = EventTally()
        self._turn = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        try:
            with self._turn:
                stats = read_live_stats(
                    self.state_dir, busy_timeout_ms=self.busy_timeout_ms, tally=self._tally
                )
        except BusError as exc:
            if self.on_error is None:
                raise
            self.on_error(exc)
            yield GaugeMetricFamily("orchestrate_up", _UP_HELP, value=0)
        else:
            yield GaugeMetricFamily("orchestrate_up", _UP_HELP, value=1)
            yield from families(stats)
        yield GaugeMetricFamily(
            "orchestrate_scrape_duration_seconds",
            "Time this scrape took to read the registry.",
            value=time.perf_counter() - started,
        )


Family = TypeVar("Family", GaugeMetricFamily, CounterMetricFamily)

_UP_HELP = "1 if the registry was read for this scrape, 0 if it could not be (see the log)."


def _filled(family: Family, counts: Mapping[Any, float]) -> Family:
    """``family`` with one sample per key of ``counts`` (a label value, or a tuple of
    them), in key order so that scrapes read alike."""
    for key, value in sorted(counts.items()):
        family.add_metric(list(key) if isinstance(key, tuple) else [key], value)
    return family


def families(stats: LiveStats) -> Iterator[Metric]:
    """The metric families of one snapshot (their names and meaning: README, Metrics)."""
    yield _filled(
        GaugeMetricFamily(
            "orchestrate_jobs",
            "Jobs in the registry, by agent and status.",
            labels=["agent", "status"],
        ),
        stats.jobs,
    )
    yield _filled(
        GaugeMetricFamily(
            "orchestrate_running_jobs",
            "Running jobs by agent and activity (unknown: no signal has described it yet).",
            labels=["agent", "activity"],
        ),
        stats.running,
    )
    yield GaugeMetricFamily(
        "orchestrate_jobs_waiting",
        "Running jobs waiting for a person (a permission or a question).",
        value=stats.waiting,
    )
    yield _filled(
        GaugeMetricFamily("orchestrate_sessions", "Agent sessions by state.", labels=["state"]),
        stats.sessions,
    )
    yield _filled(
        CounterMetricFamily(
            "orchestrate_events_ingested",
            "Job events the registry recorded (each once, however it arrived), by agent.",
            labels=["agent"],
        ),
        stats.events,
    )
    if stats.event_age_s is not None:
        yield GaugeMetricFamily(
            "orchestrate_last_event_age_seconds",
            "Seconds since the registry recorded its newest job event.",
            value=stats.event_age_s,
        )
    if stats.ingest_lag_s is not None:
        yield GaugeMetricFamily(
            "orchestrate_ingest_lag_seconds",
            "Newest job event: when it was recorded minus its own timestamp "
            "(publisher's clock, whole seconds).",
            value=stats.ingest_lag_s,
        )
    yield GaugeMetricFamily(
        "orchestrate_bus_messages", "Messages on the SQLite bus.", value=stats.bus_messages
    )
    yield GaugeMetricFamily(
        "orchestrate_export_backlog_messages",
        "Bus messages not yet exported to export/bus.jsonl (the history's input).",
        value=stats.export_backlog,
    )
    yield _filled(
        GaugeMetricFamily(
            "orchestrate_storage_bytes",
            "Bytes on disk: the state database, its write-ahead log, the payload blobs.",
            labels=["file"],
        ),
        stats.storage_bytes,
    )
    yield GaugeMetricFamily(
        "orchestrate_blobs", "Payload blobs (payloads over 4 KiB) on disk.", value=stats.blobs
    )


def loopback_port(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    """``--serve``'s value: a port on the loopback interface only. ``9100``, or
    ``127.0.0.1:9100`` / ``localhost:9100`` to say so; 0 takes any free port.
    Any other host is refused in words: these numbers are not for the network."""
    if value is None:
        return None
    host, colon, port_text = value.rpartition(":")
    if colon and host not in _LOOPBACK_NAMES:
        raise click.BadParameter(
            f"metrics are served on loopback ({LOOPBACK}) only, not on {host[:40]!r}: "
            "put a reverse proxy or an SSH tunnel in front to reach them from elsewhere"
        )
    if not (port_text.isascii() and port_text.isdigit() and int(port_text) <= 65_535):
        raise click.BadParameter(f"{value[:40]!r} is not a port (0 to 65535)")
    return int(port_text)


class _QuietHandler(WSGIRequestHandler):
    """No access log line per scrape (a Prometheus scrapes every few seconds)."""

    def log_message(self, format: str, *args: object) -> None:
        """Log nothing."""


class _ThreadingServer(socketserver.ThreadingMixIn, WSGIServer):
    """A thread per scrape, so one slow read never holds up the next request."""

    daemon_threads = True


@click.command()
@click.option(
    "--serve",
    "port",
    metavar="PORT",
    callback=loopback_port,
    help="Serve at http://127.0.0.1:PORT/metrics until stopped (loopback only; 0: any free "
    "port), instead of printing once.",
)
@click.pass_obj
def metrics(settings: Settings, port: int | None) -> None:
    """The registry's live gauges and counters in Prometheus text format: jobs by status
    and activity, waiting jobs, events ingested, ingest lag, bus size."""
    registry = CollectorRegistry()
    if port is None:
        registry.register(
            RegistryCollector(settings.state_dir, busy_timeout_ms=settings.busy_timeout_ms)
        )
        sys.stdout.buffer.write(generate_latest(registry))
        sys.stdout.flush()
        return
    registry.register(
        RegistryCollector(
            settings.state_dir, busy_timeout_ms=settings.busy_timeout_ms, on_error=_log_failure
        )
    )
    serve(registry, port)


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def _log_failure(error: BusError) -> None:
    log.error("scrape could not read the registry: %s", error)


def serve(registry: CollectorRegistry, port: int) -> None:
    """Serve ``registry`` on loopback until Ctrl-C or SIGTERM (either ends it with exit
    0, as a service manager stopping it expects); say where on stderr."""
    try:
        server = make_server(
            LOOPBACK, port, make_wsgi_app(registry), _ThreadingServer, handler_class=_QuietHandler
        )
    except OSError as exc:  # the port taken, or below 1024 without the right
        click.echo(
            f"orchestrate metrics: cannot serve on {LOOPBACK}:{port}: {exc.strerror or exc}",
            err=True,
        )
        raise click.exceptions.Exit(1) from None
    bound = server.server_address[1]
    click.echo(f"orchestrate metrics: serving http://{LOOPBACK}:{bound}/metrics", err=True)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
