"""The record handling the job, session and review stores share (``registry.store``):
one write with after-commit actions, one not-found error per kind, one history, one
JSON form; and the job registry holds its store rather than being one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from bus.db import BusDB
from bus.messages import Bus
from registry.errors import JobNotFound, SessionNotFound
from registry.jobs import Registry
from registry.jobstore import JOBS, JobStore
from registry.review import ReviewNotFound, ReviewStore
from registry.sessions import SessionStore
from registry.store import Records, record_dict


@pytest.fixture
def bus(tmp_path: Path) -> Bus:
    return Bus(BusDB(tmp_path / "state"))


@dataclass(frozen=True)
class Inner:
    a: int


@dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner | None
    parts: tuple[str, ...]
    hidden_ms: int = 0


def test_record_dict_is_the_fields_in_order_as_json_would_have_them() -> None:
    shown = record_dict(Outer("x", Inner(1), ("p", "q"), 5), omit=("hidden_ms",))
    assert shown == {"name": "x", "inner": {"a": 1}, "parts": ["p", "q"]}
    assert list(shown) == ["name", "inner", "parts"]


def test_each_kind_says_which_record_is_missing(bus: Bus) -> None:
    registry = Registry(bus, audited=False)
    with pytest.raises(JobNotFound, match="no job 'nope'"):
        registry.get("nope")
    with pytest.raises(SessionNotFound, match="no session 'nope'"):
        SessionStore(bus).history("nope")
    with pytest.raises(ReviewNotFound, match="did not run in a work tree"):
        ReviewStore(bus).get("nope")


def test_the_registry_holds_its_store(bus: Bus) -> None:
    """Composition: the jobs API holds a JobStore (and that its Records), it is not one."""
    registry = Registry(bus, audited=False)
    assert not isinstance(registry, JobStore)
    assert isinstance(registry.store, JobStore) and registry.store.records.kind is JOBS
    job = registry.register("do it", "custom", "alpha")
    assert registry.store.get(job.job_id) == registry.get(job.job_id)
    assert [change.to_state for change in registry.history(job.job_id)] == ["pending"]


def test_actions_run_after_the_outermost_commit_only(bus: Bus) -> None:
    records = Records(bus, JOBS)
    ran: list[str] = []
    with records.write():
        with records.write():
            records.after_commit(lambda: ran.append("inner"))
        assert ran == []  # the outer write has not committed yet
    assert ran == ["inner"]
    with pytest.raises(RuntimeError), records.write():
        records.after_commit(lambda: ran.append("dropped"))
        raise RuntimeError("rolled back")
    assert ran == ["inner"]


def test_unaudited_records_queue_nothing(bus: Bus) -> None:
    records = Records(bus, JOBS, audited=False)
    ran: list[str] = []
    with records.write():
        records.after_commit(lambda: ran.append("audit"))
    assert ran == []
