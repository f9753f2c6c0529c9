"""Opening an MQTT connection in the calling thread: CONNACK, the broker's limits, retries.

Shared by the publishers (``bus.mqtt_publisher``) and the outbox sender
(``bus.delivery_sender``). Failures are typed: ``MqttTlsError`` and
``BrokerAuthError`` cannot be fixed by retrying, ``BrokerUnavailable`` may be.
"""

from __future__ import annotations

import logging
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass
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
    KEEPALIVE_S,
    BrokerConfig,
    check_connack,
    make_client,
    reason_is_failure,
    retry_delay,
)

log = logging.getLogger(__name__)

# CONNACK reasons meaning "this broker does not speak MQTT 5": retry with 3.1.1.
_UNSUPPORTED_PROTOCOL = {1, 132}
# A PUBLISH's bytes besides topic and payload: fixed header (<= 5), topic length
# (2), packet id (2), properties length (1).
_PUBLISH_OVERHEAD = 10


class UnsupportedProtocol(BrokerUnavailable):
    """CONNACK said "unsupported protocol version": reconnect with MQTT 3.1.1."""


@dataclass(frozen=True)
class Connack:
    """What the broker said when it let us in."""

    reason: Any
    max_packet_size: int | None = None  # MQTT 5 brokers announce their limit


def connect_blocking(
    config: BrokerConfig,
    client: mqtt.Client,
    timeout: float,
    properties: Properties | None = None,
    clean_start: bool | Literal[3] = mqtt.MQTT_CLEAN_START_FIRST_ONLY,
) -> Connack:
    """Open the socket and wait for CONNACK, driving paho's loop in this thread.

    Raises ``MqttTlsError``/``BrokerAuthError`` for failures retrying cannot
    fix, ``BrokerUnavailable`` for the rest.
    """
    connack: list[Connack] = []

    def on_connect(_c: mqtt.Client, _u: Any, _f: Any, reason: Any, props: Any) -> None:
        limit = getattr(props, "MaximumPacketSize", None) if props is not None else None
        connack.append(Connack(reason, int(limit) if limit else None))

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
        reason = connack[0].reason
        if int(getattr(reason, "value", reason)) in _UNSUPPORTED_PROTOCOL:
            raise UnsupportedProtocol(f"broker {config.url} does not speak MQTT 5: {reason}")
        check_connack(config, reason)
        if reason_is_failure(reason):
            raise BrokerUnavailable(f"broker {config.url} refused the connection: {reason}")
    except BaseException:
        close_blocking(client)  # no socket left behind by a failed attempt
        raise
    return connack[0]


def open_client(
    config: BrokerConfig, client_id: str, timeout: float, *, max_inflight: int = 20
) -> tuple[mqtt.Client, Connack]:
    """A connected client: MQTT 5, or 3.1.1 for a broker without it."""
    client = make_client(config, client_id, protocol=mqtt.MQTTv5, max_inflight=max_inflight)
    try:
        return client, connect_blocking(config, client, timeout)
    except UnsupportedProtocol:
        client = make_client(config, client_id, protocol=mqtt.MQTTv311, max_inflight=max_inflight)
        return client, connect_blocking(config, client, timeout)


def close_blocking(client: mqtt.Client) -> None:
    """Send DISCONNECT if we can and close the socket, from the calling thread."""
    client.disconnect()
    client.loop(timeout=0.01)


def check_fits(config: BrokerConfig, connack: Connack, topic: str, payload: bytes) -> None:
    """``PublishRefused`` for a message over the broker's announced packet limit: it
    would only close the connection (and every retry would too)."""
    limit = connack.max_packet_size
    size = len(topic.encode("utf-8")) + len(payload) + _PUBLISH_OVERHEAD
    if limit is not None and size > limit:
        raise PublishRefused(
            f"a {len(payload)}-byte message is over {config.url}'s limit of {limit} bytes a packet"
        )


def with_retries(
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
