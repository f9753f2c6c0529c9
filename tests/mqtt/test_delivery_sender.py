"""The outbox and its senders on a real Mosquitto, with a consumer that confirms (bus only)."""

from __future__ import annotations

import threading
from pathlib import Path

from bus.delivery_outbox import Confirmation, Outbox
from bus.delivery_sender import OutboxFlusher, deliver
from bus.mqtt import MqttSubscriber
from tests.plugin.mosquitto import RunningBroker
from tests.polling import poll_until


class Consumer:
    """Takes s/data, confirms (retained) on s/ack what it holds; can drop, forget, restart."""

    def __init__(self, broker: RunningBroker, epoch: str = "one") -> None:
        self.sub = MqttSubscriber(broker.config(), ["s/data"])
        self.held: set[int] = set()
        self.epoch = epoch
        self.dropping = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Consumer:
        self.sub.start()
        assert self.sub.wait_connected(10)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sub.stop()

    def confirm(self) -> None:
        through = max(self.held, default=0)
        missing = tuple((p, p) for p in range(1, through) if p not in self.held)
        self.sub.publish("s/ack", Confirmation(through, missing, False, self.epoch).to_bytes(),
                         retain=True)  # fmt: skip

    def _run(self) -> None:
        while not self._stop.is_set():
            message = self.sub.get(timeout=0.05)
            if message is not None and not self.dropping:
                self.held.add(int(message.payload))
                self.confirm()


def test_deliver_returns_after_puback_with_the_confirmation(broker, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    box = Outbox(tmp_path / "outbox.db")
    with Consumer(broker):
        message = box.append(
            "s", "s/ack", broker.config().url, lambda pos: ("s/data", b"%d" % pos, False)
        )
        confirmation = deliver(broker.config(), message, "s/ack", confirm_wait=10)
    assert confirmation is not None and confirmation.has(1)


def test_the_flusher_sends_again_what_a_restarted_consumer_lost(  # type: ignore[no-untyped-def]
    broker: RunningBroker, tmp_path: Path
) -> None:
    """A consumer that lost what it got (its first epoch dropped 3 and 4) says so under a
    new epoch: the flusher sends everything unconfirmed again and exits once all is held."""
    config = broker.config()
    path = tmp_path / "outbox.db"
    box = Outbox(path)  # this thread's; the flusher opens its own in its thread
    for _ in range(4):
        box.append("s", "s/ack", config.url, lambda pos: ("s/data", b"%d" % pos, False))
    flushers: list[OutboxFlusher] = []
    left: list[int] = []

    def flush() -> None:
        flushers.append(OutboxFlusher(Outbox(path), config, idle_exit_s=0.2, resend_after_s=3600))
        left.append(flushers[0].run(threading.Event()))

    with Consumer(broker) as consumer:
        consumer.held = {1, 2}
        consumer.dropping = True
        consumer.confirm()
        runner = threading.Thread(target=flush)
        runner.start()
        poll_until(lambda: flushers and flushers[0].stats.confirmed >= 2, 15, "1, 2 confirmed")
        assert box.pending_count() == 2  # 3 and 4 went to a consumer that dropped them
        consumer.dropping, consumer.epoch = False, "two"
        consumer.confirm()
        runner.join(30)
    assert left == [0] and box.pending_count() == 0 and consumer.held == {1, 2, 3, 4}
    assert flushers[0].stats.resent >= 2
