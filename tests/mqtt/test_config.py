"""BrokerConfig resolution from MQTT_* env and a job's broker block (no broker needed)."""

from __future__ import annotations

import pytest

from bus.errors import InvalidTopic, MqttConfigError
from bus.mqtt import BrokerConfig, resolve_broker, retry_delay, validate_publish_topic


def test_no_broker_in_env_means_no_mqtt() -> None:
    """Absent or empty MQTT_BROKER: the job lives on the SQLite bus alone."""
    assert BrokerConfig.from_env({}) is None
    assert BrokerConfig.from_env({"MQTT_BROKER": "  "}) is None
    assert resolve_broker({}, None) is None


def test_env_is_read_with_tls_default_port(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ca = tmp_path / "ca.crt"
    ca.write_text("x")
    env = {
        "MQTT_BROKER": "mq.example",
        "MQTT_TLS": "true",
        "MQTT_CA_CERTS": str(ca),
        "MQTT_USERNAME": "control",
        "MQTT_PASSWORD": "s3cret",
    }
    cfg = BrokerConfig.from_env(env)
    assert cfg is not None
    assert (cfg.host, cfg.port, cfg.tls, cfg.ca_certs) == ("mq.example", 8883, True, str(ca))
    assert cfg.username == "control" and cfg.password == "s3cret"
    assert "s3cret" not in repr(cfg) and "s3cret" not in cfg.url


def test_job_block_overlays_env() -> None:
    """The job record's broker block wins over env, key by key; nulls keep env."""
    env = {"MQTT_BROKER": "env-host", "MQTT_PORT": "1884", "MQTT_USERNAME": "envuser"}
    block = {"host": "job-host", "port": None, "tls": None, "username": "w1", "password": "p"}
    cfg = resolve_broker(env, block)
    assert cfg is not None
    assert cfg.to_block() == {
        "host": "job-host", "port": 1884, "tls": False, "username": "w1", "password": "p",
    }  # fmt: skip


def test_block_alone_without_env() -> None:
    cfg = resolve_broker({}, {"host": "h", "port": 9000, "tls": True})
    assert cfg is not None and (cfg.host, cfg.port, cfg.tls) == ("h", 9000, True)
    assert BrokerConfig.from_block(cfg.to_block()) == cfg


def test_tls_in_block_moves_default_port() -> None:
    cfg = BrokerConfig("h").overlay({"tls": True})
    assert cfg.port == 8883


@pytest.mark.parametrize(
    ("env", "fragment"),
    [
        ({"MQTT_BROKER": "h", "MQTT_PORT": "abc"}, "MQTT_PORT must be a port number"),
        ({"MQTT_BROKER": "h", "MQTT_PORT": "70000"}, "MQTT_PORT must be in 1-65535"),
        ({"MQTT_BROKER": "h", "MQTT_TLS": "maybe"}, "MQTT_TLS must be a boolean"),
        ({"MQTT_BROKER": "h", "MQTT_CA_CERTS": "/nope/ca.crt"}, "does not exist"),
    ],
)
def test_bad_env_is_one_clear_line(env: dict[str, str], fragment: str) -> None:
    with pytest.raises(MqttConfigError) as info:
        BrokerConfig.from_env(env)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_bad_block_port() -> None:
    with pytest.raises(MqttConfigError, match=r"broker\.port"):
        BrokerConfig("h").overlay({"port": 0})


def test_backoff_schedule() -> None:
    """min(0.5 * 2^(n-1), 8) seconds."""
    assert [retry_delay(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


@pytest.mark.parametrize("topic", ["", "jobs/+/events", "jobs/#", "a\x00b"])
def test_unpublishable_topics(topic: str) -> None:
    with pytest.raises(InvalidTopic):
        validate_publish_topic(topic)
