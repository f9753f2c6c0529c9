"""The MQTT transport's public API: broker config, publishing, subscribing.

Import from here; the pieces live in ``bus.mqtt_config``, ``bus.mqtt_publisher``
and ``bus.mqtt_subscriber``. Everything speaks topics and bytes; what a job,
an event or a signature is belongs to ``registry``.

Typical use::

    from bus.mqtt import BrokerConfig, MqttSubscriber, publish_once, resolve_broker

    config = resolve_broker(os.environ, job_record["broker"])   # None: no MQTT
    if config is not None:
        publish_once(config, "jobs/ab12cd34/events", payload_bytes, retain=terminal)

Errors are ``bus.errors.MqttError`` subclasses with one-line messages:
``BrokerUnavailable`` (after the retries), ``BrokerAuthError``, ``MqttTlsError``,
``PublishNotAcknowledged``/``PublishRefused``, ``MqttConfigError``, ``InvalidTopic``.
"""

from __future__ import annotations

from bus.mqtt_config import (
    CONNECT_TIMEOUT_S,
    DEFAULT_ATTEMPTS,
    PUBACK_TIMEOUT_S,
    BrokerConfig,
    new_client_id,
    resolve_broker,
    retry_delay,
    validate_publish_topic,
)
from bus.mqtt_publisher import MqttPublisher, PublishReceipt, publish_once
from bus.mqtt_subscriber import ConnectionState, MqttSubscriber, ReceivedMessage

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_ATTEMPTS",
    "PUBACK_TIMEOUT_S",
    "BrokerConfig",
    "ConnectionState",
    "MqttPublisher",
    "MqttSubscriber",
    "PublishReceipt",
    "ReceivedMessage",
    "new_client_id",
    "publish_once",
    "resolve_broker",
    "retry_delay",
    "validate_publish_topic",
]
