"""Publish and subscribe against a real Mosquitto: delivery, retention, sessions, restarts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bus.errors import BrokerUnavailable
from bus.mqtt import (
    BrokerConfig,
    ConnectionState,
    MqttPublisher,
    MqttSubscriber,
    ReceivedMessage,
    publish_once,
)
from tests.plugin.mosquitto import RunningBroker  # noqa: F401  (type only)

Collect = Callable[..., list[ReceivedMessage]]
UntilPayload = Callable[..., list[bytes]]
WaitFor = Callable[..., bool]


def test_publish_once_round_trip(broker, collect: Collect) -> None:  # type: ignore[no-untyped-def]
    """A one-shot QoS 1 publish reaches a live subscriber, bytes intact."""
    with MqttSubscriber(broker.config(), ["jobs/+/events"]) as sub:
        assert sub.wait_connected(10) and sub.state is ConnectionState.CONNECTED
        payload = '{"seq": 1, "detail": "démarré"}'.encode()
        publish_once(broker.config(), "jobs/ab12cd34/events", payload)
        [message] = collect(sub, 1)
    assert (message.topic, message.payload, message.qos) == ("jobs/ab12cd34/events", payload, 1)
    assert not message.retain
    assert sub.state is ConnectionState.NONE


def test_persistent_publisher_pipelines_in_order(broker, collect: Collect) -> None:  # type: ignore[no-untyped-def]
    """The persistent publisher's pipelined publishes all arrive, in order."""
    with MqttSubscriber(broker.config(), ["bench/#"]) as sub:
        assert sub.wait_connected(10)
        with MqttPublisher(broker.config()) as pub:
            receipts = [pub.publish("bench/t", b"%d" % i, wait=False) for i in range(300)]
            pub.flush()
            assert all(r.acknowledged for r in receipts)
            pub.publish("bench/t", b"last")  # waits for its own PUBACK
        got = collect(sub, 301)
    assert [m.payload for m in got] == [b"%d" % i for i in range(300)] + [b"last"]


def test_retained_message_reaches_late_subscriber(broker, collect: Collect) -> None:  # type: ignore[no-untyped-def]
    """A terminal event published retained is seen by a subscriber that comes later."""
    publish_once(broker.config(), "jobs/0000aaaa/events", b"completed", retain=True)
    with MqttSubscriber(broker.config(), ["jobs/+/events"]) as sub:
        [message] = collect(sub, 1)
    assert message.payload == b"completed" and message.retain


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_resumed_session_gets_retained_copy_once(  # type: ignore[no-untyped-def]
    broker, protocol: str, until_payload: UntilPayload
) -> None:
    """Resuming a session must not deliver a retained event a second time
    (retainHandling=1 on MQTT 5, no re-subscribe on 3.1.1)."""
    config = broker.config()
    publish_once(config, "jobs/0000bbbb/events", b"terminal", retain=True)
    first = MqttSubscriber(config, ["jobs/+/events"], client_id="resume-1", protocol=protocol)
    with first:
        assert until_payload(first, b"terminal") == [b"terminal"]
    second = MqttSubscriber(config, ["jobs/+/events"], client_id="resume-1", protocol=protocol)
    with second:
        assert second.wait_connected(10) and second.session_present
        publish_once(config, "jobs/0000bbbb/events", b"sentinel")
        assert until_payload(second, b"sentinel") == [b"sentinel"]


@pytest.mark.parametrize("protocol", ["5", "3.1.1"])
def test_offline_subscriber_gets_messages_across_broker_restart(  # type: ignore[no-untyped-def]
    broker, protocol: str, collect: Collect
) -> None:
    """Messages published while the persistent subscriber was away, with a
    graceful broker restart in between, are delivered when it comes back."""
    config = broker.config()
    with MqttSubscriber(config, ["jobs/+/events"], client_id="offline", protocol=protocol) as sub:
        assert sub.wait_connected(10)
    for seq in range(1, 1201):  # past Mosquitto's default max_queued_messages (1000)
        publish_once(config, "jobs/0000cccc/events", b"%d" % seq) if seq <= 3 else None
    with MqttPublisher(config) as pub:
        for seq in range(4, 1201):
            pub.publish("jobs/0000cccc/events", b"%d" % seq, wait=False)
        pub.flush()
    broker.terminate()
    broker.start()
    with MqttSubscriber(config, ["jobs/+/events"], client_id="offline", protocol=protocol) as sub:
        got = collect(sub, 1200, timeout=20)
        assert sub.session_present
    assert {m.payload for m in got} == {b"%d" % seq for seq in range(1, 1201)}


def test_subscriber_reconnects_by_itself_after_broker_crash(  # type: ignore[no-untyped-def]
    broker, collect: Collect, wait_for: WaitFor
) -> None:
    """SIGKILL the broker mid-stream (losing its unsaved session state), restart it:
    the subscriber notices, reconnects with paho's backoff, re-subscribes, and
    receives everything published once it is back."""
    config = broker.config()
    states: list[ConnectionState] = []
    with MqttSubscriber(config, ["jobs/+/events"], client_id="crashy") as sub:
        assert sub.wait_connected(10)
        with MqttPublisher(config) as pub:
            for seq in range(1, 51):
                pub.publish("jobs/0000dddd/events", b"%d" % seq, wait=False)
            pub.flush()
        before = collect(sub, 50)
        broker.kill()
        assert wait_for(lambda: sub.state is not ConnectionState.CONNECTED)
        states.append(sub.state)
        broker.start()
        assert sub.wait_connected(15)
        states.append(sub.state)
        with MqttPublisher(config) as pub:
            for seq in range(51, 101):
                pub.publish("jobs/0000dddd/events", b"%d" % seq, wait=False)
            pub.flush()
        after = collect(sub, 50)
    assert states == [ConnectionState.RECONNECTING, ConnectionState.CONNECTED]
    assert [m.payload for m in before] == [b"%d" % s for s in range(1, 51)]
    assert {m.payload for m in after} == {b"%d" % s for s in range(51, 101)}


def test_manual_ack_redelivers_what_was_not_acked(  # type: ignore[no-untyped-def]
    broker, collect: Collect, until_payload: UntilPayload
) -> None:
    """With manual_ack, a message taken but not acked (the consumer died before
    committing) comes back to the next process; an acked one does not."""
    config = broker.config()
    topics = ["jobs/+/events"]
    with MqttSubscriber(config, topics, client_id="acker", manual_ack=True) as sub:
        assert sub.wait_connected(10)
        publish_once(config, "jobs/0000eeee/events", b"one")
        publish_once(config, "jobs/0000eeee/events", b"two")
        one, two = collect(sub, 2)
        assert sub.ack(one)  # "committed"; two is lost in a crash
    assert two.payload == b"two"
    with MqttSubscriber(config, topics, client_id="acker", manual_ack=True) as sub:
        again = collect(sub, 1)[0]
        assert again.payload == b"two" and again.duplicate
        assert sub.ack(again)
        publish_once(config, "jobs/0000eeee/events", b"three")
        seen = until_payload(sub, b"three")
        for message in sub.messages(timeout=0):
            sub.ack(message)
    assert seen == [b"three"]
    assert not sub.ack(again)  # after stop: a stale mid is never acked blindly


def test_publish_to_dead_broker_raises_after_retries(broker) -> None:  # type: ignore[no-untyped-def]
    """Broker down: the one-shot publish gives up after its attempts with a typed,
    one-line error naming the broker."""
    config = broker.config()
    broker.terminate()
    with pytest.raises(BrokerUnavailable) as info:
        publish_once(config, "jobs/0000ffff/events", b"x", attempts=3, backoff_base=0.01)
    message = str(info.value)
    assert config.url in message and "after 3 attempts" in message and "\n" not in message


def test_subscriber_waits_for_a_broker_that_is_not_up_yet(  # type: ignore[no-untyped-def]
    broker, collect: Collect
) -> None:
    """Starting a subscriber while the broker is down is not an error: it connects later."""
    config: BrokerConfig = broker.config()
    broker.terminate()
    with MqttSubscriber(config, ["jobs/+/events"], reconnect_max_s=1) as sub:
        assert sub.state is ConnectionState.CONNECTING and not sub.wait_connected(0.2)
        broker.start()
        assert sub.wait_connected(15)
        publish_once(config, "jobs/00001111/events", b"late")
        assert [m.payload for m in collect(sub, 1)] == [b"late"]


def test_undecodable_message_never_escapes_into_paho(broker, collect: Collect) -> None:  # type: ignore[no-untyped-def]
    """An exception in on_message would kill paho's thread silently (FIELD-NOTES):
    a message whose topic is not UTF-8 is logged and dropped, and delivery goes on."""
    import paho.mqtt.client as mqtt

    with MqttSubscriber(broker.config(), ["jobs/+/events"]) as sub:
        assert sub.wait_connected(10)
        bad = mqtt.MQTTMessage(mid=1, topic=b"jobs/\xff/events")
        sub._on_message(None, None, bad)  # type: ignore[arg-type]
        publish_once(broker.config(), "jobs/00002222/events", b"still alive")
        assert [m.payload for m in collect(sub, 1)] == [b"still alive"]
