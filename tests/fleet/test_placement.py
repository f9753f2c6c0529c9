"""Placement: a job for a named node or `any`, chosen from the nodes the registry heard."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.errors import InvalidJobInput
from registry.jobs import Registry
from registry.nodes import NodeStore
from registry.placement import PlacementStore, check_requested
from registry.presence import Presence, departure
from registry.vocabulary import JobStatus, NodeLeft


def announce(nodes: NodeStore, name: str, *, slots: int = 2, used: int = 0, load: float = 0.1,
             agents: tuple[str, ...] = ("claude", "demo"), seq: int = 1) -> None:  # fmt: skip
    nodes.record(
        Presence(
            node=name,
            online=True,
            boot=1,
            seq=seq,
            host=name,
            slots=slots,
            slots_used=used,
            agents=dict.fromkeys(agents, "1.0"),
            load=(load, load, load),
        )
    )


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def place(registry: Registry, node: str, agent: str = "claude") -> tuple[str, PlacementStore]:
    placements = PlacementStore(registry.bus)
    with registry.db.transaction():
        job = registry.register("p", agent, "s")
        placements.request(job.job_id, node, agent)
    return job.job_id, placements


def test_any_picks_the_node_with_the_agent_and_most_free_slots(registry: Registry) -> None:
    nodes = NodeStore(registry.bus)
    announce(nodes, "busy", slots=4, used=3)
    announce(nodes, "roomy", slots=4, used=0, load=3.0)
    announce(nodes, "no-claude", slots=8, agents=("demo",))
    job_id, placements = place(registry, "any")
    placement = placements.get(job_id)
    assert placement is not None and placement.node == "roomy"
    assert registry.get(job_id).status == JobStatus.PENDING  # the node takes it, later


def test_slots_chosen_count_until_the_node_reports_them(registry: Registry) -> None:
    """Two placements in a row never share a node's last free slot."""
    announce(NodeStore(registry.bus), "box1", slots=1)
    first, placements = place(registry, "any")
    second, _ = place(registry, "any")
    assert placements.get(first).node == "box1"  # type: ignore[union-attr]
    waiting = placements.get(second)
    assert waiting is not None and waiting.node is None
    assert "no free slot (1/1)" in waiting.why()


def test_a_waiting_job_is_placed_when_a_node_appears(registry: Registry) -> None:
    nodes = NodeStore(registry.bus)
    job_id, placements = place(registry, "box2")
    waiting = placements.get(job_id)
    assert waiting is not None and waiting.node is None
    assert "box2 was never heard of" in waiting.why()
    nodes.record(departure("box2", 1, NodeLeft.LOST))
    assert placements.place_waiting() == []
    assert "box2 is offline (lost)" in placements.get(job_id).why()  # type: ignore[union-attr]
    announce(nodes, "box2", seq=2)
    placed = placements.place_waiting()
    assert [p.job_id for p in placed] == [job_id] and placed[0].node == "box2"
    assert "placed on node box2" in placements.get(job_id).why()  # type: ignore[union-attr]


def test_no_node_heard_of(registry: Registry) -> None:
    job_id, placements = place(registry, "any")
    assert "no node heard of" in placements.get(job_id).why()  # type: ignore[union-attr]


def test_named_node_without_the_agent_waits(registry: Registry) -> None:
    announce(NodeStore(registry.bus), "box1", agents=("demo",))
    job_id, placements = place(registry, "box1", agent="codex")
    assert "box1 has no codex" in placements.get(job_id).why()  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["", "a/b", "#", "x" * 70, "a\x1bb"])
def test_bad_node_requests(bad: str) -> None:
    with pytest.raises(InvalidJobInput):
        check_requested(bad)
