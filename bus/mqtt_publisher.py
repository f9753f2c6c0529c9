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
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties

from bus.errors import (
    BrokerUnavailable,
    MqttError,
    MqttTlsError,
    PublishNotAcknowledged,
    PublishRefused,
)
from bus.mqtt_config import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    CONNECT_TIMEOUT_S,
    DEFAULT_ATTEMPTS,
    KEEPALIVE_S,
    PUBACK_TIMEOUT_S,
    BrokerConfig,
    check_connack,
    make_client,
    new_client_id,
    reason_is_failure,
    retry_delay,
    validate_publish_topic,
)

log = logging.getLogger(__name__)

# CONNACK reasons meaning "this broker does not speak MQTT 5": retry with 3.1.1.
_UNSUPPORTED_PROTOCOL = {1, 132}


class _UnsupportedProtocol(BrokerUnavailable):
    """CONNACK said "unsupported protocol version": reconnect with MQTT 3.1.1."""


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


def _connect(
    config: BrokerConfig,
    client: mqtt.Client,
    timeout: float,
    properties: Properties | None = None,
    clean_start: bool | Literal[3] = mqtt.MQTT_CLEAN_START_FIRST_ONLY,
) -> Any:
    """Open the socket and wait for CONNACK, driving paho's loop in this thread.

    Returns the CONNACK reason code; raises ``MqttTlsError``/``BrokerAuthError``
    for failures retrying cannot fix, ``BrokerUnavailable`` for the rest.
    """
    connack: list[Any] = []

    def on_connect(_c: mqtt.Client, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        connack.append(reason)

    client.on_connect = on_connect
    client.on_connect_fail = None
    try:
        client.connect(
            config.host,
            config.port,
            keepalive=KEEPALIVE_S,
            clean_start=clean_start,
            properties=properties,
        )
    except ssl.SSLError as exc:
        raise MqttTlsError(f"TLS handshake with {config.url} failed: {exc}") from exc
    except (OSError, ValueError) as exc:  # refused, unreachable, bad host name
        raise BrokerUnavailable(f"cannot reach broker {config.url}: {exc}") from exc
    try:
        deadline = time.monotonic() + timeout
        while not connack and time.monotonic() < deadline:
            rc = client.loop(timeout=0.05)
            if rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN) and not connack:
                raise BrokerUnavailable(
                    f"broker {config.url} closed the connection: {mqtt.error_string(rc)}"
                )
        if not connack:
            raise BrokerUnavailable(f"no CONNACK from {config.url} within {timeout:g} s")
        reason = connack[0]
        if int(getattr(reason, "value", reason)) in _UNSUPPORTED_PROTOCOL:
            raise _UnsupportedProtocol(f"broker {config.url} does not speak MQTT 5: {reason}")
        check_connack(config, reason)
        if reason_is_failure(reason):
            raise BrokerUnavailable(f"broker {config.url} refused the connection: {reason}")
    except BaseException:
        _close(client)  # no socket left behind by a failed attempt
        raise
    return reason


def _close(client: mqtt.Client) -> None:
    """Send DISCONNECT if we can and close the socket, from the calling thread."""
    client.disconnect()
    client.loop(timeout=0.01)


def _with_retries(
    config: BrokerConfig,
    attempt_once: Callable[[], None],
    attempts: int,
    backoff_base: float,
    backoff_cap: float,
) -> None:
    """Run ``attempt_once`` until it succeeds, retrying only ``BrokerUnavailable``
    and ``PublishNotAcknowledged`` (timeouts), with capped exponential backoff."""
    if attempts < 1:
        raise ValueError("attempts must be >= 1")
    last: MqttError | None = None
    for attempt in range(1, attempts + 1):
        try:
            attempt_once()
            return
        except PublishRefused:
            raise
        except (BrokerUnavailable, PublishNotAcknowledged) as exc:
            last = exc
            if attempt < attempts:
                delay = retry_delay(attempt, backoff_base, backoff_cap)
                log.info(
                    "attempt %d/%d failed (%s); retrying in %.2f s", attempt, attempts, exc, delay
                )
                time.sleep(delay)
    assert last is not None
    raise type(last)(f"{last} (gave up after {attempts} attempts)") from last


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

    _with_retries(config, attempt_once, attempts, backoff_base, backoff_cap)


def _publish_on_fresh_connection(
    config: BrokerConfig,
    client_id: str,
    topic: str,
    payload: bytes,
    retain: bool,
    connect_timeout: float,
    puback_timeout: float,
) -> None:
    client = make_client(config, client_id, protocol=mqtt.MQTTv5)
    try:
        _connect(config, client, connect_timeout)
    except _UnsupportedProtocol:
        client = make_client(config, client_id, protocol=mqtt.MQTTv311)
        _connect(config, client, connect_timeout)
    tracker = _AckTracker()
    client.on_publish = lambda _c, _u, mid, rc, _p: tracker.acked(
        mid, str(rc) if reason_is_failure(rc) else None
    )
    try:
        info = client.publish(topic, payload, qos=1, retain=retain)
        outcome = tracker.register(info.mid)
        deadline = time.monotonic() + puback_timeout
        while not outcome.done and time.monotonic() < deadline:
            rc = client.loop(timeout=0.05)
            if rc not in (mqtt.MQTT_ERR_SUCCESS, mqtt.MQTT_ERR_AGAIN):
                raise BrokerUnavailable(f"broker {config.url} dropped the connection before PUBACK")
        PublishReceipt(topic, info.mid, outcome, tracker).wait(timeout=0)
    finally:
        _close(client)


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
        self._tracker = _AckTracker()
        self._publish_lock = threading.Lock()

    def connect(self) -> None:
        """Connect (retrying an unreachable broker) and start paho's network thread."""
        if self._client is not None:
            return

        def attempt_once() -> None:
            client = make_client(self.config, self.client_id, max_inflight=self.max_inflight)
            try:
                _connect(self.config, client, self.connect_timeout)
            except _UnsupportedProtocol:
                client = make_client(
                    self.config,
                    self.client_id,
                    protocol=mqtt.MQTTv311,
                    max_inflight=self.max_inflight,
                )
                _connect(self.config, client, self.connect_timeout)
            self._client = client

        _with_retries(self.config, attempt_once, self.attempts, self.backoff_base, self.backoff_cap)
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
        assert client is not None
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
