"""A long-lived MQTT subscriber: persistent session, paho's own reconnect, a queue.

paho's network thread only turns packets into ``ReceivedMessage`` values on a
``queue.Queue``; the consumer takes them with ``get()`` in its own thread and,
with ``manual_ack=True``, acknowledges each one only after it has committed
it, so a crash between receipt and commit means a redelivery, not a loss.

The session survives both sides going away: MQTT 5 with ``clean_start=False``
and a ``SessionExpiryInterval`` (both are needed, see FIELD-NOTES), or MQTT
3.1.1 with ``clean_session=False`` for brokers without MQTT 5. It knows topics
and bytes only; deduplication (QoS 1 delivers at least once) is the caller's.
"""

from __future__ import annotations

import enum
import logging
import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from bus.mqtt_config import (
    KEEPALIVE_S,
    BrokerConfig,
    make_client,
    new_client_id,
    reason_is_failure,
)

log = logging.getLogger(__name__)

DEFAULT_SESSION_EXPIRY_S = 7 * 24 * 3600
_UNSUPPORTED_PROTOCOL = {1, 132}


class ConnectionState(enum.Enum):
    """What the TUI header shows for a subscriber."""

    NONE = "none"  # not started, or stopped
    CONNECTING = "connecting"  # started, never connected yet
    CONNECTED = "connected"  # connected and subscribed: messages flow
    RECONNECTING = "reconnecting"  # lost the broker; paho is retrying with backoff


@dataclass(frozen=True)
class ReceivedMessage:
    """One PUBLISH as it came off the wire.

    ``retain`` is True for a retained copy sent on subscribe; ``duplicate`` is
    the DUP flag (a redelivery). ``mid``/``connection`` identify it for ``ack``.
    """

    topic: str
    payload: bytes
    qos: int
    retain: bool
    duplicate: bool
    mid: int
    connection: int = field(repr=False)


class MqttSubscriber:
    """Subscribe to ``topics`` under a durable ``client_id`` and queue what arrives.

    >>> # sub = MqttSubscriber(config, ["jobs/+/events"], client_id="control-room")
    >>> # sub.start(); sub.wait_connected(10)
    >>> # while (msg := sub.get(timeout=1.0)) is not None:
    >>> #     commit(msg.payload); sub.ack(msg)    # with manual_ack=True

    The same ``client_id`` in a later process resumes the session: messages
    published while nobody listened are delivered then (the broker needs
    ``max_queued_messages`` lifted; ``bus.broker`` writes that config).
    A ``client_id`` should always subscribe to the same topics: on MQTT 3.1.1
    a resumed session is trusted to hold them (re-subscribing would replay
    retained messages); MQTT 5 re-subscribes with ``retainHandling=1``.
    """

    def __init__(
        self,
        config: BrokerConfig,
        topics: Sequence[str],
        *,
        client_id: str | None = None,
        qos: int = 1,
        session_expiry_s: int = DEFAULT_SESSION_EXPIRY_S,
        manual_ack: bool = False,
        protocol: str = "auto",
        reconnect_min_s: int = 1,
        reconnect_max_s: int = 30,
    ) -> None:
        """``protocol``: "auto" (MQTT 5, falling back to 3.1.1), "5" or "3.1.1".
        ``client_id`` must be stable across runs for the session to persist."""
        if not topics:
            raise ValueError("subscribe to at least one topic")
        if protocol not in ("auto", "5", "3.1.1"):
            raise ValueError(f"protocol must be auto, 5 or 3.1.1, not {protocol!r}")
        self.config = config
        self.topics = tuple(topics)
        self.client_id = client_id or new_client_id("orchestrate-sub")
        self.qos = qos
        self.session_expiry_s = session_expiry_s
        self.manual_ack = manual_ack
        self.reconnect_min_s = reconnect_min_s
        self.reconnect_max_s = reconnect_max_s
        v311 = protocol == "3.1.1"
        self._protocol = MQTTProtocolVersion.MQTTv311 if v311 else MQTTProtocolVersion.MQTTv5
        self._may_fall_back = protocol == "auto"
        self._messages: queue.Queue[ReceivedMessage] = queue.Queue()
        self._lock = threading.Lock()
        self._connected_event = threading.Event()
        self._state = ConnectionState.NONE
        self._connection = 0  # counts successful CONNACKs; tags each message
        self._live_connection = -1  # the counter while that connection is up
        self._stopping = False
        self._client: mqtt.Client | None = None
        self.last_error: str | None = None
        """The latest connection problem, for the TUI and logs (None when fine)."""
        self.session_present = False
        """Whether the broker still held our session at the last CONNACK."""
        self.connected_count = 0
        """How many times the subscriber became connected and subscribed: a change
        tells the consumer the broker may have lost what it held for it."""

    # -- lifecycle ---------------------------------------------------------

    def start(self) -> None:
        """Begin connecting in paho's network thread and return at once.

        A broker that is down is not an error: paho keeps retrying with
        backoff (``reconnect_min_s`` doubling up to ``reconnect_max_s``).
        """
        with self._lock:
            if self._client is not None:
                return
            self._stopping = False
            self._state = ConnectionState.CONNECTING
            self._client = self._build_client()
            client = self._client
        client.loop_start()

    def _build_client(self) -> mqtt.Client:
        v5 = self._protocol == MQTTProtocolVersion.MQTTv5
        client = make_client(
            self.config,
            self.client_id,
            protocol=self._protocol,
            # 3.1.1 has no expiry: a session meant to end at disconnect is a clean one
            clean_session=None if v5 else self.session_expiry_s == 0,
            manual_ack=self.manual_ack,
        )
        client.reconnect_delay_set(self.reconnect_min_s, self.reconnect_max_s)
        client.on_connect = self._on_connect
        client.on_connect_fail = self._on_connect_fail
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        if v5:
            properties = Properties(PacketTypes.CONNECT)  # type: ignore[no-untyped-call]
            properties.SessionExpiryInterval = self.session_expiry_s
            client.connect_async(
                self.config.host,
                self.config.port,
                keepalive=KEEPALIVE_S,
                clean_start=False,
                properties=properties,
            )
        else:
            client.connect_async(self.config.host, self.config.port, keepalive=KEEPALIVE_S)
        return client

    def stop(self) -> None:
        """Disconnect cleanly and stop paho's thread. The broker keeps the
        session (for ``session_expiry_s``), so a later ``start`` resumes it.
        Messages still in the local queue stay readable with ``get``."""
        with self._lock:
            client, self._client = self._client, None
            self._stopping = True
            self._live_connection = -1
            self._state = ConnectionState.NONE
            self._connected_event.clear()
        if client is not None:
            client.disconnect()
            client.loop_stop()

    def __enter__(self) -> MqttSubscriber:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # -- what the consumer uses -------------------------------------------

    @property
    def state(self) -> ConnectionState:
        return self._state

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Block until connected and subscribed (messages can flow); False on timeout."""
        return self._connected_event.wait(timeout)

    def get(self, timeout: float | None = None) -> ReceivedMessage | None:
        """The next message, or None if none arrived within ``timeout`` seconds."""
        try:
            return self._messages.get(timeout=timeout)
        except queue.Empty:
            return None

    def messages(self, timeout: float) -> Iterator[ReceivedMessage]:
        """Yield messages until none arrives for ``timeout`` seconds."""
        while (message := self.get(timeout)) is not None:
            yield message

    @property
    def backlog(self) -> int:
        """Messages received but not yet taken by the consumer."""
        return self._messages.qsize()

    def publish(self, topic: str, payload: bytes, *, qos: int = 1, retain: bool = False) -> bool:
        """Send a message on this subscriber's connection without waiting for its
        PUBACK (a consumer's replies, e.g. confirmations). False when not connected
        now or paho could not queue it; the caller decides whether that matters."""
        with self._lock:
            client = self._client
            live = self._live_connection >= 0
        if client is None or not live:
            return False
        info = client.publish(topic, payload, qos=qos, retain=retain)
        return info.rc == mqtt.MQTT_ERR_SUCCESS

    def ack(self, message: ReceivedMessage) -> bool:
        """Acknowledge ``message`` to the broker (``manual_ack`` only; else a no-op).

        Returns False when the connection it came on has since dropped: its
        mid now means nothing, and the broker will redeliver it on the new
        connection, so the caller must treat the redelivery as a duplicate.
        """
        if not self.manual_ack or message.qos == 0:
            return True
        with self._lock:
            client = self._client
            current = self._live_connection
        if client is None or message.connection != current:
            return False
        return client.ack(message.mid, message.qos) == mqtt.MQTT_ERR_SUCCESS

    # -- paho callbacks (network thread: must never raise) -----------------

    def _on_connect(self, client: mqtt.Client, _u: Any, flags: Any, reason: Any, _p: Any) -> None:
        try:
            self._handle_connect(client, flags, reason)
        except Exception:  # an escaping error would kill paho's thread silently
            log.exception("subscriber %s: error handling CONNACK", self.client_id)

    def _handle_connect(self, client: mqtt.Client, flags: Any, reason: Any) -> None:
        if reason_is_failure(reason):
            self.last_error = f"broker refused the connection: {reason}"
            log.warning("subscriber %s: %s", self.client_id, self.last_error)
            if self._may_fall_back and int(getattr(reason, "value", 0)) in _UNSUPPORTED_PROTOCOL:
                threading.Thread(target=self._fall_back_to_311, daemon=True).start()
            return
        self.last_error = None
        self.session_present = bool(getattr(flags, "session_present", False))
        with self._lock:
            self._connection += 1
            self._live_connection = self._connection
            v5 = self._protocol == MQTTProtocolVersion.MQTTv5
        log.info(
            "subscriber %s connected to %s (session present: %s)",
            self.client_id,
            self.config.url,
            self.session_present,
        )
        if not v5 and self.session_present:
            # 3.1.1 has no retainHandling: re-subscribing would resend retained
            # messages already delivered. The session holds our subscriptions
            # (a client_id stands for one topic set; see the class docstring).
            self._mark_connected()
            return
        if v5:
            # retainHandling=1: retained copies only for a new subscription.
            options = SubscribeOptions(qos=self.qos, retainHandling=1)
            client.subscribe([(topic, options) for topic in self.topics])
        else:
            client.subscribe([(topic, self.qos) for topic in self.topics])

    def _on_subscribe(
        self, _c: mqtt.Client, _u: Any, _mid: int, reasons: list[Any], _p: Any
    ) -> None:
        try:
            refused = [str(r) for r in reasons if reason_is_failure(r)]
            if refused:
                self.last_error = f"subscription refused: {', '.join(refused)}"
                log.warning("subscriber %s: %s", self.client_id, self.last_error)
            self._mark_connected()
        except Exception:
            log.exception("subscriber %s: error handling SUBACK", self.client_id)

    def _mark_connected(self) -> None:
        with self._lock:
            if self._stopping:
                return
            self._state = ConnectionState.CONNECTED
            self.connected_count += 1
            if not (self.last_error or "").startswith("subscription refused"):
                self.last_error = None
        self._connected_event.set()

    def _on_connect_fail(self, _c: mqtt.Client, _u: Any) -> None:
        try:
            self.last_error = f"cannot reach broker {self.config.url}"
            with self._lock:
                if self._state == ConnectionState.CONNECTED:
                    self._state = ConnectionState.RECONNECTING
        except Exception:
            log.exception("subscriber %s: error handling a failed connect", self.client_id)

    def _on_disconnect(self, _c: mqtt.Client, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        try:
            with self._lock:
                self._connected_event.clear()
                self._live_connection = -1
                if self._stopping:
                    self._state = ConnectionState.NONE
                    return
                if self._state != ConnectionState.CONNECTING:
                    self._state = ConnectionState.RECONNECTING
            if not (self.last_error or "").startswith("broker refused"):
                # keep the refusal: "Protocol error" after it would hide the cause
                self.last_error = f"connection lost: {reason}"
            log.warning("subscriber %s: connection lost (%s); reconnecting", self.client_id, reason)
        except Exception:
            log.exception("subscriber %s: error handling a disconnect", self.client_id)

    def _on_message(self, _c: mqtt.Client, _u: Any, message: mqtt.MQTTMessage) -> None:
        try:
            self._messages.put(
                ReceivedMessage(
                    topic=message.topic,
                    payload=bytes(message.payload),
                    qos=message.qos,
                    retain=bool(message.retain),
                    duplicate=bool(message.dup),
                    mid=message.mid,
                    connection=self._connection,
                )
            )
        except Exception:  # e.g. a topic that is not UTF-8; unacked, so redelivered
            log.exception("subscriber %s: dropped an undecodable message", self.client_id)

    def _fall_back_to_311(self) -> None:
        """The broker has no MQTT 5: rebuild the client as 3.1.1 (off paho's thread,
        since a loop cannot stop itself)."""
        with self._lock:
            old, self._client = self._client, None
            self._may_fall_back = False
            self._protocol = MQTTProtocolVersion.MQTTv311
        if old is not None:
            old.disconnect()
            old.loop_stop()
        log.info("subscriber %s: broker lacks MQTT 5, using 3.1.1", self.client_id)
        self.start()
