"""The job registry on a real SQLite file: records, state machine, events, gaps, leases."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from bus import claims
from bus.db import BusDB
from bus.errors import SchemaTooNew
from bus.messages import Bus
from registry import store
from registry.errors import (
    DuplicateEvent,
    EventAfterTerminal,
    IllegalTransition,
    InvalidEvent,
    InvalidJobInput,
    JobNotFound,
    NoPendingJob,
    SignatureError,
    UnknownStatus,
)
from registry.events import build_event
from registry.jobs import Registry
from registry.records import account_seq
from registry.signing import sign


@pytest.fixture
def registry(tmp_path: Path) -> Registry:
    return Registry.open(tmp_path / "state")


def dump(registry: Registry) -> list[str]:
    """Every row of the database, to prove a refused input changed nothing."""
    conn = sqlite3.connect(registry.db.path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def messages(registry: Registry, kind: str) -> list[dict[str, object]]:
    return [m.payload for m in registry.bus.read_after(0, limit=100_000) if m.type == kind]


def test_register_record_has_the_seed_schema(registry: Registry) -> None:
    """A registered job carries every seed 001 field with its defaults."""
    job = registry.register("write sort_problems.md", "claude-code", "tmux:claude")
    record = job.to_dict(show_token=True)
    assert len(job.job_id) == 8 and int(job.job_id, 16) >= 0
    assert record["schema_version"] == 1
    assert record["status"] == "pending"
    assert record["topic_prefix"] == f"jobs/{job.job_id}"
    assert job.events_topic == f"jobs/{job.job_id}/events"
    assert (record["timeout_sec"], record["idle_timeout_sec"]) == (3600, 120)
    assert record["last_seq"] == 0 and record["retry_count"] == 0
    assert isinstance(record["auth_token"], str) and len(record["auth_token"]) >= 40
    assert record["created_at"].endswith("Z") and record["broker"] is None
    assert job.to_dict()["auth_token"] != record["auth_token"]  # hidden by default
    registered = messages(registry, "job.registered")
    assert registered == [
        {
            "job_id": job.job_id,
            "agent": "claude-code",
            "agent_session": "tmux:claude",
            "created_at": job.created_at,
        }
    ]
    assert registry.get(job.job_id) == job


def test_register_options_and_no_sign(registry: Registry) -> None:
    job = registry.register(
        "p",
        "codex",
        "tmux:codex",
        timeout_sec=60,
        idle_timeout_sec=5,
        expected_artifacts=["a.md", "b.md"],
        broker={"host": "mq.local", "port": 8883, "tls": True, "password": "pw"},
        sign_events=False,
    )
    assert job.auth_token is None and job.expected_artifacts == ["a.md", "b.md"]
    assert job.broker == {
        "host": "mq.local",
        "port": 8883,
        "tls": True,
        "username": None,
        "password": "pw",
    }
    assert job.to_dict()["broker"]["password"] != "pw"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"prompt": ""}, "prompt must not be empty"),
        ({"prompt": "   "}, "prompt must not be empty"),
        ({"agent": ""}, "agent must not be empty"),
        ({"agent_session": "two words"}, "agent_session"),
        ({"timeout_sec": 0}, "timeout"),
        ({"idle_timeout_sec": -1}, "idle timeout"),
        ({"timeout_sec": 2**63 - 1}, "timeout must be at most 2592000 seconds"),
        ({"idle_timeout_sec": 10**23}, "idle timeout must be at most"),
        ({"expected_artifacts": [""]}, "artifact"),
        ({"broker": {"host": "h", "port": 70000}}, "port"),
    ],
)
def test_register_refuses_bad_input(
    registry: Registry, kwargs: dict[str, object], message: str
) -> None:
    before = dump(registry)
    args: dict[str, object] = {"prompt": "p", "agent": "a", "agent_session": "s"} | kwargs
    with pytest.raises(InvalidJobInput, match=message):
        registry.register(**args)  # type: ignore[arg-type]
    assert dump(registry) == before


def test_lifecycle_through_events(registry: Registry) -> None:
    """started -> running, progress keeps it running, completed is terminal."""
    job = registry.register("p", "a", "tmux:a")
    assert registry.publish(job.job_id, "started", "booted").status == "running"
    assert registry.publish(job.job_id, "progress", "half", {"pct": 50}).status == "running"
    done = registry.publish(job.job_id, "completed", "all done")
    assert (done.seq, done.status) == (3, "completed")
    record = registry.get(job.job_id)
    assert record.last_seq == 3 and record.completed_at is not None
    assert record.result == {"event": "completed", "seq": 3, "detail": "all done"}
    events = [m for m in registry.bus.read_after(0) if m.type == "job.event"]
    assert [m.id for m in events] == [f"{job.job_id}:{n}" for n in (1, 2, 3)]
    assert all(m.from_agent == job.job_id and m.correlation_id == job.job_id for m in events)
    assert events[1].payload["data"]["pct"] == 50 and "hmac_sig" in events[1].payload["data"]
    statuses = [(p["from"], p["to"]) for p in messages(registry, "job.status")]
    assert statuses == [("pending", "running"), ("running", "completed")]
    assert "completed at" in registry.why(job.job_id)
    # claims: the job's task is settled, so nothing is left to pick.
    assert claims.get(registry.db.conn, job.job_id).state == "done"
    with pytest.raises(NoPendingJob):
        registry.pick("tmux:a")


def test_seq_survives_restart(registry: Registry, tmp_path: Path) -> None:
    job = registry.register("p", "a", "s")
    registry.publish(job.job_id, "started")
    assert registry.next_seq(job.job_id) == 2
    reopened = Registry.open(tmp_path / "state")
    assert reopened.publish(job.job_id, "progress").seq == 3


def test_refused_events_store_nothing(registry: Registry) -> None:
    """Forged, unsigned, duplicate, late and malformed events each raise and change nothing."""
    job = registry.register("p", "a", "s")
    registry.publish(job.job_id, "started")
    token = registry.get(job.job_id).auth_token
    assert token is not None
    before = dump(registry)
    unsigned = build_event(job.job_id, 2, "progress", "x")
    with pytest.raises(SignatureError, match="missing signature"):
        registry.record_event(unsigned)
    with pytest.raises(SignatureError, match="mismatch"):
        registry.record_event(sign(unsigned, "not-the-token"))
    with pytest.raises(DuplicateEvent, match="duplicate seq 1"):
        registry.record_event(sign(build_event(job.job_id, 1, "progress"), token))
    wrong_version = sign(unsigned, token).to_dict() | {"schema_version": 2}
    with pytest.raises(InvalidEvent, match="schema_version"):
        registry.record_event(json.dumps(wrong_version))
    with pytest.raises(InvalidEvent):
        registry.record_event(b"{not json")
    with pytest.raises(InvalidEvent, match="limit"):
        registry.publish(job.job_id, "progress", "big", {"blob": "x" * 40_000})
    with pytest.raises(JobNotFound):
        registry.record_event(build_event("0badf00d", 1, "started"))
    assert dump(registry) == before

    registry.publish(job.job_id, "error", "validation failed")
    after_terminal = dump(registry)
    with pytest.raises(EventAfterTerminal, match="after the job was error"):
        registry.record_event(sign(build_event(job.job_id, 9, "progress", "late"), token))
    assert dump(registry) == after_terminal


def test_unsigned_job_accepts_unsigned_events(registry: Registry) -> None:
    job = registry.register("p", "a", "s", sign_events=False)
    recorded = registry.record_event(build_event(job.job_id, 1, "started").to_bytes(), via="mqtt")
    assert recorded.status == "running"
    entries = list(registry.audit.iter_events(job.job_id))
    assert [e["kind"] for e in entries] == ["registered", "received", "status_changed"]


def test_gaps_are_recorded_and_closed(registry: Registry) -> None:
    """Seqs that skip ahead are remembered as missing until they arrive."""
    job = registry.register("p", "a", "s", sign_events=False)
    for seq in (1, 2, 5, 8):
        registry.record_event(build_event(job.job_id, seq, "progress"))
    record = registry.get(job.job_id)
    assert record.missing_seqs == [[3, 4], [6, 7]] and record.missing_count == 4
    registry.record_event(build_event(job.job_id, 3, "progress"))
    registry.record_event(build_event(job.job_id, 7, "progress"))
    record = registry.get(job.job_id)
    assert record.missing_seqs == [[4, 4], [6, 6]] and record.last_seq == 8
    assert registry.publish(job.job_id, "completed").seq == 9


def test_account_seq_splits_ranges() -> None:
    assert account_seq([], 0, 1) == ([], 1)
    assert account_seq([], 2, 6) == ([[3, 5]], 6)
    assert account_seq([[3, 5]], 6, 4) == ([[3, 3], [5, 5]], 6)


def test_terminal_event_on_pending_job_passes_through_running(registry: Registry) -> None:
    job = registry.register("p", "a", "s")
    assert registry.publish(job.job_id, "completed", "quick").status == "completed"
    moves = [(c.from_state, c.to_state) for c in registry.history(job.job_id)]
    assert moves == [(None, "pending"), ("pending", "running"), ("running", "completed")]


def test_set_status_cancel_resume(registry: Registry) -> None:
    job = registry.register("p", "a", "s")
    with pytest.raises(UnknownStatus, match="bogus"):
        registry.set_status(job.job_id, "bogus")
    with pytest.raises(JobNotFound):
        registry.set_status("deadbeef", "running")
    registry.set_status(job.job_id, "running")
    registry.set_status(job.job_id, "completed")
    before = dump(registry)
    with pytest.raises(IllegalTransition, match="completed to running"):
        registry.set_status(job.job_id, "running")
    with pytest.raises(IllegalTransition):
        registry.resume(job.job_id)
    assert dump(registry) == before

    other = registry.register("p", "a", "s")
    registry.publish(other.job_id, "started")
    late_seq = registry.next_seq(other.job_id)  # allocated by a publisher, still in flight
    assert registry.cancel(other.job_id).status == "cancelled"
    with pytest.raises(EventAfterTerminal):
        registry.publish(other.job_id, "progress")
    resumed = registry.resume(other.job_id)
    assert resumed.status == "pending" and resumed.completed_at is None
    token = resumed.auth_token
    assert token is not None
    with pytest.raises(EventAfterTerminal, match="before the job was resumed"):
        registry.record_event(sign(build_event(other.job_id, late_seq, "progress"), token))
    assert registry.pick("s").job_id == other.job_id  # queued again
    assert "resumed 1\u00d7" in registry.why(other.job_id)


def test_a_follow_up_runs_a_completed_job_again(registry: Registry) -> None:
    """A person's follow-up to a completed job's agent: running again (same attempt,
    same seqs, events accepted), completing again later; only by that name (`job status
    --set running` stays refused) and only from completed."""
    job = registry.register("p", "a", "s")
    registry.publish(job.job_id, "started")
    with pytest.raises(IllegalTransition, match="cannot follow_up from running"):
        registry.follow_up(job.job_id)
    registry.set_status(job.job_id, "completed", "agent finished its turn")
    assert registry.get(job.job_id).completed_at is not None
    again = registry.follow_up(job.job_id, "follow-up from ann (control room)")
    assert again.status == "running" and again.completed_at is None
    assert again.activity == "starting" and again.lease_until is not None
    assert "running since" in registry.why(job.job_id)
    assert "follow-up from ann (control room)" in registry.why(job.job_id)
    assert registry.publish(job.job_id, "progress", "more").event.seq == 2  # same attempt
    registry.set_status(job.job_id, "completed", "agent finished its turn")
    assert "followed up 1\u00d7" in registry.why(job.job_id)
    assert "completed at" in registry.why(job.job_id)
    for refused in ("pending", "error", "cancelled"):
        other = registry.register("p", "a", "s")
        if refused != "pending":
            registry.set_status(other.job_id, refused)
        before = dump(registry)
        with pytest.raises(IllegalTransition, match=f"cannot follow_up from {refused}"):
            registry.follow_up(other.job_id)
        assert dump(registry) == before


def test_pick_is_oldest_first_and_per_label(registry: Registry) -> None:
    first = registry.register("p1", "a", "tmux:a")
    theirs = registry.register("p2", "a", "tmux:b")
    second = registry.register("p3", "a", "tmux:a")
    picked = registry.pick("tmux:a")
    assert picked.job_id == first.job_id and picked.status == "running"
    assert picked.lease_until is not None and picked.claimed_at is not None
    assert registry.pick("tmux:a").job_id == second.job_id
    with pytest.raises(NoPendingJob, match="tmux:a"):
        registry.pick("tmux:a")
    assert registry.pick("tmux:b").job_id == theirs.job_id
    assert "picked by tmux:a" in registry.why(first.job_id)


def test_lease_expiry_returns_job_to_pending(registry: Registry) -> None:
    """A running job whose lease runs out goes back to pending with retry_count + 1."""
    job = registry.register("p", "a", "s", timeout_sec=1)
    registry.pick("s")
    deadline = time.monotonic() + 10
    moved: list[str] = []
    while not moved and time.monotonic() < deadline:
        moved = registry.expire_leases()
        time.sleep(0.05)
    assert moved == [job.job_id]
    record = registry.get(job.job_id)
    assert (record.status, record.retry_count) == ("pending", 1)
    assert "retried 1\u00d7 after lease expiry" in registry.why(job.job_id)
    assert registry.pick("s").job_id == job.job_id


def test_list_filters(registry: Registry) -> None:
    a = registry.register("p", "a", "s1")
    b = registry.register("p", "a", "s2")
    registry.pick("s2")
    assert [j.job_id for j in registry.list()] == [a.job_id, b.job_id]
    assert [j.job_id for j in registry.list(status="running")] == [b.job_id]
    assert [j.job_id for j in registry.list(agent_session="s1")] == [a.job_id]
    with pytest.raises(UnknownStatus):
        registry.list(status="nope")


def test_registry_schema_refuses_newer(tmp_path: Path) -> None:
    Registry.open(tmp_path / "state")
    db = BusDB(tmp_path / "state")
    db.conn.execute("UPDATE meta SET value = '99' WHERE key = ?", (store.VERSION_KEY,))
    with pytest.raises(SchemaTooNew, match="upgrade"):
        Registry(Bus(BusDB(tmp_path / "state")))


@pytest.mark.parametrize(
    ("topic_prefix", "ingest_prefix"),
    [
        ("jobs/abcdef12", "jobs"),
        ("team/x", "team"),
        ("team/x/", "team"),
        ("a/b/c", "a/b"),
        ("solo", None),  # <prefix>/+/events never matches solo/events
        ("/x", None),  # nor /x/events: --prefix strips the leading slash
        ("/team/x", None),
    ],
)
def test_which_ingest_prefix_hears_a_topic_prefix(
    topic_prefix: str, ingest_prefix: str | None
) -> None:
    from registry.records import ingest_prefix_for

    assert ingest_prefix_for(topic_prefix) == ingest_prefix
