"""The ingest bridge: job events arriving over MQTT recorded into the registry exactly once.

Subscribes to ``<prefix>/+/events`` under a stable client id (a persistent
session: events published while the bridge is down wait at the broker) with
manual acknowledgement, and hands what has arrived to ``Registry.record_events``:
whatever already waits (up to ``batch_max``) is one transaction, one commit
(group commit), each event still refused or recorded on its own.
The PUBACK goes to the broker only after the transaction committed, or after
a definitive refusal (malformed, forged, unknown job, on another job's
topic, duplicate, after the end): a crash between receipt and commit means
a redelivery, never a loss.
QoS 1 redeliveries and publisher retries are absorbed by the registry's
(job_id, seq) dedupe, so each event lands in the bus once.
It also takes the fleet's node presence (``<prefix>/nodes/+/presence``) into the
nodes table (``registry/nodes.py``), the events of jobs placed on nodes
(``<prefix>/nodes/+/jobs/+/events``) and the nodes' confirmations of commands
(``<prefix>/nodes/+/confirms``), in ``registry/fleet_feed.py``.

Transient failures (the database locked or unwritable) are not acknowledged:
the same batch is retried with backoff before any later message, keeping the
job's events in order. WAL checkpoints run beside the commits, in a thread
of their own (``Checkpointer``), so no commit pays for one. The bridge knows
no Textual: the TUI runs ``run`` in a worker thread and reads ``state`` and
``stats`` for its header.
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

from bus.db import BUSY_TIMEOUT_MS, connect
from bus.errors import BusError
from bus.fleet_topics import all_confirms, all_node_job_events, all_presence
from bus.mqtt import BrokerConfig, ConnectionState, MqttSubscriber, ReceivedMessage, resolve_broker
from registry.delivery_confirmer import Confirmer
from registry.errors import DuplicateEvent, EventAfterTerminal, RegistryError
from registry.fleet_commands import SentCommands, control_key
from registry.fleet_feed import confirmations, node_events, take_presence
from registry.jobs import Recorded, Registry
from registry.mqtt_source import ClientIdLock, stable_client_id
from registry.placement import PlacementStore
from registry.records import DEFAULT_PREFIX

log = logging.getLogger(__name__)

STANDBY_RETRY_S = 1.0  # how often a waiting bridge tries to take over
HeaderState = Literal["connected", "reconnecting", "standby", "none"]
Outcome = Literal["recorded", "duplicate", "refused"]
# Errors retrying can fix: the database locked by a long writer, a disk or a
# permission problem being repaired. Anything the registry refuses is final.
# Group commit: at most this many already-received messages share one transaction.
DEFAULT_BATCH_MAX = 200
# WAL checkpoints: a background thread copies the WAL back every interval
# (PASSIVE, beside the commits); once the WAL holds RESTART pages it finishes
# the copy holding the bridge's write lock, so the next commit starts the WAL
# over from its top (a short pause every few thousand pages instead of two
# fsyncs inside every ~1000th page's commit). The bridge's own connection
# checkpoints only past AUTOCHECKPOINT pages, a safety net.
CHECKPOINT_INTERVAL_S = 0.2
WAL_RESTART_PAGES = 4_000  # 16 MB at 4 KiB pages
WAL_AUTOCHECKPOINT_PAGES = 2 * WAL_RESTART_PAGES
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (BusError, sqlite3.Error, OSError)


@dataclass
class IngestStats:
    """Counters for the TUI header and the command's summary."""

    received: int = 0
    recorded: int = 0
    duplicates: int = 0
    refused: int = 0
    retries: int = 0
    commits: int = 0  # transactions: fewer than received when messages were grouped


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
        batch_max: int = DEFAULT_BATCH_MAX,
        checkpoint_interval_s: float = CHECKPOINT_INTERVAL_S,
    ) -> None:
        """``client_id`` defaults to one stable per (host, state dir, prefix), so a
        restarted bridge resumes its session. ``on_recorded`` is called (in the
        bridge's thread) after each commit. ``batch_max`` bounds a group commit;
        ``checkpoint_interval_s`` = 0 leaves checkpoints to SQLite's own (in
        the commit that crosses 1000 WAL pages)."""
        if batch_max < 1:
            raise ValueError(f"batch_max must be >= 1, not {batch_max}")
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
        self.batch_max = batch_max
        self.checkpoint_interval_s = checkpoint_interval_s
        self._write_lock = threading.Lock()  # held by a commit, or a WAL restart
        self.stats = IngestStats()
        self._subscriber: MqttSubscriber | None = None
        self._standby = False

    @property
    def state(self) -> HeaderState:
        """What the TUI header shows: connected, reconnecting (or still connecting),
        standby (another bridge of this state dir ingests), none."""
        if self._standby:
            return "standby"
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

        One bridge per state dir ingests: a second (two control rooms open on one
        state dir) would share the client id, and the broker would hand the session
        back and forth between them. It waits instead, and takes over when the
        first one stops.
        """
        lock = ClientIdLock(self.client_id)
        while not lock.acquire():
            self._standby = True
            if stop.wait(STANDBY_RETRY_S):
                self._standby = False
                return
        self._standby = False
        try:
            self._run(stop)
        finally:
            lock.release()

    def _run(self, stop: threading.Event) -> None:
        registry = Registry.open(
            self.state_dir, busy_timeout_ms=self.busy_timeout_ms, audited=self.audited
        )
        checkpointer: Checkpointer | None = None
        if self.checkpoint_interval_s > 0:
            # Our commits no longer checkpoint (two fsyncs each time the WAL
            # passes 1000 pages); a thread with its own connection does, passively.
            registry.db.conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
            checkpointer = Checkpointer(
                registry.db.path, self.checkpoint_interval_s, self._write_lock
            )
            checkpointer.start()
        placements = PlacementStore(registry.bus)
        fleet_key = control_key(self.state_dir)  # signs the take commands sent to nodes
        sent_commands = SentCommands(registry.db)
        sub = MqttSubscriber(
            self.config,
            [
                self.topic,
                all_presence(self.prefix),
                all_node_job_events(self.prefix),
                all_confirms(self.prefix),
            ],
            client_id=self.client_id,
            manual_ack=True,
            reconnect_max_s=self.reconnect_max_s,
        )
        self._subscriber = sub
        # End-to-end delivery: tell publishers what is committed (registry.delivery_confirmer).
        confirmer = Confirmer(lambda topic, payload: sub.publish(topic, payload, retain=True))
        announced = 0
        sub.start()
        log.info("ingesting %s from %s as %s", self.topic, self.config.url, self.client_id)
        try:
            while not stop.is_set():
                if sub.connected_count != announced:
                    announced = sub.connected_count
                    confirmer.announce(registry)
                due = confirmer.due_in()
                message = sub.get(timeout=0.1 if due is None else min(due, 0.1))
                if message is None:
                    confirmer.flush(registry)
                    continue
                batch = [message]
                # Group commit: whatever already waits joins this transaction.
                while len(batch) < self.batch_max and (more := sub.get(timeout=0)) is not None:
                    batch.append(more)
                batch = take_presence(placements, self.prefix, sub, batch, fleet_key)
                batch = node_events(placements, self.prefix, sub, batch)
                batch = confirmations(sent_commands, self.prefix, sub, batch)
                if batch:
                    self._ingest(registry, sub, batch, stop, confirmer)
        finally:
            sub.stop()
            if checkpointer is not None:
                checkpointer.stop()
            registry.db.close()

    def _ingest(
        self,
        registry: Registry,
        sub: MqttSubscriber,
        batch: list[ReceivedMessage],
        stop: threading.Event,
        confirmer: Confirmer | None = None,
    ) -> None:
        """Record a batch in one transaction, retrying transient failures (the
        whole batch, in order, none acked); ack each message once it is settled,
        then confirm to the publishers what the registry now holds."""
        self.stats.received += len(batch)
        delay = self.retry_base_s
        while True:
            try:
                with self._write_lock:
                    verdicts = registry.record_events(
                        [m.payload for m in batch], via="mqtt", topics=[m.topic for m in batch]
                    )
                self.stats.commits += 1
                break
            except TRANSIENT_ERRORS as exc:
                self._retry_later(batch, exc, delay)
            except Exception as exc:  # a bug must not lose the events: hold them, say so
                log.exception("unexpected error recording %d message(s)", len(batch))
                self._retry_later(batch, exc, delay)
            if stop.wait(delay):
                log.info("stopping with %d message(s) not recorded: they stay unacked", len(batch))
                return
            delay = min(delay * 2, self.retry_cap_s)
        for message, verdict in zip(batch, verdicts, strict=True):
            self._settle(message, verdict)
        for message in batch:
            if not sub.ack(message):
                # The connection it came on dropped: the broker redelivers it, and
                # the (job_id, seq) dedupe turns the copy into a duplicate.
                log.debug(
                    "could not ack mid %d on %s (connection changed)", message.mid, message.topic
                )
        if confirmer is not None:
            arrivals = [(message.topic, message.payload) for message in batch]
            confirmer.after_commit(registry, arrivals, verdicts)

    def _retry_later(self, batch: list[ReceivedMessage], exc: Exception, delay: float) -> None:
        self.stats.retries += 1
        log.warning(
            "could not record %d message(s) from %s (retrying in %.2f s, not acked): %s",
            len(batch),
            batch[0].topic,
            delay,
            exc,
        )

    def record(self, registry: Registry, message: ReceivedMessage) -> Outcome:
        """Commit one message's event, or decide it never will be; raises only for
        transient failures (the caller retries those, unacknowledged)."""
        try:
            verdict: Recorded | RegistryError = registry.record_event(
                message.payload, via="mqtt", topic=message.topic
            )
        except RegistryError as exc:
            verdict = exc
        return self._settle(message, verdict)

    def _settle(self, message: ReceivedMessage, verdict: Recorded | RegistryError) -> Outcome:
        """Count and log one committed verdict; run the display hook for a recorded one."""
        if isinstance(verdict, (DuplicateEvent, EventAfterTerminal)):
            self.stats.duplicates += 1
            log.info("ignored a message from %s: %s", message.topic, verdict)
            return "duplicate"
        if isinstance(verdict, RegistryError):  # malformed, forged, unknown job, illegal move
            self.stats.refused += 1
            log.warning("refused a message from %s: %s", message.topic, verdict)
            return "refused"
        self.stats.recorded += 1
        if self.on_recorded is not None:
            try:
                self.on_recorded(verdict)
            except Exception:  # a display hook must not make a commit look failed
                log.exception("on_recorded hook failed")
        return "recorded"


class Checkpointer:
    """WAL checkpoints from a thread with its own connection, off the commit path.

    Every ``interval_s`` a PASSIVE checkpoint copies what the WAL holds back
    into the database (its fsyncs beside the bridge's commits, not inside
    one). A WAL is only started over from its top when a writer begins with
    everything copied, which a steady stream of commits never allows: so once
    it holds ``restart_pages``, the last few pages are copied while holding
    ``writer_lock`` (the bridge's commits wait that long), bounding the file.
    """

    def __init__(
        self,
        db_path: Path,
        interval_s: float,
        writer_lock: threading.Lock,
        restart_pages: int = WAL_RESTART_PAGES,
    ) -> None:
        self.db_path = db_path
        self.interval_s = interval_s
        self.writer_lock = writer_lock
        self.restart_pages = restart_pages
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)

    def start(self) -> None:
        """Begin checkpointing in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the checkpoint in progress, if any."""
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        try:
            conn = connect(self.db_path)
        except (BusError, sqlite3.Error) as exc:
            log.warning("no background checkpoints (%s): commits checkpoint as usual", exc)
            return
        try:
            while not self._stop.wait(self.interval_s):
                try:
                    self.checkpoint(conn)
                except sqlite3.Error as exc:  # busy or a disk problem: try again next time
                    log.debug("background checkpoint failed: %s", exc)
        finally:
            conn.close()

    def checkpoint(self, conn: sqlite3.Connection) -> int:
        """One round; returns the WAL's pages (frames) as the round found them."""
        _busy, frames, _copied = conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        if frames >= self.restart_pages:
            with self.writer_lock:  # no commit in between: the next one restarts the WAL
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(frames)


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
