"""Presence messages: what a node may say about itself, and the order they count in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bus.db import BusDB
from bus.messages import Bus
from bus.text import is_hidden
from registry.nodes import NodeStore
from registry.presence import InvalidPresence, Presence, departure, parse_presence
from registry.vocabulary import NodeLeft

HIDDEN = st.characters().filter(is_hidden)


def announcement(seq: int, boot: int = 1000, **changes: object) -> Presence:
    fields: dict[str, object] = {
        "node": "box2",
        "online": True,
        "boot": boot,
        "seq": seq,
        "host": "box2.lan",
        "agents": {"claude": "2.1.197", "demo": "0.1.0"},
        "slots": 4,
        "slots_used": 1,
        "load": (0.5, 0.4, 0.3),
        "period_s": 30.0,
    }
    fields.update(changes)
    return Presence(**fields)  # type: ignore[arg-type]


def test_round_trip() -> None:
    """What a node writes, the control room reads back as it was."""
    sent = announcement(7)
    assert parse_presence("box2", sent.to_json()) == sent
    gone = departure("box2", 1000, NodeLeft.LOST)
    assert parse_presence("box2", gone.to_json()) == gone


def test_another_nodes_name_is_refused() -> None:
    """The ACL lets box1 write only box1's topic; a payload naming box2 there is refused."""
    with pytest.raises(InvalidPresence, match="names node 'box2' on 'box1'"):
        parse_presence("box1", announcement(1).to_json())


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"v": 2}, "version"),
        ({"online": "yes"}, "online"),
        ({"seq": -1}, "seq"),
        ({"slots": 5000}, "slots"),
        ({"load": [1, 2]}, "load"),
        ({"load": [1, 2, float("nan")]}, "load"),
        ({"agents": {"Bad Kind": "1"}}, "agent"),
        ({"agents": {"claude": 3}}, "agent version"),
        ({"host": ""}, "host"),
        ({"period_s": 0}, "period_s"),
        ({"left": "exploded", "online": False}, "left"),
    ],
)
def test_malformed_presence_is_refused(change: dict[str, object], reason: str) -> None:
    body = json.loads(announcement(1).to_json())
    body.update(change)
    with pytest.raises(InvalidPresence, match=reason):
        parse_presence("box2", json.dumps(body).encode())


@pytest.mark.parametrize("payload", [b"", b"\xff", b"[]", b"x" * 20_000])
def test_not_a_presence_is_refused(payload: bytes) -> None:
    with pytest.raises(InvalidPresence):
        parse_presence("box2", payload)


@given(text=st.text(min_size=0, max_size=20), hidden=HIDDEN, where=st.sampled_from(["host", "v"]))
def test_hidden_characters_are_refused(text: str, hidden: str, where: str) -> None:
    """A host name or agent version with a hidden character (bus/text.py) is refused
    whole: it would reach the operator's terminal and the control room's tables."""
    bad = text + hidden + text
    changes: dict[str, object] = {"host": bad} if where == "host" else {"agents": {"claude": bad}}
    sent = announcement(1, **changes)
    with pytest.raises(InvalidPresence, match="hidden"):
        parse_presence("box2", sent.to_json())


@pytest.fixture
def store(tmp_path: Path) -> NodeStore:
    return NodeStore(Bus(BusDB(tmp_path / "state")))


def test_newest_announcement_wins(store: NodeStore) -> None:
    """A redelivered older announcement never undoes a newer one."""
    assert store.record(announcement(2, slots_used=2), at_ms=5_000) == "recorded"
    assert store.record(announcement(1, slots_used=0), at_ms=6_000) == "stale"
    node = store.get("box2", at_ms=6_000)
    assert node is not None and node.online and node.slots_used == 2 and node.slots_free == 2
    assert node.last_seen_ms == 5_000


def test_will_then_reconnect_in_the_same_boot(store: NodeStore) -> None:
    """The broker gives a cut-off node up (its will), the node comes back with the same
    boot and a higher count: online again. An old announcement after the will is not."""
    store.record(announcement(3), at_ms=1_000)
    store.record(departure("box2", 1000, NodeLeft.LOST), at_ms=2_000)
    gone = store.get("box2", at_ms=2_000)
    assert gone is not None and not gone.online and gone.left is NodeLeft.LOST
    assert store.record(announcement(3), at_ms=2_500) == "stale"
    assert store.record(announcement(4), at_ms=3_000) == "recorded"
    back = store.get("box2", at_ms=3_000)
    assert back is not None and back.online and back.left is None


def test_a_late_will_of_an_old_boot_is_ignored(store: NodeStore) -> None:
    """Restarted (a new boot), the node's old will arriving late leaves it online."""
    store.record(announcement(1, boot=2000), at_ms=1_000)
    assert store.record(departure("box2", 1000, NodeLeft.LOST), at_ms=1_100) == "stale"
    node = store.get("box2", at_ms=1_100)
    assert node is not None and node.online


def test_silent_node_goes_stale(store: NodeStore) -> None:
    """Online but unheard for three of its periods: not counted online."""
    store.record(announcement(1, period_s=10.0), at_ms=0)
    fresh = store.get("box2", at_ms=30_000)
    stale = store.get("box2", at_ms=40_000)
    assert fresh is not None and fresh.online and not fresh.stale
    assert stale is not None and not stale.online and stale.stale


def test_record_message_checks_the_topic(store: NodeStore) -> None:
    payload = announcement(1).to_json()
    assert store.record_message("jobs", "jobs/nodes/box2/presence", payload) == "recorded"
    with pytest.raises(InvalidPresence):
        store.record_message("jobs", "jobs/box2/events", payload)
    with pytest.raises(InvalidPresence, match="names node"):
        store.record_message("jobs", "jobs/nodes/box1/presence", payload)
