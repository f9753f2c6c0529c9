"""A cluster of real processes for the Jepsen-style suite (see cluster.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.jepsen.cluster import Cluster, Ingest, broker_users, register_jobs
from tests.plugin.mosquitto import RunningBroker

MakeCluster = Callable[..., Cluster]


@pytest.fixture
def make_cluster(
    make_broker: Callable[..., RunningBroker], tmp_path: Path
) -> Iterator[MakeCluster]:
    """``make_cluster(jobs=2, hosts=2)``: jobs registered on a control room, a hardened
    broker (a worker account per agent host, the generated control account for
    ingest), ingest running. Everything is stopped afterwards."""
    made: list[Cluster] = []

    def make(jobs: int = 2, hosts: int = 2) -> Cluster:
        control = tmp_path / "control"
        homes = [tmp_path / f"agent-host-{n}" for n in range(hosts)]
        tokens, placed = register_jobs(control, jobs, homes)
        broker = make_broker(users=broker_users(homes, placed))
        cluster = Cluster(broker, control, homes, Ingest(control, {}), tokens, placed)
        cluster.jobs = list(tokens)
        cluster.ingest.env = cluster.control_env()
        made.append(cluster)
        cluster.ingest.start()
        return cluster

    yield make
    for cluster in made:
        cluster.shutdown()
