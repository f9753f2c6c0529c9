"""Jepsen-style: real processes, injected faults, and a checker over the full history.

Agents on two "hosts" publish with real `orchestrate publish` processes while
the nemesis kills and stops things; afterwards every event the registry holds
is compared with every publish the agents ran (``checker.py``):
0 acknowledged events lost, 0 terminal events lost, each (job, seq) applied
exactly once. The default run has one case (the faults but the partition,
well under 60 s); ``-m slow`` runs every fault, twice, on more jobs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from bus.mqtt import BrokerConfig, publish_once
from registry.events import build_event
from registry.signing import sign
from tests.jepsen.checker import Applied, History, Op, check
from tests.jepsen.cluster import Cluster
from tests.jepsen.conftest import MakeCluster
from tests.polling import poll_until


def acknowledged(cluster: Cluster, fault: str = "") -> int:
    return sum(1 for op in cluster.history.ops if op.outcome == "ok" and fault in op.fault)


def after(cluster: Cluster, more: int, fault: str = "") -> Callable[[], bool]:
    """A condition: ``more`` publishes acknowledged (during ``fault``) from now on."""
    start = acknowledged(cluster, fault)
    return lambda: acknowledged(cluster, fault) >= start + more


def run_agents(cluster: Cluster, kill_rate: float, nemesis: Callable[[], None]) -> None:
    """Every job's agent publishes until the nemesis is done, then ends its job."""
    done = threading.Event()
    agents = [
        threading.Thread(target=cluster.agent, args=(job, lambda: not done.is_set(), kill_rate))
        for job in cluster.jobs
    ]
    for thread in agents:
        thread.start()
    try:
        nemesis()
    finally:
        done.set()
        for thread in agents:
            thread.join(180)
    assert not any(thread.is_alive() for thread in agents), "an agent is stuck"


def settle_and_check(cluster: Cluster) -> None:
    """Heal, wait until every job ended with nothing missing, then check the history."""
    cluster.heal()
    try:
        poll_until(lambda: cluster.converged(cluster.jobs), 120, "every job to end, no gaps")
    finally:
        report = check(cluster.history, Applied.read(cluster.control), cluster.jobs)
        print(report.summary(), *flusher_logs(cluster), sep="\n")
    assert report.ok, report.summary()


def flusher_logs(cluster: Cluster) -> list[str]:
    """What the agent hosts' background flushers did (shown with -s, or on failure)."""
    logs = [home / "outbox" / "flusher.log" for home in cluster.agent_homes]
    return [line for log in logs if log.exists() for line in log.read_text().splitlines()]


def test_no_acknowledged_event_is_lost_across_crashes(make_cluster: MakeCluster) -> None:
    """Publisher kill -9, broker SIGTERM, ingest kill -9, and the case that lost 129
    of 6,150 before the outbox: broker kill -9 while ingest is down."""
    cluster = make_cluster(jobs=2, hosts=2)

    def nemesis() -> None:
        poll_until(after(cluster, 4), 60, "publishes before the faults")
        cluster.broker_sigterm()
        poll_until(after(cluster, 3), 60)
        cluster.ingest_kill()
        poll_until(after(cluster, 3), 60)
        cluster.broker_kill_with_ingest_down(until=after(cluster, 4, "ingest down"))
        poll_until(after(cluster, 3), 60)

    run_agents(cluster, kill_rate=0.2, nemesis=nemesis)
    settle_and_check(cluster)
    assert acknowledged(cluster, "ingest down") >= 4, "the broker held acknowledged events"
    assert cluster.history.count("crashed") >= 1, "no publisher was killed"


@pytest.mark.slow
def test_every_fault_twice_on_four_jobs(make_cluster: MakeCluster) -> None:
    """All five faults, the 8 s partition (SIGSTOP of the broker) included, two rounds."""
    cluster = make_cluster(jobs=4, hosts=2)

    def nemesis() -> None:
        for _round in range(2):
            poll_until(after(cluster, 4), 90)
            cluster.broker_sigterm()
            poll_until(after(cluster, 4), 90)
            cluster.ingest_kill()
            poll_until(after(cluster, 4), 90)
            cluster.broker_kill_with_ingest_down(until=after(cluster, 6, "ingest down"))
            poll_until(after(cluster, 4), 90)
            cluster.partition(8.0)
            poll_until(after(cluster, 4), 90)

    run_agents(cluster, kill_rate=0.15, nemesis=nemesis)
    settle_and_check(cluster)
    assert acknowledged(cluster, "partition") >= 1, "no publish rode out the partition"


@pytest.mark.slow
def test_the_faults_bite_a_puback_only_publisher(make_cluster: MakeCluster) -> None:
    """The checker against the path without an outbox (what `publish` did before):
    events acknowledged by the broker alone are gone after its kill -9 with ingest
    down, and the checker says so. Without this, a nemesis that missed would pass."""
    cluster = make_cluster(jobs=1, hosts=1)
    job = cluster.jobs[0]
    env = cluster.agent_env(job)
    config = BrokerConfig(
        "127.0.0.1", cluster.broker.port,
        username=env["MQTT_USERNAME"], password=env["MQTT_PASSWORD"],
    )  # fmt: skip
    history = History()

    def send(seq: int, name: str) -> None:
        event = sign(build_event(job, seq, name), cluster.tokens[job])
        publish_once(config, f"jobs/{job}/events", event.to_bytes(), retain=event.is_terminal)
        history.add(Op(job, name, "ok", event.to_dict(), 0))

    send(1, "started")
    poll_until(lambda: Applied.read(cluster.control).rows, 15, "the first event recorded")

    def five_more() -> bool:
        for seq in range(2, 7):
            send(seq, "progress")
        return True

    cluster.broker_kill_with_ingest_down(until=five_more)
    cluster.heal()
    report = check(history, Applied.read(cluster.control), [job])
    print(report.summary())
    assert len(report.lost_acknowledged) == 5 and not report.ok, report.summary()
