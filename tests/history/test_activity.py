"""Time in each activity, waits for a person, queue waits and tokens: the definitions of
``registry.history.schema`` worked out by hand on a small day of agents
(``scenarios.day_of_agents``), for the plain-Python reference and for Spark."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from registry.history.aggregate_py import aggregate_lines
from registry.history.facts import MALFORMED, fact_of_line
from tests.history.history_files import expected, outputs, write_export
from tests.history.scenarios import HOUR, MIN, T0, Lines, day_of_agents

CUTOFF = T0 + 3 * HOUR


def hour(n: int) -> datetime:
    return datetime.fromtimestamp((T0 + n * HOUR) / 1000, tz=UTC)


def picked(row: dict[str, Any]) -> dict[str, Any]:
    """The fields of a row that are not zero, empty or null (an error rate of 0 is kept)."""
    return {
        k: v for k, v in row.items() if v not in (0, None, []) or (v == 0.0 and k == "error_rate")
    }


# Worked out by hand from the docstring of day_of_agents.
HAND = {
    (0, "claude"): {"events": 2, "jobs_registered": 1, "jobs_started": 1, "queue_waits": 1,
                    "queue_wait_values": [10 * MIN], "starting_ms": MIN, "working_ms": 39 * MIN,
                    "waiting_ms": 10 * MIN},
    (0, "codex"): {"events": 1, "jobs_registered": 1, "jobs_started": 1, "queue_waits": 1,
                   "queue_wait_values": [10 * MIN], "working_ms": 30 * MIN},
    (1, "claude"): {"waiting_ms": HOUR},
    (1, "codex"): {"events": 2, "jobs_registered": 1, "jobs_started": 1, "retries": 1,
                   "queue_waits": 1, "queue_wait_values": [10 * MIN], "interrupted_ms": 30 * MIN,
                   "starting_ms": 5 * MIN, "working_ms": 15 * MIN},
    (2, "claude"): {"events": 4, "jobs_registered": 1, "jobs_completed": 1, "runs": 1,
                    "run_values": [150 * MIN], "waiting_ms": 20 * MIN, "working_ms": 10 * MIN,
                    "idle_ms": 10 * MIN, "asks": 1, "answered": 1,
                    "response_values": [90 * MIN], "error_rate": 0.0},
    (2, "codex"): {"events": 1, "jobs_started": 1, "queue_waits": 1, "queue_wait_values": [MIN],
                   "jobs_cancelled": 1, "starting_ms": 5 * MIN, "waiting_ms": 10 * MIN,
                   "working_ms": HOUR, "asks": 1, "response_values": [10 * MIN]},
}  # fmt: skip


def test_the_reference_gives_the_hand_worked_numbers() -> None:
    """Intervals split at hour boundaries (a 90-minute wait over three hours), a job
    started by its own first event, an interrupted job requeued and running again, a
    job still running at the cut-off counted up to it, a wait ended by a cancel (asked,
    not answered), events after a job's end changing nothing, usage placed at its
    transcript time."""
    result = aggregate_lines(day_of_agents().lines, CUTOFF)
    got = {}
    for row in result.hourly:
        index = int((row["hour"] - hour(0)).total_seconds() // 3600)
        core = {k: v for k, v in row.items() if not k.endswith(("_p50", "_p95"))}
        got[(index, row["agent"])] = {k: v for k, v in picked(core).items()
                                      if k not in ("hour", "agent")}  # fmt: skip
    assert got == HAND
    assert result.open_jobs == ["0000000b"]
    assert result.markers == [{"hour": hour(1), "restarts": 1}]
    (usage,) = result.usage
    assert picked(usage) == {"hour": hour(0), "agent": "claude", "model": "m1", "measured": True,
                             "messages": 1, "input_tokens": 100, "output_tokens": 20,
                             "cache_read_tokens": 1000}  # fmt: skip


def test_the_cut_off_defaults_to_the_newest_fact() -> None:
    """Without a cut-off a running job counts up to the input's last message (02:55)."""
    result = aggregate_lines(day_of_agents().lines)
    assert result.cutoff_ms == T0 + 175 * MIN
    codex_2 = next(r for r in result.hourly if r["hour"] == hour(2) and r["agent"] == "codex")
    assert codex_2["working_ms"] == 55 * MIN


@pytest.mark.parametrize(
    "payload",
    [
        {"event": "activity", "data": {"activity": "dancing"}},  # not an activity
        {"event": "activity", "data": "working"},  # data not an object
        {"event": "progress", "data": {"activity": "working"}, "at_ms": "soon"},
    ],
)
def test_a_bad_activity_event_is_malformed(payload: dict[str, Any]) -> None:
    line = Lines().add(T0, "job.event", "0000000a", **payload).lines[0]
    assert fact_of_line(line) == MALFORMED


@pytest.mark.parametrize(
    "fields",
    [{"input_tokens": -1}, {"output_tokens": 1.5}, {"measured": "yes"}, {"cost_micro_usd": -3}],
)
def test_a_bad_usage_message_is_malformed(fields: dict[str, Any]) -> None:
    line = Lines().usage(T0, "0000000a", T0, **fields).lines[0]
    assert fact_of_line(line) == MALFORMED


def test_usage_defaults_and_placement() -> None:
    """A usage message without at_ms counts at its bus time; no model is "unknown";
    missing token counts are 0."""
    line = Lines().add(T0 + 5, "job.usage", "0000000a", output_tokens=7).lines[0]
    fact = fact_of_line(line)
    assert not isinstance(fact, str) and fact is not None
    assert (fact.ts_ms, fact.model, fact.input_tokens, fact.output_tokens, fact.measured) == (
        T0 + 5,
        "unknown",
        0,
        7,
        False,
    )


@pytest.mark.spark
def test_spark_gives_the_hand_worked_numbers(spark: Any, tmp_path: Path) -> None:
    """Spark's build of the same day equals the reference at the same cut-off, and
    does so again when the day arrives in three incremental builds, one of them only
    moving the cut-off (the job still running runs on)."""
    from registry.history.spark_job import run_build

    lines = day_of_agents().lines
    state_dir = tmp_path / "state"
    write_export(state_dir, lines[:9])
    run_build(spark, state_dir, cutoff_ms=T0 + 66 * MIN)
    assert outputs(state_dir) == expected(lines[:9], state_dir)
    write_export(state_dir, lines[9:], append=True)
    run_build(spark, state_dir)
    run_build(spark, state_dir, cutoff_ms=CUTOFF)  # nothing new: the cut-off moved
    incremental = outputs(state_dir)
    reference = aggregate_lines(lines, CUTOFF)
    assert incremental == (reference.hourly, reference.usage, reference.markers, ["0000000b"])
    run_build(spark, state_dir, full=True, cutoff_ms=CUTOFF)
    assert outputs(state_dir) == incremental
