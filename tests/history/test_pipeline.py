"""The Spark history job: exact aggregates, incremental == full, malformed lines, a real
multi-JVM cluster, and recovery from an interrupted append."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from registry.history.schema import KEPT_TYPES, HistoryPaths
from tests.history.history_files import (
    MALFORMED,
    ClusterBuild,
    copy_state,
    expected,
    outputs,
    write_export,
)

pytestmark = pytest.mark.spark


def build(spark: Any, state_dir: Path, **kwargs: Any) -> Any:
    from registry.history.spark_job import run_build

    return run_build(spark, state_dir, **kwargs)


def test_aggregates_equal_plain_python(built: Path, events: list[str]) -> None:
    """Every number Spark writes (counts, exact p50/p95 and their values, error rate,
    time in each activity split at hour boundaries, waits for a person, tokens,
    markers, the jobs still running at the cut-off) equals the plain-Python
    reference, so the definitions in schema.py are what users see."""
    rows, usage, markers, open_jobs = outputs(built)
    assert (rows, usage, markers, open_jobs) == expected(events, built)
    assert len(rows) > 8 and any(row["runs"] > 20 for row in rows)
    assert sum(m["restarts"] for m in markers) > 0
    for activity in ("working", "idle", "waiting", "interrupted", "stalled", "exited"):
        assert sum(row[f"{activity}_ms"] for row in rows), activity
    assert sum(row["asks"] for row in rows) > sum(row["answered"] for row in rows) > 20
    assert sum(row["retries"] for row in rows) and sum(row["jobs_cancelled"] for row in rows)
    # waits for a person longer than an hour: their time is split across the hours
    assert max(ms for row in rows for ms in row["response_values"]) > 3_600_000
    assert len(open_jobs) > 10 and {row["measured"] for row in usage} == {True, False}


def test_malformed_lines_are_skipped_and_counted(built: Path, events: list[str]) -> None:
    """Bad lines never fail a build: each is counted once in state.json."""
    state = json.loads((built / "history" / "state.json").read_text())
    assert state["malformed_total"] == len(MALFORMED)
    assert state["malformed_last"] == len(MALFORMED)
    kept_seqs = [m["seq"] for m in map(json.loads, events) if m["type"] in KEPT_TYPES]
    assert state["facts_rows"] == len(kept_seqs)
    assert state["max_seq"] == max(kept_seqs)


def test_incremental_build_equals_full_build(spark: Any, events: list[str], tmp_path: Path):
    """Builds that each see only new lines (jobs started in one build and ended in the
    next, a line torn mid-write) end up exactly where one full build does."""
    state_dir = tmp_path / "state"
    cut, torn_at = 3700, 4800
    write_export(state_dir, events[:cut])
    assert build(spark, state_dir).full
    # new lines, and the exporter caught mid-write: the last line has no newline yet
    write_export(state_dir, [*events[cut:torn_at], events[torn_at][:30]], append=True)
    second = build(spark, state_dir)
    assert not second.full and second.lines_read == torn_at - cut and second.malformed == 0
    write_export(state_dir, [events[torn_at][30:], *events[torn_at + 1 :]], append=True)
    third = build(spark, state_dir)
    assert not third.full and third.lines_read == len(events) - torn_at
    assert third.malformed == 0
    incremental = outputs(state_dir)
    state = json.loads((state_dir / "history" / "state.json").read_text())
    assert state["mode"] == "incremental"

    full = build(spark, state_dir, full=True)
    assert full.full and full.facts_rows == state["facts_rows"]
    assert outputs(state_dir) == incremental
    assert incremental == expected(events, state_dir)

    again = build(spark, state_dir)  # nothing new: a no-op that keeps the aggregates
    assert not again.full and again.new_facts == 0 and again.lines_read == 0
    assert outputs(state_dir) == incremental


def test_interrupted_append_is_rolled_back(spark: Any, built: Path, tmp_path: Path) -> None:
    """Facts appended by a build that died before moving its watermark are removed by
    the next build instead of being counted twice."""
    state_dir = copy_state(built, tmp_path / "state")
    before = outputs(state_dir)
    facts = state_dir / "history" / "facts"
    known = sorted(str(p.relative_to(facts)) for p in facts.rglob("*") if p.is_file())
    journal = {"build_id": "died-before-its-watermark", "known": known}
    (state_dir / "history" / "append-journal.json").write_text(json.dumps(journal))
    victim = next(facts.rglob("*.parquet"))
    shutil.copy(victim, victim.with_name("part-99999-duplicate.parquet"))
    restart = {"id": "r", "ts_ms": 1767300000000, "from_agent": "hq", "type": "control.started"}
    extra = [json.dumps({**restart, "seq": 10_000 + n}) + "\n" for n in range(3)]
    write_export(state_dir, extra, append=True)  # lines after the watermark
    build(spark, state_dir)
    assert not (victim.with_name("part-99999-duplicate.parquet")).exists()
    assert not (state_dir / "history" / "append-journal.json").exists()
    assert outputs(state_dir) != before


def test_a_full_build_killed_after_its_swap_is_redone_not_doubled(
    spark: Any, events: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A --full build stopped (Ctrl-C, the TUI closing) after the new facts are in but
    before its watermark is saved: the next build must not append the new lines again
    on top of facts that already hold them."""
    from registry.history import spark_job

    state_dir = tmp_path / "state"
    write_export(state_dir, events[:3000])
    build(spark, state_dir)
    write_export(state_dir, events[3000:], append=True)

    def interrupted(facts: Any, cutoff_ms: int) -> Any:
        raise KeyboardInterrupt  # what SIGINT raises mid-aggregation

    with monkeypatch.context() as patch:
        patch.setattr(spark_job, "aggregate", interrupted)
        with pytest.raises(KeyboardInterrupt):
            build(spark, state_dir, full=True)
    after = build(spark, state_dir)
    assert after.full and after.facts_rows == sum(
        json.loads(line)["type"] in KEPT_TYPES for line in events
    )
    assert outputs(state_dir) == expected(events, state_dir)


@pytest.mark.slow  # its build records the class archive too: ~80 s of CPU (test_class_archive.py)
def test_local_cluster_gives_the_same_result(cluster_build: ClusterBuild, built: Path) -> None:
    """`--master local-cluster[2,1,1024]` runs the job on two separate executor JVMs
    (through the real CLI, so the suite's own session is untouched) and writes the same
    aggregates."""
    assert "master local-cluster[2,1,1024]" in cluster_build.proc.stderr
    assert f"{len(MALFORMED)} malformed" in cluster_build.proc.stdout
    assert outputs(cluster_build.state_dir) == outputs(built)


def bus_line(seq: int, ts_ms: int, kind: str, job: str | None, **payload: Any) -> str:
    message = {"seq": seq, "ts_ms": ts_ms, "type": kind, "correlation_id": job}
    return json.dumps({**message, "payload": payload or None}) + "\n"


def test_late_registration_moves_old_hours_to_its_agent(spark: Any, tmp_path: Path) -> None:
    """A registration that arrives in a later build than its job's events re-labels the
    older hours too (an incremental build re-aggregates them): still equal to full."""
    hour = 3_600_000
    t0 = 1_767_225_600_000
    first = [
        bus_line(1, t0 + 10, "job.event", "0000late", event="started"),
        bus_line(2, t0 + 10, "job.status", "0000late", to="running"),
        bus_line(3, t0 + 5000, "job.event", "0000late", event="completed"),
        bus_line(4, t0 + 5000, "job.status", "0000late", to="completed"),
        bus_line(5, t0 + hour, "control.started", None),
    ]
    later = [
        bus_line(6, t0 + 2 * hour, "job.registered", "0000late", agent="codex"),
        bus_line(7, t0 + 2 * hour + 1, "job.registered", "00000new", agent="aider"),
        bus_line(8, t0 + 2 * hour + 90, "job.event", "00000new", event="started"),
        bus_line(9, t0 + 2 * hour + 90, "job.status", "00000new", to="running"),
    ]
    state_dir = tmp_path / "state"
    write_export(state_dir, first)
    build(spark, state_dir)
    assert [row["agent"] for row in outputs(state_dir)[0]] == ["unknown"]
    write_export(state_dir, later, append=True)
    assert not build(spark, state_dir).full
    incremental = outputs(state_dir)
    assert incremental == expected(first + later, state_dir)
    agents_and_runs = [(row["agent"], row["runs"], row["working_ms"]) for row in incremental[0]]
    assert agents_and_runs == [("codex", 1, 4990), ("aider", 0, 0), ("codex", 0, 0)]
    assert incremental[3] == ["00000new"]  # running at the cut-off, its 90th ms
    build(spark, state_dir, full=True)
    assert outputs(state_dir) == incremental


def test_a_job_the_control_room_failed_counts_as_errored_once(spark: Any, tmp_path: Path):
    """Jobs end by their status moves, whoever made them: an agent's error event and
    the status move it causes count once; a job failed by the control room (its pane
    died: a status move with no event) counts as errored, with its run; a cancel is
    neither completed nor errored."""
    t0 = 1_767_225_600_000
    lines = [
        bus_line(1, t0, "job.registered", "0000self", agent="claude"),
        bus_line(2, t0 + 100, "job.status", "0000self", to="running"),
        bus_line(3, t0 + 100, "job.event", "0000self", event="started"),
        bus_line(4, t0 + 900, "job.event", "0000self", event="error"),
        bus_line(5, t0 + 900, "job.status", "0000self", to="error"),
        bus_line(6, t0 + 1000, "job.registered", "0000dead", agent="claude"),
        bus_line(7, t0 + 1200, "job.status", "0000dead", to="running"),
        bus_line(8, t0 + 1200, "job.event", "0000dead", event="started"),
        bus_line(9, t0 + 4200, "job.status", "0000dead", to="error"),
        bus_line(10, t0 + 5000, "job.registered", "0000gone", agent="claude"),
        bus_line(11, t0 + 5100, "job.status", "0000gone", to="running"),
        bus_line(12, t0 + 5100, "job.event", "0000gone", event="started"),
        bus_line(13, t0 + 5600, "job.status", "0000gone", to="cancelled"),
    ]
    state_dir = tmp_path / "state"
    write_export(state_dir, lines)
    build(spark, state_dir)
    (row,), _, _, _ = outputs(state_dir)
    assert outputs(state_dir) == expected(lines, state_dir)
    assert (row["jobs_completed"], row["jobs_errored"], row["events"]) == (0, 2, 4)
    assert (row["jobs_cancelled"], row["jobs_started"]) == (1, 3)
    assert (row["runs"], row["run_ms_p50"]) == (2, (800 + 3000) / 2)


def test_finished_build_journal_is_not_rolled_back(built: Path, tmp_path: Path) -> None:
    """A build that saved its watermark but died before deleting its journal keeps its
    facts (only the journal goes)."""
    from registry.history.watermark import roll_back_interrupted_append

    state_dir = copy_state(built, tmp_path / "state")
    state = json.loads((state_dir / "history" / "state.json").read_text())
    facts = sorted((state_dir / "history" / "facts").rglob("*.parquet"))
    journal = {"build_id": state["build_id"], "known": []}
    (state_dir / "history" / "append-journal.json").write_text(json.dumps(journal))
    roll_back_interrupted_append(HistoryPaths(state_dir), print)
    assert sorted((state_dir / "history" / "facts").rglob("*.parquet")) == facts
    assert not (state_dir / "history" / "append-journal.json").exists()


def test_incremental_with_untouched_older_dates(spark: Any, tmp_path: Path) -> None:
    """An incremental build whose touched jobs live only in the newest date's files
    (older dates' files hold none of them) still re-aggregates those jobs in full.

    Regression: PySpark 4.3's createDataFrame(pyarrow.Table) silently drops every row
    after an empty chunk, and each facts file that matches nothing is one."""
    day = 86_400_000
    t0 = 1_767_225_600_000
    first = [
        bus_line(1, t0, "job.registered", "000000aa", agent="claude"),
        bus_line(2, t0 + 100, "job.status", "000000aa", to="running"),
        bus_line(3, t0 + 900, "job.event", "000000aa", event="completed"),
        bus_line(4, t0 + 900, "job.status", "000000aa", to="completed"),
        bus_line(5, t0 + day, "job.registered", "000000cc", agent="aider"),
        bus_line(6, t0 + 2 * day, "job.registered", "000000bb", agent="codex"),
        bus_line(7, t0 + 2 * day + 50, "job.status", "000000bb", to="running"),
    ]
    later = [
        bus_line(8, t0 + 2 * day + 7000, "job.event", "000000bb", event="completed"),
        bus_line(9, t0 + 2 * day + 7000, "job.status", "000000bb", to="completed"),
    ]
    state_dir = tmp_path / "state"
    write_export(state_dir, first)
    build(spark, state_dir)
    write_export(state_dir, later, append=True)
    assert not build(spark, state_dir).full
    incremental = outputs(state_dir)
    assert incremental == expected(first + later, state_dir)
    runs = [(row["agent"], row["runs"]) for row in incremental[0]]
    assert runs == [("claude", 1), ("aider", 0), ("codex", 1)]


def test_an_input_spark_cannot_open_says_why(spark: Any, built: Path, tmp_path: Path) -> None:
    """A URI whose filesystem Spark lacks fails the build with the Java exception's
    reason, not py4j's "An error occurred while calling o50.json", and leaves the
    last build's output as it was."""
    from registry.history.errors import HistoryBuildFailed
    from registry.history.spark_job import run_build

    state_dir = copy_state(built, tmp_path / "state")
    before = outputs(state_dir)
    with pytest.raises(HistoryBuildFailed, match=r"S3AFileSystem not found") as failed:
        run_build(spark, state_dir, input_uri="s3a://bucket/bus.jsonl")
    assert str(failed.value).startswith("spark build failed: java.lang.")
    assert "\n" not in str(failed.value) and "calling o" not in str(failed.value)
    assert outputs(state_dir) == before


def test_a_build_shows_its_stages_moving(spark: Any, events: list[str], tmp_path: Path) -> None:
    """Polled often enough, a build reports the task counts of the Spark stages it runs,
    between its own phase lines, and stops reporting when it returns."""
    import re
    import threading

    state_dir = tmp_path / "state"
    write_export(state_dir, events)
    lines: list[str] = []
    build(spark, state_dir, progress=lines.append, stage_poll_s=0.005)
    counted = len(lines)
    stages = [re.fullmatch(r"spark stage (\d+): (\d+)/(\d+) tasks done", line) for line in lines]
    found = [(int(m[2]), int(m[3])) for m in stages if m]
    assert found and all(0 <= done <= total for done, total in found), lines
    first = next(i for i, m in enumerate(stages) if m)
    assert lines[first - 1].startswith("reading 1 file,"), "the first stage is the read"
    # Proof that nothing more can come, rather than a look after a fixed pause: the
    # stage poller's thread has ended.
    assert not [t for t in threading.enumerate() if t.name == "stage-progress" and t.is_alive()]
    assert len(lines) == counted, "no line after the build returned"


@pytest.mark.parametrize("damage", ["garbage", "foreign", "missing usage"])
def test_an_incremental_build_repairs_unreadable_aggregates(
    spark: Any, built: Path, tmp_path: Path, damage: str
) -> None:
    """With no new input, an incremental build used to leave damaged aggregates as they
    were ("no new lines"); it now recomputes them from the facts, as a full build would."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    state_dir = copy_state(built, tmp_path / "state")
    paths = HistoryPaths(state_dir)
    good = outputs(state_dir)
    if damage == "garbage":
        paths.aggregates.write_bytes(b"PAR1 garbage")
    elif damage == "foreign":
        pq.write_table(pa.table({"x": [1]}), paths.aggregates)
    else:
        paths.usage.unlink()
    lines: list[str] = []
    report = build(spark, state_dir, progress=lines.append)
    assert report.new_facts == 0 and report.agg_rows > 0
    assert outputs(state_dir) == good
    assert "the last aggregates cannot be read: recomputing them from every fact" in lines
