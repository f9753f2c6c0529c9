"""Which MQTT broker to talk to, and how: MQTT_* env overlaid by a job's broker block.

A ``BrokerConfig`` is a frozen value; ``None`` where a config is expected
means "no MQTT" (the job lives on the SQLite bus alone).

>>> cfg = BrokerConfig.from_env({"MQTT_BROKER": "mq.example", "MQTT_TLS": "1"})
>>> (cfg.host, cfg.port, cfg.tls)
('mq.example', 8883, True)
>>> cfg.overlay({"port": 9883, "username": "w1"}).to_block()["port"]
9883
>>> BrokerConfig.from_env({}) is None
True
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import socket
import ssl
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from bus.broker_checks import host_or_none
from bus.errors import BrokerAuthError, InvalidTopic, MqttConfigError

DEFAULT_PORT = 1883
DEFAULT_TLS_PORT = 8883
CONNECT_TIMEOUT_S = 10.0
PUBACK_TIMEOUT_S = 5.0
DEFAULT_ATTEMPTS = 3
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 8.0
KEEPALIVE_S = 30

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
# CONNACK reason codes that retrying with the same credentials cannot fix
# (3.1.1 codes 4 and 5, MQTT 5 codes 0x86, 0x87, 0x8A, 0x8C).
_AUTH_REFUSALS = {4, 5, 134, 135, 138, 140}


def _parse_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise MqttConfigError(f"{name} must be a boolean (1/0, true/false), got {value!r}")


def _parse_port(name: str, value: object) -> int:
    try:
        port = int(str(value).strip())
    except ValueError:
        raise MqttConfigError(f"{name} must be a port number, got {value!r}") from None
    if not 1 <= port <= 65535:
        raise MqttConfigError(f"{name} must be in 1-65535, got {port}")
    return port


def _optional_file(name: str, value: str | None) -> str | None:
    if not value:
        return None
    if not os.path.isfile(value):
        raise MqttConfigError(f"{name} names a file that does not exist: {value}")
    return value


@dataclass(frozen=True)
class BrokerConfig:
    """Where the broker is and how to authenticate to it.

    ``ca_certs``/``certfile``/``keyfile`` come from this host's env only: they
    are paths on this machine, so they never travel in a job's broker block.
    """

    host: str
    port: int = DEFAULT_PORT
    tls: bool = False
    ca_certs: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    username: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> BrokerConfig | None:
        """The broker named by MQTT_* variables, or None when MQTT_BROKER is unset.

        MQTT_PORT defaults to 8883 with MQTT_TLS on, else 1883. Raises
        ``MqttConfigError`` (one line) for a malformed value.
        """
        env = os.environ if env is None else env
        host = env.get("MQTT_BROKER", "").strip()
        if not host:
            return None
        if host_or_none(host) is None:
            raise MqttConfigError(f"MQTT_BROKER must be an IP address or a host name, got {host!r}")
        tls = _parse_bool("MQTT_TLS", env.get("MQTT_TLS", ""))
        port_text = env.get("MQTT_PORT", "").strip()
        port = _parse_port("MQTT_PORT", port_text) if port_text else _default_port(tls)
        return cls(
            host=host,
            port=port,
            tls=tls,
            ca_certs=_optional_file("MQTT_CA_CERTS", env.get("MQTT_CA_CERTS")),
            certfile=_optional_file("MQTT_CERTFILE", env.get("MQTT_CERTFILE")),
            keyfile=_optional_file("MQTT_KEYFILE", env.get("MQTT_KEYFILE")),
            username=env.get("MQTT_USERNAME") or None,
            password=env.get("MQTT_PASSWORD") or None,
        )

    @classmethod
    def from_block(cls, block: Mapping[str, Any]) -> BrokerConfig:
        """A config from a job's broker block alone (no env)."""
        host = str(block.get("host") or "").strip()
        if not host:
            raise MqttConfigError("broker block has no host")
        return cls(host=host, port=DEFAULT_PORT).overlay(block)

    def overlay(self, block: Mapping[str, Any] | None) -> BrokerConfig:
        """This config with the non-null keys of a job's broker block
        ({host, port, tls, username, password}) laid over it.

        Unknown keys are ignored, so an older orchestrate reads newer records.
        """
        if not block:
            return self
        changes: dict[str, Any] = {}
        if block.get("host"):
            changes["host"] = str(block["host"]).strip()
        if block.get("tls") is not None:
            changes["tls"] = _parse_bool("broker.tls", block["tls"])
        if block.get("port") is not None:
            changes["port"] = _parse_port("broker.port", block["port"])
        elif (
            "tls" in changes and changes["tls"] != self.tls and self.port == _default_port(self.tls)
        ):
            changes["port"] = _default_port(changes["tls"])
        for key in ("username", "password"):
            if block.get(key) is not None:
                changes[key] = str(block[key]) or None
        return dataclasses.replace(self, **changes)

    def to_block(self) -> dict[str, Any]:
        """The job record's broker block: {host, port, tls, username, password}."""
        return {
            "host": self.host,
            "port": self.port,
            "tls": self.tls,
            "username": self.username,
            "password": self.password,
        }

    @property
    def url(self) -> str:
        """``mqtt://host:port`` or ``mqtts://...``, for logs and the TUI header
        (never includes the password)."""
        scheme = "mqtts" if self.tls else "mqtt"
        user = f"{self.username}@" if self.username else ""
        return f"{scheme}://{user}{self.host}:{self.port}"


def _default_port(tls: bool) -> int:
    return DEFAULT_TLS_PORT if tls else DEFAULT_PORT


def resolve_broker(
    env: Mapping[str, str] | None, block: Mapping[str, Any] | None
) -> BrokerConfig | None:
    """The broker in effect for a job: env overlaid by its block, None for "no MQTT".

    A null block keeps the env's broker; with neither, the answer is None.
    """
    base = BrokerConfig.from_env(env)
    if base is None:
        return BrokerConfig.from_block(block) if block and block.get("host") else None
    return base.overlay(block)


def retry_delay(attempt: int, base: float = BACKOFF_BASE_S, cap: float = BACKOFF_CAP_S) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1-based):
    min(base * 2^(attempt-1), cap), i.e. 0.5, 1, 2, 4, 8, 8, ...

    >>> [retry_delay(n) for n in (1, 2, 3, 5, 6)]
    [0.5, 1.0, 2.0, 8.0, 8.0]
    """
    return float(min(base * 2 ** (attempt - 1), cap))


def validate_publish_topic(topic: str) -> str:
    """``topic`` if a broker would accept a PUBLISH to it, else ``InvalidTopic``."""
    if not topic:
        raise InvalidTopic("topic is empty")
    if "+" in topic or "#" in topic:
        raise InvalidTopic(f"cannot publish to a wildcard topic: {topic!r}")
    if "\x00" in topic:
        raise InvalidTopic("topic contains a NUL character")
    if len(topic.encode("utf-8")) > 65535:
        raise InvalidTopic("topic is longer than 65535 bytes")
    return topic


def new_client_id(prefix: str = "orchestrate") -> str:
    """A unique client id (brokers kick the older of two same-id clients)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def make_client(
    config: BrokerConfig,
    client_id: str,
    *,
    protocol: MQTTProtocolVersion = MQTTProtocolVersion.MQTTv5,
    clean_session: bool | None = None,
    manual_ack: bool = False,
    max_inflight: int = 20,
) -> mqtt.Client:
    """A paho client (callback API v2) with TLS and credentials from ``config``
    applied; not yet connected."""
    client = mqtt.Client(
        CallbackAPIVersion.VERSION2,
        client_id=client_id,
        protocol=protocol,
        clean_session=clean_session,
        manual_ack=manual_ack,
    )
    client.max_inflight_messages_set(max_inflight)
    client.on_socket_open = _no_delay
    if config.username:
        client.username_pw_set(config.username, config.password)
    if config.tls:
        try:
            client.tls_set(
                ca_certs=config.ca_certs,
                certfile=config.certfile,
                keyfile=config.keyfile,
                cert_reqs=ssl.CERT_REQUIRED,
                tls_version=ssl.PROTOCOL_TLS_CLIENT,
            )
        except (OSError, ssl.SSLError) as exc:
            raise MqttConfigError(f"cannot load TLS files for {config.url}: {exc}") from exc
    return client


def _no_delay(_client: mqtt.Client, _userdata: Any, sock: Any) -> None:
    """TCP_NODELAY: a small packet right after another (a consumer's PUBLISH after
    its PUBACK) otherwise waits for the peer's delayed ACK, about 40 ms here."""
    with contextlib.suppress(OSError, AttributeError):  # not TCP (a unix socket): no matter
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def reason_is_failure(reason_code: Any) -> bool:
    """True when a paho ReasonCode (or 3.1.1 int) reports a failure."""
    failure = getattr(reason_code, "is_failure", None)
    if isinstance(failure, bool):
        return failure
    return int(reason_code) != 0


def check_connack(config: BrokerConfig, reason_code: Any) -> None:
    """Raise ``BrokerAuthError`` for a CONNACK that retrying cannot fix."""
    code = int(getattr(reason_code, "value", reason_code))
    if reason_is_failure(reason_code) and code in _AUTH_REFUSALS:
        raise BrokerAuthError(f"broker {config.url} refused the connection: {reason_code}")
