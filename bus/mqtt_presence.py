"""A retained "I am here" kept current on one topic, and a last will that says "gone".

A fleet node announces itself this way (``bus.fleet_topics``), but nothing here knows
nodes: it is a topic, bytes and MQTT's own machinery. The broker keeps the last
retained message for whoever subscribes later, and publishes the will (retained
too) when the connection dies without a DISCONNECT: a ``kill -9`` closes the socket
at once, a cut cable after 1.5 keepalives. paho reconnects by itself (its backoff,
``reconnect_delay_set``) and every new connection announces afresh, since the will
may have replaced the announcement meanwhile. A clean ``stop`` publishes its own
final message and disconnects normally, so no will follows.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import MQTTProtocolVersion

from bus.errors import BrokerAuthError
from bus.mqtt_config import (
    KEEPALIVE_S,
    BrokerConfig,
    check_connack,
    make_client,
    reason_is_failure,
)

log = logging.getLogger(__name__)


class Announcer:
    """Keep ``payload()`` retained on ``topic`` while up; ``will`` when the link dies.

    >>> # announcer = Announcer(config, "jobs/nodes/box2/presence", b'{"online":false}',
    >>> #                       payload=lambda: json.dumps(state()).encode(), client_id="n")
    >>> # announcer.start(); announcer.wait_connected(10); announcer.announce()
    >>> # announcer.stop(final=b'{"online":false}')

    ``payload`` is called in paho's thread at every (re)connect and in the caller's at
    every ``announce``: it must be cheap and must not raise.
    """

    def __init__(
        self,
        config: BrokerConfig,
        topic: str,
        will: bytes,
        *,
        payload: Callable[[], bytes],
        client_id: str,
        keepalive_s: int = KEEPALIVE_S,
        reconnect_min_s: int = 1,
        reconnect_max_s: int = 30,
    ) -> None:
        self.config = config
        self.topic = topic
        self.will = will
        self.payload = payload
        self.client_id = client_id
        self.keepalive_s = keepalive_s
        self._connected = threading.Event()
        self._lock = threading.Lock()
        self._client = make_client(config, client_id, protocol=MQTTProtocolVersion.MQTTv5)
        self._client.reconnect_delay_set(reconnect_min_s, reconnect_max_s)
        self._client.will_set(topic, will, qos=1, retain=True)
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = self._on_disconnect
        self._client.on_publish = self._on_publish
        self._started = False
        self.last_error: str | None = None
        """The latest connection problem or refused announcement (None when fine)."""
        self.refusals = 0
        """Announcements the broker refused (an ACL that does not give us the topic)."""
        self.announced = 0
        """Announcements the broker acknowledged."""
        self.refused: BrokerAuthError | None = None
        """The broker refused our login (bad user or password, not authorised): paho
        would retry for ever, but only new credentials can fix it."""

    def start(self) -> None:
        """Connect in paho's network thread and return at once (a broker that is down
        is retried with backoff, not an error)."""
        with self._lock:
            if self._started:
                return
            self._started = True
        self._client.connect_async(
            self.config.host, self.config.port, keepalive=self.keepalive_s, clean_start=True
        )
        self._client.loop_start()

    def wait_connected(self, timeout: float) -> bool:
        """True once connected (the first announcement is then on its way)."""
        return self._connected.wait(timeout)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def announce(self) -> bool:
        """Publish ``payload()`` now (retained, QoS 1); False when not connected (the
        next connection announces anyway)."""
        if not self._connected.is_set():
            return False
        info = self._client.publish(self.topic, self.payload(), qos=1, retain=True)
        return info.rc == mqtt.MQTT_ERR_SUCCESS

    def stop(self, final: bytes | None = None, timeout: float = 5.0) -> bool:
        """Publish ``final`` (retained) if connected, then disconnect normally (no
        will). True when ``final`` was acknowledged (or none was given)."""
        delivered = final is None
        if final is not None and self._connected.is_set():
            info = self._client.publish(self.topic, final, qos=1, retain=True)
            try:
                info.wait_for_publish(timeout)
                delivered = info.is_published()
            except (RuntimeError, ValueError):  # the connection went meanwhile
                delivered = False
        self._client.disconnect()
        self._client.loop_stop()
        self._connected.clear()
        return delivered

    # -- paho callbacks (network thread: must never raise) ----------------------------

    def _on_connect(self, client: mqtt.Client, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        try:
            if reason_is_failure(reason):
                self.last_error = f"broker {self.config.url} refused the connection: {reason}"
                log.warning("%s: %s", self.client_id, self.last_error)
                try:
                    check_connack(self.config, reason)
                except BrokerAuthError as exc:
                    self.refused = exc
                return
            self.last_error = None
            client.publish(self.topic, self.payload(), qos=1, retain=True)
            self._connected.set()
        except Exception:  # an escaping error would kill paho's thread silently
            log.exception("%s: error handling CONNACK", self.client_id)

    def _on_disconnect(self, _c: mqtt.Client, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
        try:
            self._connected.clear()
            if reason_is_failure(reason):
                self.last_error = f"connection to {self.config.url} lost: {reason}"
                log.warning("%s: %s; reconnecting", self.client_id, self.last_error)
        except Exception:
            log.exception("%s: error handling a disconnect", self.client_id)

    def _on_publish(self, _c: mqtt.Client, _u: Any, _mid: int, reason: Any, _p: Any) -> None:
        try:
            if reason_is_failure(reason):
                self.refusals += 1
                self.last_error = f"broker {self.config.url} refused {self.topic}: {reason}"
                log.warning("%s: %s", self.client_id, self.last_error)
            else:
                self.announced += 1
        except Exception:
            log.exception("%s: error handling a PUBACK", self.client_id)
