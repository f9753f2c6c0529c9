"""Verified job events for a waiter, from MQTT (one session per broker) and the SQLite bus.

``orchestrate subscribe`` follows a set of jobs wherever their events travel:
a job with a broker over MQTT (persistent session, ack after the consumer
has handled the event), a job without one on the local SQLite bus. Every
MQTT payload and bus message is checked (``registry.event_trust``: the job's
topic, its auth_token, its attempt) before it reaches the consumer; anything
else is dropped with a logged reason.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import logging
import os
import queue
import socket
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from bus.messages import Bus
from bus.mqtt import BrokerConfig, ConnectionState, MqttSubscriber, ReceivedMessage
from bus.mqtt_config import new_client_id
from bus.mqtt_subscriber import DEFAULT_SESSION_EXPIRY_S
from registry.errors import EventRejected, InvalidEvent
from registry.event_trust import WatchedJob, verify_payload
from registry.events import Event
from registry.job_outcome import bus_events

log = logging.getLogger(__name__)

POLL_S = 0.2


class ClientIdLock:
    """Which process on this host holds a client id (a lock file per user and id).

    A broker allows one connection per client id: a second subscriber of the same
    jobs (two people waiting on one job) took the session over, was taken over in
    turn, and each missed events in between. The holder keeps the durable session;
    the others subscribe under ids of their own. The lock goes with its process."""

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self._handle: TextIO | None = None

    def acquire(self) -> bool:
        """True when this process holds the id now (or no lock file can be made, in
        which case everyone uses it, as before locking)."""
        directory = Path(tempfile.gettempdir()) / f"orchestrate-{os.getuid()}"
        try:
            directory.mkdir(mode=0o700, exist_ok=True)
            handle = (directory / f"{self.client_id}.lock").open("a", encoding="utf-8")
        except OSError:
            return True
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._handle = handle
        return True

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the file releases the lock
            self._handle = None


def stable_client_id(kind: str, *parts: str, host: str | None = None) -> str:
    """A client id that is the same on every run for the same (host, parts), so
    the broker resumes the session; 23 characters at most (MQTT 3.1.1's limit).

    >>> a = stable_client_id("sub", "ab12cd34", host="h1")
    >>> (a == stable_client_id("sub", "ab12cd34", host="h1"), a == stable_client_id("sub", "x"))
    (True, False)
    >>> len(stable_client_id("sub", "ab12cd34", "00ff00ff", host="h1")) <= 23
    True
    """
    seed = "\0".join([host or socket.gethostname(), *parts])
    digest = hashlib.sha256(seed.encode("utf-8")).hexdigest()
    prefix = f"orch-{kind}-"
    return prefix + digest[: 23 - len(prefix)]


@dataclass(frozen=True)
class FedEvent:
    """A verified event handed to the consumer; call ``ack`` once it is handled
    (for MQTT, the PUBACK goes to the broker only then)."""

    event: Event
    source: str
    ack: Callable[[], object] = field(repr=False, default=lambda: None)


class JobEventFeed:
    """Merge the events of ``jobs`` from their brokers and the bus into one queue.

    >>> # feed = JobEventFeed(jobs, bus_factory=lambda: Bus(BusDB(state_dir)))
    >>> # with feed:
    >>> #     while (fed := feed.get(0.2)) is not None: waiter.offer(fed.event); fed.ack()

    One ``MqttSubscriber`` per distinct broker, with a client id stable per
    (host, job set) so that a restarted subscriber (or broker) resumes the
    same session; each has a thread that verifies what arrives. Jobs without
    a broker are read from the bus, checked the same way.
    """

    def __init__(
        self,
        jobs: Sequence[WatchedJob],
        *,
        bus_factory: Callable[[], Bus] | None = None,
        host: str | None = None,
        reconnect_max_s: int = 30,
    ) -> None:
        if not jobs:
            raise ValueError("nothing to follow")
        self.jobs = {job.job_id: job for job in jobs}
        self.bus_factory = bus_factory
        self._queue: queue.Queue[FedEvent] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.subscribers: list[MqttSubscriber] = []
        by_broker: dict[BrokerConfig, list[WatchedJob]] = {}
        for job in jobs:
            if job.broker is not None:
                by_broker.setdefault(job.broker, []).append(job)
        ids = sorted(self.jobs)
        self._locks: list[ClientIdLock] = []
        for config, group in by_broker.items():
            topics = sorted({job.topic for job in group})
            user = str(os.getuid())  # two users here following one job: two sessions
            lock = ClientIdLock(stable_client_id("sub", config.url, user, *ids, host=host))
            if lock.acquire():
                self._locks.append(lock)
                client_id, expiry = lock.client_id, DEFAULT_SESSION_EXPIRY_S
            else:  # another subscriber of these jobs runs here and holds the session
                client_id, expiry = new_client_id("orch-sub"), 0
            self.subscribers.append(
                MqttSubscriber(
                    config,
                    topics,
                    client_id=client_id,
                    session_expiry_s=expiry,
                    manual_ack=True,
                    reconnect_max_s=reconnect_max_s,
                )
            )
        self.bus_jobs = sorted(job.job_id for job in jobs if job.broker is None)
        if self.bus_jobs and bus_factory is None:
            raise ValueError("jobs without a broker need a bus to follow")
        self.dropped = 0
        """How many MQTT messages were refused (forged, malformed, unexpected)."""

    def start(self) -> None:
        """Connect every subscriber and start the reader threads; returns at once."""
        for sub in self.subscribers:
            sub.start()
            self._spawn(f"mqtt {sub.config.url}", functools.partial(self._read_mqtt, sub))
        if self.bus_jobs:
            self._spawn("sqlite bus", self._read_bus)

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=f"feed {name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def stop(self) -> None:
        """Stop reading and disconnect; the brokers keep the sessions."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        for sub in self.subscribers:
            sub.stop()

    def __enter__(self) -> JobEventFeed:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def get(self, timeout: float) -> FedEvent | None:
        """The next verified event, or None if none came within ``timeout`` seconds."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    @property
    def connected(self) -> bool:
        """Every subscriber is connected and subscribed (True with none: bus only)."""
        return all(sub.state is ConnectionState.CONNECTED for sub in self.subscribers)

    def wait_connected(self, timeout: float) -> bool:
        """True once every subscriber is connected and subscribed."""
        return all(sub.wait_connected(timeout) for sub in self.subscribers)

    def forget_sessions(self, timeout: float = 2.0) -> None:
        """End the broker sessions once waiting is over for good.

        A resumed session's subscription already exists, so the broker would
        not send the retained terminal event again (retainHandling=1): a later
        ``subscribe`` of the same jobs must start from a fresh session. Done by
        resuming each session with a SessionExpiryInterval of 0 (it then ends
        at disconnect). Best effort: a broker that is gone keeps the session.
        """
        for sub in self.subscribers:
            if sub.session_expiry_s == 0:
                continue  # a session of our own that ended when we disconnected
            closer = MqttSubscriber(
                sub.config, sub.topics, client_id=sub.client_id, session_expiry_s=0, protocol="5"
            )
            closer.start()
            try:
                if not closer.wait_connected(timeout):
                    log.info("could not end session %s: broker unreachable", sub.client_id)
            finally:
                closer.stop()

    def close(self) -> None:
        """Let another subscriber of these jobs on this host take the sessions over
        (after ``stop`` and ``forget_sessions``, which still use them)."""
        for lock in self._locks:
            lock.release()
        self._locks.clear()

    # -- reader threads --------------------------------------------------------

    def _read_mqtt(self, sub: MqttSubscriber) -> None:
        while not self._stop.is_set():
            message = sub.get(timeout=POLL_S)
            if message is not None:
                self._handle(sub, message)

    def _handle(self, sub: MqttSubscriber, message: ReceivedMessage) -> None:
        try:
            event = verify_payload(message.payload, self.jobs, topic=message.topic)
        except (InvalidEvent, EventRejected) as exc:
            self.dropped += 1
            log.warning("dropped message on %s: %s", message.topic, exc)
            sub.ack(message)  # it will never verify: do not have it redelivered
            return
        self._queue.put(FedEvent(event, f"mqtt {message.topic}", lambda: sub.ack(message)))

    def _read_bus(self) -> None:
        bus: Bus | None = None
        try:
            assert self.bus_factory is not None
            bus = self.bus_factory()
            on_bus = {job_id: self.jobs[job_id] for job_id in self.bus_jobs}
            for event in bus_events(bus, on_bus, stop=self._stop.is_set):
                self._queue.put(FedEvent(event, "sqlite bus"))
        except Exception:  # the consumer then times out rather than hangs; say why
            log.exception("stopped following the SQLite bus")
        finally:
            if bus is not None:
                bus.db.close()
