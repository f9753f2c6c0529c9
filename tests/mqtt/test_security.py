"""TLS with a generated test CA, passwords, and ACLs on a real Mosquitto."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from bus.broker import BrokerUser
from bus.errors import BrokerAuthError, MqttTlsError, PublishRefused
from bus.mqtt import MqttSubscriber, ReceivedMessage, publish_once

Collect = Callable[..., list[ReceivedMessage]]
UntilPayload = Callable[..., list[bytes]]

USERS = [
    BrokerUser.parse("hq:hq-pass", role="control"),
    BrokerUser.parse("worker1:w1-pass:0000aaaa"),
    BrokerUser.parse("worker2:w2-pass:0000bbbb"),
]


def test_tls_round_trip_with_test_ca(make_broker, collect: Collect) -> None:  # type: ignore[no-untyped-def]
    """The broker's TLS listener, verified against the CA `broker config --tls` made."""
    broker = make_broker(tls=True)
    config = broker.config()
    with MqttSubscriber(config, ["jobs/+/events"]) as sub:
        assert sub.wait_connected(10)
        publish_once(config, "jobs/0000aaaa/events", b"over tls")
        assert [m.payload for m in collect(sub, 1)] == [b"over tls"]


def test_tls_refuses_an_untrusted_server(make_broker) -> None:  # type: ignore[no-untyped-def]
    """Without the test CA the certificate is not trusted: a typed error at once."""
    broker = make_broker(tls=True)
    untrusting = dataclasses.replace(broker.config(), ca_certs=None)  # system CAs only
    with pytest.raises(MqttTlsError, match="certificate verify failed"):
        publish_once(untrusting, "jobs/0000aaaa/events", b"x", attempts=3)


def test_wrong_password_is_refused_without_retrying(make_broker) -> None:  # type: ignore[no-untyped-def]
    broker = make_broker(users=USERS)
    with pytest.raises(BrokerAuthError) as info:
        publish_once(broker.config("worker1", "wrong"), "jobs/0000aaaa/events", b"x")
    assert "refused the connection" in str(info.value)
    with pytest.raises(BrokerAuthError):
        publish_once(broker.config(), "jobs/0000aaaa/events", b"x")  # anonymous


def test_acl_workers_write_only_their_job_and_read_nothing(  # type: ignore[no-untyped-def]
    make_broker, until_payload: UntilPayload
) -> None:
    """The control room reads every job's events; worker2 cannot read worker1's
    events (ACLs filter at delivery: its SUBACK proves nothing) nor write them."""
    broker = make_broker(tls=True, users=USERS)
    hq = MqttSubscriber(broker.config("hq", "hq-pass"), ["jobs/+/events"])
    spy = MqttSubscriber(broker.config("worker2", "w2-pass"), ["jobs/0000aaaa/events", "#"])
    with hq, spy:
        assert hq.wait_connected(10) and spy.wait_connected(10)
        publish_once(broker.config("worker1", "w1-pass"), "jobs/0000aaaa/events", b"w1 event")
        with pytest.raises(PublishRefused, match="Not authorized"):
            publish_once(broker.config("worker2", "w2-pass"), "jobs/0000aaaa/events", b"forged")
        with pytest.raises(PublishRefused):
            publish_once(broker.config("hq", "hq-pass"), "jobs/0000aaaa/events", b"hq writes")
        publish_once(broker.config("worker2", "w2-pass"), "jobs/0000bbbb/events", b"w2 event")
        assert until_payload(hq, b"w2 event") == [b"w1 event", b"w2 event"]
        assert spy.get(timeout=0.2) is None


def test_subscriber_with_bad_password_reports_it_and_keeps_trying(  # type: ignore[no-untyped-def]
    make_broker, wait_for
) -> None:
    """A refused subscriber does not crash or pretend to be connected: it says why."""
    broker = make_broker(users=USERS)
    sub = MqttSubscriber(broker.config("hq", "wrong"), ["jobs/+/events"])
    with sub:
        assert wait_for(lambda: (sub.last_error or "").startswith("broker refused"))
        assert not sub.wait_connected(0) and sub.state.value == "connecting"
