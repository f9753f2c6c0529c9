"""The ingest bridge: job events arriving over MQTT recorded into the registry exactly once.

Subscribes to ``<prefix>/+/events`` under a stable client id (a persistent
session: events published while the bridge is down wait at the broker) with
manual acknowledgement, and hands each payload to ``Registry.record_event``.
The PUBACK goes to the broker only after the transaction committed, or after
a definitive refusal (malformed, forged, unknown job, duplicate, after the
end): a crash between receipt and commit means a redelivery, never a loss.
QoS 1 redeliveries and publisher retries are absorbed by the registry's
(job_id, seq) dedupe, so each event lands in the bus once.

Transient failures (the database locked or unwritable) are not acknowledged:
the same message is retried with backoff before any later one, keeping the
job's events in order. The bridge knows no Textual: the TUI runs ``run`` in
a worker thread and reads ``state`` and ``stats`` for its header.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from bus.db import BUSY_TIMEOUT_MS
from bus.errors import BusError
from bus.mqtt import BrokerConfig, ConnectionState, MqttSubscriber, ReceivedMessage, resolve_broker
from registry.errors import DuplicateEvent, EventAfterTerminal, RegistryError
from registry.jobs import Recorded, Registry
from registry.mqtt_source import stable_client_id

log = logging.getLogger(__name__)

DEFAULT_PREFIX = "jobs"
HeaderState = Literal["connected", "reconnecting", "none"]
Outcome = Literal["recorded", "duplicate", "refused"]
# Errors retrying can fix: the database locked by a long writer, a disk or a
# permission problem being repaired. Anything the registry refuses is final.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (BusError, sqlite3.Error, OSError)


@dataclass
class IngestStats:
    """Counters for the TUI header and the command's summary."""

    received: int = 0
    recorded: int = 0
    duplicates: int = 0
    refused: int = 0
    retries: int = 0


class IngestBridge:
    """MQTT -> registry, ack after commit.

    >>> # bridge = IngestBridge(state_dir, BrokerConfig("127.0.0.1", 1883))
    >>> # stop = threading.Event()
    >>> # threading.Thread(target=bridge.run, args=(stop,)).start()   # a TUI worker
    >>> # bridge.state  -> "connected" | "reconnecting" | "none"
    """

    def __init__(
        self,
        state_dir: Path | str,
        config: BrokerConfig,
        *,
        prefix: str = DEFAULT_PREFIX,
        client_id: str | None = None,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        audited: bool = True,
        on_recorded: Callable[[Recorded], None] | None = None,
        retry_base_s: float = 0.05,
        retry_cap_s: float = 2.0,
        reconnect_max_s: int = 30,
    ) -> None:
        """``client_id`` defaults to one stable per (host, state dir, prefix), so a
        restarted bridge resumes its session. ``on_recorded`` is called (in the
        bridge's thread) after each commit."""
        prefix = prefix.strip("/")
        if not prefix or "+" in prefix or "#" in prefix:
            raise ValueError(f"bad topic prefix: {prefix!r}")
        self.state_dir = Path(state_dir)
        self.config = config
        self.prefix = prefix
        self.topic = f"{prefix}/+/events"
        self.client_id = client_id or stable_client_id(
            "ingest", str(self.state_dir.resolve()), prefix
        )
        self.busy_timeout_ms = busy_timeout_ms
        self.audited = audited
        self.on_recorded = on_recorded
        self.retry_base_s = retry_base_s
        self.retry_cap_s = retry_cap_s
        self.reconnect_max_s = reconnect_max_s
        self.stats = IngestStats()
        self._subscriber: MqttSubscriber | None = None

    @property
    def state(self) -> HeaderState:
        """What the TUI header shows: connected, reconnecting (or still connecting), none."""
        sub = self._subscriber
        if sub is None or sub.state is ConnectionState.NONE:
            return "none"
        return "connected" if sub.state is ConnectionState.CONNECTED else "reconnecting"

    @property
    def last_error(self) -> str | None:
        """The latest connection problem, if any (for the header's tooltip)."""
        sub = self._subscriber
        return sub.last_error if sub is not None else None

    def wait_connected(self, timeout: float) -> bool:
        """Block until the bridge is subscribed (False on timeout or if not running)."""
        sub = self._subscriber
        return sub is not None and sub.wait_connected(timeout)

    def run(self, stop: threading.Event) -> None:
        """Ingest until ``stop`` is set; then disconnect (the session stays at the broker).

        Opens its own registry connection, so call it in the thread that runs it.
        Messages received but not committed when it stops are not acknowledged:
        the broker delivers them again to the next run.
        """
        registry = Registry.open(
            self.state_dir, busy_timeout_ms=self.busy_timeout_ms, audited=self.audited
        )
        sub = MqttSubscriber(
            self.config,
            [self.topic],
            client_id=self.client_id,
            manual_ack=True,
            reconnect_max_s=self.reconnect_max_s,
        )
        self._subscriber = sub
        sub.start()
        log.info("ingesting %s from %s as %s", self.topic, self.config.url, self.client_id)
        try:
            while not stop.is_set():
                message = sub.get(timeout=0.1)
                if message is not None:
                    self._ingest(registry, sub, message, stop)
        finally:
            sub.stop()
            registry.db.close()

    def _ingest(
        self,
        registry: Registry,
        sub: MqttSubscriber,
        message: ReceivedMessage,
        stop: threading.Event,
    ) -> None:
        """Record one message, retrying transient failures; ack once it is settled."""
        self.stats.received += 1
        delay = self.retry_base_s
        while True:
            try:
                self.record(registry, message)
                break
            except TRANSIENT_ERRORS as exc:
                self._retry_later(message, exc, delay)
            except Exception as exc:  # a bug must not lose the event: hold it, say so
                log.exception("unexpected error recording a message from %s", message.topic)
                self._retry_later(message, exc, delay)
            if stop.wait(delay):
                log.info(
                    "stopping with a message from %s not recorded: it stays unacked", message.topic
                )
                return
            delay = min(delay * 2, self.retry_cap_s)
        if not sub.ack(message):
            # The connection it came on dropped: the broker redelivers it, and
            # the (job_id, seq) dedupe turns the copy into a duplicate.
            log.debug("could not ack mid %d on %s (connection changed)", message.mid, message.topic)

    def _retry_later(self, message: ReceivedMessage, exc: Exception, delay: float) -> None:
        self.stats.retries += 1
        log.warning(
            "could not record a message from %s (retrying in %.2f s, not acked): %s",
            message.topic,
            delay,
            exc,
        )

    def record(self, registry: Registry, message: ReceivedMessage) -> Outcome:
        """Commit one message's event, or decide it never will be; raises only for
        transient failures (the caller retries those, unacknowledged)."""
        try:
            recorded = registry.record_event(message.payload, via="mqtt")
        except (DuplicateEvent, EventAfterTerminal) as exc:
            self.stats.duplicates += 1
            log.info("ignored a message from %s: %s", message.topic, exc)
            return "duplicate"
        except RegistryError as exc:  # malformed, forged, unknown job, illegal move
            self.stats.refused += 1
            log.warning("refused a message from %s: %s", message.topic, exc)
            return "refused"
        self.stats.recorded += 1
        if self.on_recorded is not None:
            try:
                self.on_recorded(recorded)
            except Exception:  # a display hook must not make a commit look failed
                log.exception("on_recorded hook failed")
        return "recorded"


def bridge_from_env(
    state_dir: Path | str,
    env: Mapping[str, str] | None = None,
    *,
    prefix: str = DEFAULT_PREFIX,
    busy_timeout_ms: int = BUSY_TIMEOUT_MS,
) -> IngestBridge | None:
    """The bridge for the broker named by MQTT_* (None: no broker, the SQLite bus alone)."""
    config = resolve_broker(os.environ if env is None else env, None)
    if config is None:
        return None
    return IngestBridge(state_dir, config, prefix=prefix, busy_timeout_ms=busy_timeout_ms)
