"""Sending an outbox's messages over MQTT until their consumer confirms them.

Two ways, both on connections of their own (a clean session: confirmations
are retained, so a new subscription gets the latest at once):

* ``deliver``: one message, as a publishing command's fast path. Subscribe
  to the stream's confirmations, publish, wait for the PUBACK, then wait a
  little for a confirmation that covers the message.
* ``OutboxFlusher``: a long-lived sender for everything a destination still
  holds. It sends what was never sent, re-sends everything unconfirmed after
  a reconnect or when a consumer says it started over (a new ``epoch``), and
  re-sends what stays unconfirmed with a backoff. It exits once the outbox is
  empty, or after ``max_run_s``.

Re-sending is always safe: the consumer deduplicates by position.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt

from bus.delivery_outbox import Confirmation, Outbox, OutboxMessage
from bus.errors import BrokerUnavailable, PublishNotAcknowledged, PublishRefused
from bus.mqtt_config import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    CONNECT_TIMEOUT_S,
    DEFAULT_ATTEMPTS,
    PUBACK_TIMEOUT_S,
    BrokerConfig,
    new_client_id,
    reason_is_failure,
)
from bus.mqtt_connect import check_fits, close_blocking, open_client, with_retries

log = logging.getLogger(__name__)

RESEND_AFTER_S = 5.0  # an unconfirmed message is sent again after this, doubling ...
RESEND_CAP_S = 300.0  # ... up to this
# A message the consumer reports missing (it has later ones) goes again this soon;
# one never sent this long after it was stored (its publisher died) goes too.
MISSING_RESEND_S = 1.0
POLL_S = 0.2


def deliver(
    config: BrokerConfig,
    message: OutboxMessage,
    confirm_topic: str,
    *,
    confirm_wait: float,
    attempts: int = DEFAULT_ATTEMPTS,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    puback_timeout: float = PUBACK_TIMEOUT_S,
    backoff_base: float = BACKOFF_BASE_S,
    backoff_cap: float = BACKOFF_CAP_S,
) -> Confirmation | None:
    """Publish ``message`` at QoS 1 and return after its PUBACK, with the newest
    confirmation of its stream seen by then (waiting up to ``confirm_wait``
    seconds for one that covers it). Errors as ``publish_once``'s."""
    client_id = new_client_id("orchestrate-out")
    seen: list[Confirmation] = []

    def attempt_once() -> None:
        client, connack = open_client(config, client_id, connect_timeout)
        acked: list[Any] = []

        def on_message(_c: mqtt.Client, _u: Any, incoming: mqtt.MQTTMessage) -> None:
            if incoming.topic == confirm_topic:
                confirmation = Confirmation.from_bytes(bytes(incoming.payload))
                if confirmation is not None:
                    seen.append(confirmation)

        client.on_message = on_message
        client.on_publish = lambda _c, _u, _mid, reason, _p: acked.append(reason)
        try:
            check_fits(config, connack, message.topic, message.payload)
            client.subscribe(confirm_topic, qos=1)  # the retained confirmation comes first
            client.publish(message.topic, message.payload, qos=1, retain=message.retain)
            _loop_until(client, config, lambda: bool(acked), puback_timeout, "PUBACK")
            if reason_is_failure(acked[0]):
                raise PublishRefused(f"broker refused the publish to {message.topic}: {acked[0]}")
            deadline = time.monotonic() + confirm_wait
            while time.monotonic() < deadline and not (seen and seen[-1].has(message.position)):
                if client.loop(timeout=0.02) not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN):
                    break  # the message is at the broker; a confirmation is a bonus
        finally:
            close_blocking(client)

    with_retries(config, attempt_once, attempts, backoff_base, backoff_cap)
    return seen[-1] if seen else None


def _loop_until(
    client: mqtt.Client, config: BrokerConfig, done: Any, timeout: float, what: str
) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() >= deadline:
            raise PublishNotAcknowledged(f"no {what} from {config.url} within {timeout:g} s")
        rc = client.loop(timeout=0.05)
        if rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN):
            raise BrokerUnavailable(f"broker {config.url} dropped the connection before {what}")


@dataclass
class FlushStats:
    """What a flusher did, for its log line."""

    sent: int = 0
    resent: int = 0
    confirmed: int = 0
    connections: int = 0
    left: int = 0


class OutboxFlusher:
    """Sends ``outbox``'s messages for ``config``'s broker until all are confirmed.

    >>> # OutboxFlusher(Outbox(path), config).run(threading.Event())  # -> messages left

    Only one flusher per outbox and destination should run (the caller holds a
    lock); more would only send more duplicates.
    """

    def __init__(
        self,
        outbox: Outbox,
        config: BrokerConfig,
        *,
        idle_exit_s: float = 2.0,
        max_run_s: float = 24 * 3600.0,
        resend_after_s: float = RESEND_AFTER_S,
        resend_cap_s: float = RESEND_CAP_S,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.outbox = outbox
        self.config = config
        self.destination = config.url
        self.idle_exit_s = idle_exit_s
        self.max_run_s = max_run_s
        self.resend_after_s = resend_after_s
        self.resend_cap_s = resend_cap_s
        self.connect_timeout = connect_timeout
        self.stats = FlushStats()
        self._client: mqtt.Client | None = None
        self._confirmations: queue.Queue[tuple[str, Confirmation]] = queue.Queue()
        self._reconnected = threading.Event()
        self._fatal: str | None = None
        self._subscribed: set[str] = set()
        self._epochs: dict[str, str] = {}
        self._latest: dict[str, Confirmation] = {}
        self._topics: dict[str, list[str]] = {}  # confirm topic -> its streams

    # -- paho's thread ------------------------------------------------------

    def _on_connect(self, _c: mqtt.Client, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        try:
            if reason_is_failure(reason):
                log.warning("flusher: %s refused the connection: %s", self.config.url, reason)
                if int(getattr(reason, "value", reason)) in {4, 5, 134, 135, 138, 140}:
                    self._fatal = f"{self.config.url} refused the login: {reason}"
                return
            self._reconnected.set()
        except Exception:  # never let an error kill paho's thread
            log.exception("flusher: error handling CONNACK")

    def _on_message(self, _c: mqtt.Client, _u: Any, incoming: mqtt.MQTTMessage) -> None:
        try:
            confirmation = Confirmation.from_bytes(bytes(incoming.payload))
            if confirmation is None:
                log.warning("flusher: malformed confirmation on %s", incoming.topic)
                return
            self._confirmations.put((incoming.topic, confirmation))
        except Exception:
            log.exception("flusher: error handling a confirmation")

    # -- the caller's thread ---------------------------------------------------

    def run(self, stop: threading.Event) -> int:
        """Flush until the outbox holds nothing for this destination, ``stop`` is
        set or ``max_run_s`` passes; returns how many messages are left."""
        started = time.monotonic()
        idle_since: float | None = None
        try:
            while not stop.is_set() and self._fatal is None:
                if time.monotonic() - started > self.max_run_s:
                    log.info("flusher: giving up after %.0f s", self.max_run_s)
                    break
                if self._client is None and not self._connect(stop, started + self.max_run_s):
                    continue
                self._step()
                if self.outbox.pending_count(self.destination) == 0:
                    idle_since = idle_since or time.monotonic()
                    if time.monotonic() - idle_since >= self.idle_exit_s:
                        break
                else:
                    idle_since = None
                stop.wait(POLL_S)
        finally:
            self._disconnect()
        if self._fatal is not None:
            log.warning("flusher: %s", self._fatal)
        self.stats.left = self.outbox.pending_count(self.destination)
        return self.stats.left

    def _connect(self, stop: threading.Event, deadline: float) -> bool:
        """The first connection (paho reconnects by itself after that), retried with
        backoff until ``deadline`` (monotonic); False if there was none by then."""
        attempt = 0
        while not stop.is_set() and time.monotonic() < deadline:
            attempt += 1
            try:
                client, _connack = open_client(
                    self.config, new_client_id("orchestrate-flush"), self.connect_timeout
                )
            except BrokerUnavailable as exc:
                delay = min(BACKOFF_BASE_S * 2 ** (attempt - 1), BACKOFF_CAP_S)
                log.info("flusher: %s; retrying in %.1f s", exc, delay)
                stop.wait(max(0.0, min(delay, deadline - time.monotonic())))
                continue
            client.on_connect = self._on_connect
            client.on_message = self._on_message
            client.reconnect_delay_set(1, int(BACKOFF_CAP_S))
            self._client = client
            self._reconnected.set()
            client.loop_start()
            return True
        return False

    def _disconnect(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            client.disconnect()
            client.loop_stop()

    def _step(self) -> None:
        """One round: subscriptions, confirmations, then whatever needs sending."""
        client = self._client
        assert client is not None
        resend_all = self._reconnected.is_set()
        if resend_all:
            self._reconnected.clear()
            self.stats.connections += 1
            self._subscribed.clear()
        streams = self.outbox.streams(self.destination)
        self._topics = {}
        for info in streams:
            self._topics.setdefault(info.confirm_topic, []).append(info.stream)
        new_topics = [topic for topic in self._topics if topic not in self._subscribed]
        if new_topics and client.is_connected():
            client.subscribe([(topic, 1) for topic in new_topics])
            self._subscribed.update(new_topics)
        restarted = self._apply_confirmations()
        now_ms = time.time_ns() // 1_000_000
        due = [
            message
            for message in self.outbox.pending(destination=self.destination)
            if resend_all or message.stream in restarted or self._is_due(message, now_ms)
        ]
        if due and client.is_connected():
            self._send(client, due)
            why = "connected" if resend_all else "consumer restarted" if restarted else "due"
            log.info("flusher: sent %d message(s) to %s (%s)", len(due), self.config.url, why)

    def _apply_confirmations(self) -> set[str]:
        """Apply what arrived; the streams whose consumer started over."""
        restarted: set[str] = set()
        while True:
            try:
                topic, confirmation = self._confirmations.get_nowait()
            except queue.Empty:
                return restarted
            for stream in self._topics.get(topic, ()):
                self.stats.confirmed += self.outbox.confirm(stream, confirmation)
                previous = self._epochs.get(stream)
                if confirmation.epoch and previous is not None and previous != confirmation.epoch:
                    restarted.add(stream)
                self._epochs[stream] = confirmation.epoch
                self._latest[stream] = confirmation

    def _is_due(self, message: OutboxMessage, now_ms: int) -> bool:
        if message.sent_ms is None:  # its publisher is sending it, or died first
            return now_ms - message.created_ms >= MISSING_RESEND_S * 1000
        latest = self._latest.get(message.stream)
        if latest is not None and message.position <= latest.through:
            # The consumer has later positions but not this one: it was lost.
            return now_ms - message.sent_ms >= MISSING_RESEND_S * 1000
        backoff = min(self.resend_after_s * 2.0 ** max(message.sends - 1, 0), self.resend_cap_s)
        return bool(now_ms - message.sent_ms >= backoff * 1000)

    def _send(self, client: mqtt.Client, messages: Iterable[OutboxMessage]) -> None:
        sent = []
        for message in messages:
            info = client.publish(message.topic, message.payload, qos=1, retain=message.retain)
            if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
                log.warning("flusher: could not queue %s: %s", message.topic, info.rc)
                continue
            sent.append(message)
            if message.sends:
                self.stats.resent += 1
            else:
                self.stats.sent += 1
        self.outbox.mark_sent(sent)
