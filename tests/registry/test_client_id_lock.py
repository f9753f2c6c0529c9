"""registry.mqtt_source.ClientIdLock: one holder of a subscriber's client id per host
and user, across processes; the lock ends with its holder."""

from __future__ import annotations

import subprocess
import sys
import uuid

from registry.mqtt_source import ClientIdLock


def test_one_holder_at_a_time_and_release_hands_it_on() -> None:
    client_id = f"orch-test-{uuid.uuid4().hex[:8]}"
    first, second = ClientIdLock(client_id), ClientIdLock(client_id)
    assert first.acquire()
    assert not second.acquire()
    first.release()
    assert second.acquire()
    second.release()


def test_another_process_holding_it_keeps_it_until_it_ends() -> None:
    client_id = f"orch-test-{uuid.uuid4().hex[:8]}"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from registry.mqtt_source import ClientIdLock; "
            f"lock = ClientIdLock({client_id!r}); assert lock.acquire(); "
            "print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "held"
    lock = ClientIdLock(client_id)
    assert not lock.acquire()
    holder.stdin.close()  # the holder ends without releasing: its lock goes with it
    holder.wait(timeout=10)
    assert lock.acquire()
    lock.release()
