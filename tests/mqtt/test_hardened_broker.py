"""The broker `broker config` writes is hardened by default: checked against a real Mosquitto."""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

from bus.broker import BrokerUser, control_password, issue_client_cert
from bus.broker_users import password_line, write_password_file
from bus.errors import BrokerAuthError, BrokerUnavailable, MqttTlsError, PublishRefused
from bus.mqtt import MqttSubscriber, ReceivedMessage, publish_once
from tests.plugin.mosquitto import RunningBroker

Collect = Callable[..., list[ReceivedMessage]]
UntilPayload = Callable[..., list[bytes]]


def control_config(broker: RunningBroker):  # type: ignore[no-untyped-def]
    """The generated control user, logged in with the password from its file."""
    return broker.config("orchestrate-control", control_password(broker.directory))


def test_anonymous_clients_are_refused_by_default(make_broker) -> None:  # type: ignore[no-untyped-def]
    """No users given: anonymous access is still off, and the generated control user
    (its password only in control.secret) is the way in."""
    broker = make_broker(allow_anonymous=False)
    with pytest.raises(BrokerAuthError):
        publish_once(broker.config(), "jobs/0000aaaa/applied", b"anonymous")
    publish_once(control_config(broker), "jobs/0000aaaa/applied", b"control")


def test_allowed_anonymous_clients_reach_a_loopback_broker(make_broker, collect: Collect) -> None:  # type: ignore[no-untyped-def]
    """--allow-anonymous (loopback only): the development broker every other test uses."""
    broker = make_broker(allow_anonymous=True)
    with MqttSubscriber(broker.config(), ["anything/#"]) as sub:
        assert sub.wait_connected(10)
        publish_once(broker.config(), "anything/at/all", b"dev")
        assert [m.payload for m in collect(sub, 1)] == [b"dev"]


def test_a_payload_over_the_limit_is_refused_and_never_delivered(  # type: ignore[no-untyped-def]
    make_broker, until_payload: UntilPayload
) -> None:
    """Over message_size_limit: a refusing PUBACK. Over max_packet_size (a client
    that was not told the limit, MQTT 3.1.1): the connection is closed. Neither is
    delivered, and the broker keeps serving."""
    broker = make_broker()
    config = broker.config()
    with MqttSubscriber(config, ["jobs/+/events"]) as sub:
        assert sub.wait_connected(10)
        with pytest.raises(PublishRefused):
            publish_once(config, "jobs/0000aaaa/events", b"x" * 200_000, attempts=1)
        closed = threading.Event()
        legacy = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, protocol=mqtt.MQTTv311)
        legacy.on_disconnect = lambda *_args: closed.set()
        legacy.reconnect_delay_set(30, 30)  # no second copy while we look
        legacy.connect("127.0.0.1", broker.port)
        legacy.loop_start()
        try:
            legacy.publish("jobs/0000aaaa/events", b"y" * 2_000_000, qos=1)
            assert closed.wait(10), "the broker kept a client that sent a 2 MB packet"
        finally:
            legacy.disconnect()
            legacy.loop_stop()
        publish_once(config, "jobs/0000aaaa/events", b"small")
        assert until_payload(sub, b"small") == [b"small"]
    assert broker.process.running_pid() is not None


def test_mtls_refuses_a_client_without_a_certificate(make_broker) -> None:  # type: ignore[no-untyped-def]
    """--require-certificate: the CA alone is not enough; a certificate issued by the
    test CA (`broker cert`) plus the password is."""
    broker = make_broker(tls=True, require_certificate=True, allow_anonymous=False)
    control = control_config(broker)
    with pytest.raises((MqttTlsError, BrokerUnavailable)):
        publish_once(control, "jobs/0000aaaa/applied", b"no cert", attempts=1)
    issued = issue_client_cert(broker.directory / "certs", "hq")
    with_cert = dataclasses.replace(control, certfile=str(issued.cert), keyfile=str(issued.key))
    publish_once(with_cert, "jobs/0000aaaa/applied", b"with cert")


def test_a_password_written_from_python_logs_in(make_broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The password file is Mosquitto's PBKDF2-SHA512 format, written without
    mosquitto_passwd: a real broker lets the right password in and no other."""
    users = [BrokerUser.parse("w1:s3cret pass:0000aaaa"), BrokerUser.parse("hq:hq", "control")]
    broker = make_broker(users=users)
    publish_once(broker.config("w1", "s3cret pass"), "jobs/0000aaaa/events", b"ok")
    with pytest.raises(BrokerAuthError):
        publish_once(broker.config("w1", "s3cret"), "jobs/0000aaaa/events", b"wrong")
    written = tmp_path / "passwd"
    write_password_file(written, users)
    assert oct(written.stat().st_mode & 0o777) == "0o600"
    assert [line.split(":")[0] for line in written.read_text().splitlines()] == ["w1", "hq"]
    assert "s3cret" not in written.read_text()
    assert password_line("w1", "p", salt=bytes(12)) == password_line("w1", "p", salt=bytes(12))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's broker drops privileges")
def test_started_as_root_the_broker_runs_as_another_user(make_broker) -> None:  # type: ignore[no-untyped-def]
    broker = make_broker()
    pid = broker.process.running_pid()
    assert pid is not None
    uid_line = next(
        line for line in Path(f"/proc/{pid}/status").read_text().splitlines()
        if line.startswith("Uid:")
    )  # fmt: skip
    assert set(uid_line.split()[1:]) != {"0"}, uid_line
    assert "user root" not in (broker.directory / "mosquitto.conf").read_text()
