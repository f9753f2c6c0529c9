"""Publishing bytes to an MQTT topic at QoS 1: a persistent publisher and a one-shot call.

Both wait for CONNACK (10 s) and PUBACK (5 s) and raise a typed ``MqttError``
with a one-line message; neither knows what a job is.

``publish_once`` is the agent's path (one event per process): it opens a
fresh connection per attempt, retries unreachable brokers with backoff
min(0.5 * 2^(n-1), 8) s, and drives paho's loop in the calling thread, so it
costs no thread start. ``MqttPublisher`` keeps one connection for
throughput and pipelines up to ``max_inflight`` unacknowledged messages.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import paho.mqtt.client as mqtt

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
    validate_publish_topic,
)
from bus.mqtt_connect import Connack, check_fits, close_blocking, open_client, with_retries

log = logging.getLogger(__name__)


@dataclass
class _Outcome:
    """What became of one PUBLISH: set by paho's thread, read by the caller."""

    done: bool = False
    failure: str | None = None


class _AckTracker:
    """Matches PUBACKs to the publishes waiting for them, by message id.

    One condition variable for all messages (no Event per publish: it showed
    up in the throughput numbers). A PUBACK can be handled by paho's thread
    before ``publish()`` has returned the mid to us, so early acks are parked
    until the mid is registered.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: dict[int, _Outcome] = {}
        self._early: dict[int, str | None] = {}
        self._sleepers = 0

    def register(self, mid: int) -> _Outcome:
        outcome = _Outcome()
        with self._cond:
            if mid in self._early:
                outcome.failure = self._early.pop(mid)
                outcome.done = True
            else:
                self._waiting[mid] = outcome
        return outcome

    def acked(self, mid: int, failure: str | None) -> None:
        with self._cond:
            outcome = self._waiting.pop(mid, None)
            if outcome is None:
                self._early[mid] = failure
                return
            outcome.failure = failure
            outcome.done = True
            if self._sleepers:
                self._cond.notify_all()

    def wait(self, outcome: _Outcome, timeout: float) -> bool:
        """True once ``outcome`` is done; False after ``timeout`` seconds."""
        if outcome.done:
            return True
        with self._cond:
            self._sleepers += 1
            try:
                return self._cond.wait_for(lambda: outcome.done, timeout)
            finally:
                self._sleepers -= 1

    def outstanding(self) -> list[_Outcome]:
        with self._cond:
            return list(self._waiting.values())


@dataclass
class PublishReceipt:
    """A QoS 1 message handed to paho; ``wait()`` blocks until its PUBACK."""

    topic: str
    mid: int
    _outcome: _Outcome
    _tracker: _AckTracker

    def wait(self, timeout: float = PUBACK_TIMEOUT_S) -> None:
        """Return once the broker acknowledged; raise ``PublishNotAcknowledged``
        on timeout, ``PublishRefused`` when the PUBACK reports a failure (MQTT 5)."""
        if not self._tracker.wait(self._outcome, timeout):
            raise PublishNotAcknowledged(f"no PUBACK for {self.topic} within {timeout:g} s")
        if self._outcome.failure is not None:
            raise PublishRefused(
                f"broker refused the publish to {self.topic}: {self._outcome.failure}"
            )

    @property
    def acknowledged(self) -> bool:
        return self._outcome.done and self._outcome.failure is None


def publish_once(
    config: BrokerConfig,
    topic: str,
    payload: bytes,
    retain: bool = False,
    attempts: int = DEFAULT_ATTEMPTS,
    *,
    client_id: str | None = None,
    connect_timeout: float = CONNECT_TIMEOUT_S,
    puback_timeout: float = PUBACK_TIMEOUT_S,
    backoff_base: float = BACKOFF_BASE_S,
    backoff_cap: float = BACKOFF_CAP_S,
) -> None:
    """Publish one QoS 1 message on a fresh connection and return after its PUBACK.

    Each attempt connects (CONNACK within ``connect_timeout``), publishes, waits
    for PUBACK (``puback_timeout``) and disconnects; an unreachable broker or a
    missing ack is retried ``attempts`` times in all. Raises
    ``BrokerUnavailable``/``PublishNotAcknowledged`` after the last attempt,
    ``BrokerAuthError``/``MqttTlsError`` at once, ``InvalidTopic`` before trying.
    A retried publish may reach subscribers twice: consumers dedupe.
    """
    validate_publish_topic(topic)
    cid = client_id or new_client_id("orchestrate-pub")

    def attempt_once() -> None:
        _publish_on_fresh_connection(
            config, cid, topic, payload, retain, connect_timeout, puback_timeout
        )

    with_retries(config, attempt_once, attempts, backoff_base, backoff_cap)


def _publish_on_fresh_connection(
    config: BrokerConfig,
    client_id: str,
    topic: str,
    payload: bytes,
    retain: bool,
    connect_timeout: float,
    puback_timeout: float,
) -> None:
    client, connack = open_client(config, client_id, connect_timeout)
    tracker = _AckTracker()
    client.on_publish = lambda _c, _u, mid, rc, _p: tracker.acked(
        mid, str(rc) if reason_is_failure(rc) else None
    )
    try:
        check_fits(config, connack, topic, payload)
        info = client.publish(topic, payload, qos=1, retain=retain)
        outcome = tracker.register(info.mid)
        deadline = time.monotonic() + puback_timeout
        while not outcome.done and time.monotonic() < deadline:
            rc = client.loop(timeout=0.05)
            if rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN):
                raise BrokerUnavailable(f"broker {config.url} dropped the connection before PUBACK")
        PublishReceipt(topic, info.mid, outcome, tracker).wait(timeout=0)
    finally:
        close_blocking(client)


class MqttPublisher:
    """One persistent QoS 1 connection for publishing many messages.

    >>> # with MqttPublisher(config) as pub:
    >>> #     pub.publish("jobs/ab12cd34/events", b"{}")          # waits for PUBACK
    >>> #     r = pub.publish("t", b"x", wait=False); pub.flush()  # pipelined

    paho's network thread reconnects by itself if the connection drops;
    unacknowledged QoS 1 messages are re-sent then, so ``wait``/``flush`` may
    still succeed after a blip (and subscribers may see duplicates).
    """

    def __init__(
        self,
        config: BrokerConfig,
        *,
        client_id: str | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        puback_timeout: float = PUBACK_TIMEOUT_S,
        max_inflight: int = 20,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_base: float = BACKOFF_BASE_S,
        backoff_cap: float = BACKOFF_CAP_S,
    ) -> None:
        self.config = config
        self.client_id = client_id or new_client_id("orchestrate-pub")
        self.connect_timeout = connect_timeout
        self.puback_timeout = puback_timeout
        self.max_inflight = max_inflight
        self.attempts = attempts
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self._client: mqtt.Client | None = None
        self._connack: Connack | None = None
        self._tracker = _AckTracker()
        self._publish_lock = threading.Lock()

    def connect(self) -> None:
        """Connect (retrying an unreachable broker) and start paho's network thread."""
        if self._client is not None:
            return

        def attempt_once() -> None:
            self._client, self._connack = open_client(
                self.config, self.client_id, self.connect_timeout, max_inflight=self.max_inflight
            )

        with_retries(self.config, attempt_once, self.attempts, self.backoff_base, self.backoff_cap)
        assert self._client is not None
        self._client.on_publish = self._on_publish
        self._client.on_connect = self._on_reconnect
        self._client.loop_start()

    def _on_publish(self, _c: mqtt.Client, _u: Any, mid: int, rc: Any, _p: Any) -> None:
        try:
            self._tracker.acked(mid, str(rc) if reason_is_failure(rc) else None)
        except Exception:  # never let an error kill paho's thread
            log.exception("error recording PUBACK %s", mid)

    def _on_reconnect(self, _c: mqtt.Client, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        log.info("publisher %s reconnected to %s: %s", self.client_id, self.config.url, reason)

    @property
    def connected(self) -> bool:
        return self._client is not None and self._client.is_connected()

    def publish(
        self, topic: str, payload: bytes, *, retain: bool = False, wait: bool = True
    ) -> PublishReceipt:
        """Send ``payload`` at QoS 1. With ``wait`` (default) return after its
        PUBACK or raise ``PublishNotAcknowledged``; with ``wait=False`` return
        the receipt at once (pipelining: call ``flush()`` or ``receipt.wait()``)."""
        validate_publish_topic(topic)
        self.connect()
        client = self._client
        assert client is not None and self._connack is not None
        check_fits(self.config, self._connack, topic, payload)
        with self._publish_lock:
            info = client.publish(topic, payload, qos=1, retain=retain)
            if info.rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_NO_CONN):
                # NO_CONN still queues a QoS 1 message, sent on reconnect.
                raise PublishNotAcknowledged(
                    f"paho could not queue the publish to {topic}: {mqtt.error_string(info.rc)}"
                )
            outcome = self._tracker.register(info.mid)
            receipt = PublishReceipt(topic, info.mid, outcome, self._tracker)
        if wait:
            receipt.wait(self.puback_timeout)
        return receipt

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every publish sent so far is acknowledged (``timeout``
        defaults to ``puback_timeout`` per wait) or raise ``PublishNotAcknowledged``."""
        per_wait = self.puback_timeout if timeout is None else timeout
        for outcome in self._tracker.outstanding():
            if not self._tracker.wait(outcome, per_wait):
                raise PublishNotAcknowledged(
                    f"messages to {self.config.url} still unacknowledged after {per_wait:g} s"
                )

    def close(self) -> None:
        """Disconnect cleanly and stop the network thread (idempotent)."""
        client, self._client = self._client, None
        if client is not None:
            client.disconnect()
            client.loop_stop()

    def __enter__(self) -> MqttPublisher:
        self.connect()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
