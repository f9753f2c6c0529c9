"""`orchestrate history build/show` as a user runs them, and the light reader the TUI uses."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from registry.history.errors import CorruptHistory, HistoryNotBuilt
from registry.history.reader import (
    AGG_SCHEMA,
    LEGACY_NAMES,
    MARKER_SCHEMA,
    empty_row,
    load_history,
)
from registry.history.schema import HistoryPaths
from registry.history.synthetic import generate_lines
from registry.history.watermark import build_lock
from tests.history.history_files import REFUSED_MASTER, without_hadoop_conf, write_export

HOUR = datetime(2026, 1, 1, 9, tzinfo=UTC)


def orchestrate(state_dir: Path, *args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    return subprocess.run(
        [sys.executable, "-m", "app", "--state-dir", str(state_dir), *args],
        capture_output=True,
        text=True,
        env={**without_hadoop_conf(os.environ), **(env or {})},
        timeout=120,
    )


@pytest.fixture
def fixed_history(tmp_path: Path) -> Path:
    """A state dir holding aggregates written the way the Spark job writes them."""
    state_dir = tmp_path / "state"
    history = state_dir / "history"
    history.mkdir(parents=True)
    row = empty_row(
        HOUR,
        "claude",
        **{
            "events": 40,
            "jobs_registered": 6,
            "jobs_started": 5,
            "jobs_completed": 3,
            "jobs_errored": 1,
            "error_rate": 0.25,
            "runs": 4,
            "run_ms_p50": 90_500.0,
            "run_ms_p95": 400_000.0,
            "queue_waits": 5,
            "queue_wait_ms_p50": 1_200.0,
            "queue_wait_ms_p95": 4_000.0,
            "run_values": [60_000, 90_000, 91_000, 400_000],
            "queue_wait_values": [500, 1_000, 1_200, 3_000, 4_000],
            "working_ms": 1_800_000,
            "waiting_ms": 600_000,
            "asks": 2,
            "answered": 1,
            "response_values": [20_000, 580_000],
        },
    )
    pq.write_table(pa.Table.from_pylist([row], schema=AGG_SCHEMA), history / "agg_hourly.parquet")
    markers = [{"hour": HOUR, "restarts": 2}]
    pq.write_table(pa.Table.from_pylist(markers, schema=MARKER_SCHEMA), history / "markers.parquet")
    state = {"input": "x", "built_at_ms": 1_767_258_000_000, "facts_rows": 52}
    (history / "state.json").write_text(json.dumps(state))
    return state_dir


def test_show_json_prints_the_aggregates(fixed_history: Path) -> None:
    """`history show --json` is the whole snapshot, timestamps as UTC `Z` strings."""
    proc = orchestrate(fixed_history, "history", "show", "--json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    assert shown["built_at"] == "2026-01-01T09:00:00Z"
    assert shown["facts_rows"] == 52
    assert shown["restarts"] == [{"hour": "2026-01-01T09:00:00Z", "restarts": 2}]
    [row] = shown["rows"]
    assert row["hour"] == "2026-01-01T09:00:00Z" and row["agent"] == "claude"
    assert (row["jobs_completed"], row["jobs_errored"], row["error_rate"]) == (3, 1, 0.25)
    assert (row["run_ms_p50"], row["queue_wait_ms_p95"]) == (90_500.0, 4_000.0)
    # The wait for an agent says so; a person's answer latency has its own names.
    assert {"queue_waits", "queue_wait_ms_p50", "queue_wait_values"} <= row.keys()
    assert not {"waits", "wait_ms_p50", "wait_ms_p95", "wait_values"} & row.keys()
    assert row["response_ms_p50"] is None and row["response_values"] == [20_000, 580_000]


def test_show_json_reads_aggregates_written_before_the_queue_wait_rename(
    fixed_history: Path,
) -> None:
    """A history built before the queue wait got its name (``wait_ms_p50`` ...) still
    shows, under the new names, until the next build rewrites it."""
    path = fixed_history / "history" / "agg_hourly.parquet"
    table = pq.read_table(path)
    old = {new: old for old, new in LEGACY_NAMES.items()}
    pq.write_table(table.rename_columns([old.get(n, n) for n in table.column_names]), path)
    proc = orchestrate(fixed_history, "history", "show", "--json")
    assert proc.returncode == 0, proc.stderr
    [row] = json.loads(proc.stdout)["rows"]
    assert (row["queue_waits"], row["queue_wait_ms_p95"]) == (5, 4_000.0)


def test_aggregates_built_before_an_activity_existed_read_it_as_zero(
    fixed_history: Path,
) -> None:
    """A history built before ``unknown`` was an activity (no ``unknown_ms`` column)
    loads after the upgrade: that build saw none of it, so its time is 0, not an
    error asking for a --full build."""
    path = fixed_history / "history" / "agg_hourly.parquet"
    table = pq.read_table(path)
    pq.write_table(table.drop_columns(["unknown_ms"]), path)
    [row] = load_history(fixed_history).rows
    assert row.unknown_ms == 0 and row.working_ms == 1_800_000
    proc = orchestrate(fixed_history, "history", "show", "--json")
    assert proc.returncode == 0, proc.stderr
    [shown] = json.loads(proc.stdout)["rows"]
    assert shown["unknown_ms"] == 0 and shown["events"] == 40


def test_show_prints_a_table(fixed_history: Path) -> None:
    """The human view names the agent, the hour, the restart marker and the durations;
    per agent, where the time went and how long it waited for a person (exact p50 and
    p95 of its waits), and where the cost estimates come from."""
    proc = orchestrate(fixed_history, "history", "show")
    assert proc.returncode == 0, proc.stderr
    for text in ("2026-01-01 09:00 ⟳2", "claude", "1m30s", "6m40s", "25", "restarts"):
        assert text in proc.stdout
    (agent_row,) = [line for line in proc.stdout.splitlines() if line.startswith("│ claude")]
    cells = [cell.strip() for cell in agent_row.strip("│").split("│")]
    assert cells[:8] == ["claude", "3", "1", "0", "0", "30m00s", "10m00s", "0.0s"]
    assert cells[9:13] == ["2", "1", "5m00s", "9m12s"]  # p95 of 20 s and 580 s: 552 s
    assert f"estimates from {fixed_history / 'prices.toml'}" in proc.stdout.replace("\n", "")
    assert (fixed_history / "prices.toml").is_file()  # the default, written on first use


@pytest.fixture
def month_history(tmp_path: Path) -> Path:
    """30 days of one agent's work, hour by hour: per hour 5 events, 2 completed
    and, every other hour, 1 errored."""
    state_dir = tmp_path / "state"
    history = state_dir / "history"
    history.mkdir(parents=True)
    rows = []
    for n in range(30 * 24):
        errored = n % 2
        rows.append(
            empty_row(
                HOUR + timedelta(hours=n),
                "claude",
                events=5,
                jobs_registered=3,
                jobs_started=3,
                jobs_completed=2,
                jobs_errored=errored,
                error_rate=errored / (2 + errored),
                runs=2 + errored,
                run_ms_p50=60_000.0,
                run_ms_p95=90_000.0,
                queue_waits=3,
                queue_wait_ms_p50=1_000.0,
                queue_wait_ms_p95=2_000.0,
            )
        )
    pq.write_table(pa.Table.from_pylist(rows, schema=AGG_SCHEMA), history / "agg_hourly.parquet")
    last = HOUR + timedelta(hours=30 * 24 - 1)
    markers = [{"hour": HOUR, "restarts": 1}, {"hour": last, "restarts": 2}]
    pq.write_table(pa.Table.from_pylist(markers, schema=MARKER_SCHEMA), history / "markers.parquet")
    state = {"input": "x", "built_at_ms": 1_767_258_000_000, "facts_rows": 9_000}
    (history / "state.json").write_text(json.dumps(state))
    return state_dir


def hourly_lines(stdout: str) -> list[str]:
    """The rows of the hourly table."""
    return [line for line in stdout.splitlines() if re.match(r"│ \d{4}-\d\d-\d\d \d\d:00", line)]


def test_show_a_long_history_by_day_then_the_newest_hours(month_history: Path) -> None:
    """30 days: one row per day with the day's sums, then the newest 24 hours hour by
    hour (with their restart marker), and how to see more."""
    proc = orchestrate(month_history, "history", "show")
    assert proc.returncode == 0, proc.stderr
    days = [line for line in proc.stdout.splitlines() if re.match(r"│ \d{4}-\d\d-\d\d │", line)]
    assert len(days) == 31  # from 09:00 on the first day to 08:00 on the 31st
    # hours, events, registered, done, errors, err %: hours of 5, 3, 2 and every other 1
    counts = [re.findall(r"\d+", day.split("claude")[1]) for day in days]
    assert counts[0] == ["15", "75", "45", "30", "7", "19"]
    assert counts[1] == ["24", "120", "72", "48", "12", "20"]
    hours = hourly_lines(proc.stdout)
    assert len(hours) == 24
    assert hours[0].startswith("│ 2026-01-30 09:00 ") and "2026-01-31 08:00 ⟳2" in hours[-1]
    assert "2026-01-01 09:00 x1" not in proc.stdout  # the restart outside the hours shown
    assert "the newest 24 of 720 hours" in proc.stdout


def test_show_hours_picks_how_many_hours(month_history: Path) -> None:
    """`--hours N` shows the newest N hours; `--hours 0` every hour and no day table."""
    proc = orchestrate(month_history, "history", "show", "--hours", "3")
    assert proc.returncode == 0, proc.stderr
    assert len(hourly_lines(proc.stdout)) == 3 and "Per day" in proc.stdout
    proc = orchestrate(month_history, "history", "show", "--hours", "0")
    assert proc.returncode == 0, proc.stderr
    assert len(hourly_lines(proc.stdout)) == 720 and "Per day" not in proc.stdout
    assert "2026-01-01 09:00 x1, 2026-01-31 08:00 x2" in proc.stdout


@pytest.mark.parametrize("bad", ["-1", "x", ""])
def test_show_hours_refuses_bad_values(month_history: Path, bad: str) -> None:
    proc = orchestrate(month_history, "history", "show", "--hours", bad)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("orchestrate history show: Invalid value for '--hours'")
    assert proc.stderr.count("\n") == 1


def test_reader_returns_typed_rows(fixed_history: Path) -> None:
    """The TUI gets dataclasses with aware datetimes, and the last build time."""
    snapshot = load_history(fixed_history)
    assert snapshot.agents == ("claude",)
    assert snapshot.rows[0].hour == HOUR and snapshot.rows[0].run_ms_p95 == 400_000.0
    assert snapshot.restarts[0].restarts == 2
    assert snapshot.built_at == HOUR


def test_corrupt_parquet_is_one_line_error(fixed_history: Path) -> None:
    """A damaged aggregate file is a typed error for the TUI and one line for the CLI,
    which names the build that repairs it (an incremental one leaves it as it is)."""
    (fixed_history / "history" / "agg_hourly.parquet").write_bytes(b"PAR1 garbage")
    with pytest.raises(CorruptHistory):
        load_history(fixed_history)
    proc = orchestrate(fixed_history, "history", "show")
    assert proc.returncode == 1
    assert proc.stderr.startswith("orchestrate: cannot read ") and proc.stderr.count("\n") == 1
    assert proc.stderr.endswith(
        "; `orchestrate history build --full` rebuilds it from the bus export\n"
    )
    assert "Traceback" not in proc.stderr


def history_files(paths: HistoryPaths) -> dict[Path, bytes]:
    """Every file a build writes, by path (not the lock file a build always creates)."""
    return {
        p: p.read_bytes() for p in paths.root.rglob("*") if p.is_file() and p != paths.build_lock
    }


def test_a_build_on_a_damaged_state_names_the_full_build(fixed_history: Path) -> None:
    """An incremental build reads the last build's state first: damaged, it is one line
    naming `--full`, before any JVM, and the files are left for that build to replace."""
    write_export(fixed_history, generate_lines(50, seed=5))
    paths = HistoryPaths(fixed_history)
    paths.state.write_text("{garbage")
    before = history_files(paths)
    proc = orchestrate(fixed_history, "history", "build")
    assert proc.returncode == 1 and "starting Spark" not in proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith(f"orchestrate: cannot read {paths.state}: ")
    assert last.endswith("; `orchestrate history build --full` rebuilds it from the bus export")
    assert history_files(paths) == before


def test_foreign_parquet_is_corrupt(fixed_history: Path) -> None:
    """A readable parquet file without our columns is refused, not half-shown."""
    table = pa.table({"x": [1]})
    pq.write_table(table, fixed_history / "history" / "agg_hourly.parquet")
    with pytest.raises(CorruptHistory, match="lacks column"):
        load_history(fixed_history)
    proc = orchestrate(fixed_history, "history", "show", "--json")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert proc.stderr.count("--full") == 1, "one hint, not two"


def test_show_before_any_build(tmp_path: Path) -> None:
    """No history yet: say how to make one, exit 1."""
    with pytest.raises(HistoryNotBuilt):
        load_history(tmp_path)
    proc = orchestrate(tmp_path, "history", "show", "--json")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "run `orchestrate history build`" in proc.stderr


def test_build_without_export_says_so(tmp_path: Path) -> None:
    """No bus export: one clear line before any JVM is started."""
    proc = orchestrate(tmp_path, "history", "build")
    assert proc.returncode == 1
    assert "no bus export" in proc.stderr and "orchestrate export" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_build_with_empty_export_says_so(tmp_path: Path) -> None:
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "bus.jsonl").write_text("")
    proc = orchestrate(tmp_path, "history", "build")
    assert proc.returncode == 1 and "holds no message" in proc.stderr


def test_build_without_java_names_the_package(tmp_path: Path) -> None:
    """Missing Java is one line naming what to install, exit 1."""
    env = {"PATH": str(tmp_path / "empty-bin"), "JAVA_HOME": ""}
    proc = orchestrate(tmp_path, "history", "build", env=env)
    assert proc.returncode == 1
    assert "apt-get install -y default-jre-headless" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_reader_import_stays_light() -> None:
    """The TUI imports the reader on its event loop's side: no pyspark, no textual."""
    code = (
        "import sys, registry.history.reader, registry.history.schema; "
        "bad = [m for m in ('pyspark', 'textual', 'py4j') if m in sys.modules]; "
        "assert not bad, bad; "
        "import registry.history; "
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    light = "import sys, registry.history; assert 'pyarrow' not in sys.modules"
    subprocess.run([sys.executable, "-c", light], check=True, timeout=60)


def test_build_brings_the_bus_segments_up_to_date_first(tmp_path: Path) -> None:
    """After demo agents ran, `history build` alone is enough: it appends the bus's new
    messages to its parquet segments first, once (checked here up to the point Spark
    would start, with a master Spark refuses)."""
    from registry.history.segments import list_segments
    from registry.jobs import Registry

    registry = Registry.open(tmp_path)
    job = registry.register(prompt="p", agent="demo", agent_session="s")
    registry.publish(job.job_id, "started")
    argv = ("history", "build", "--master", REFUSED_MASTER, "--no-class-archive")
    proc = orchestrate(tmp_path, *argv)
    assert proc.returncode == 1
    assert "history: exported 3 new bus messages to" in proc.stderr
    (segment,) = list_segments(HistoryPaths(tmp_path))
    facts = pq.read_table(segment.path).to_pylist()
    assert [f["type"] for f in facts] == ["job.registered", "job.event", "job.status"]
    assert [f["activity"] for f in facts] == [None, "working", None]
    again = orchestrate(tmp_path, *argv)
    assert "history: exported 0 new bus messages" in again.stderr
    assert len(list_segments(HistoryPaths(tmp_path))) == 1


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (("--master", "banana"), "'banana' is not a Spark master: use local[*], local[N],"),
        (("--master", "spark://host"), "is not a Spark master"),
        (("--driver-memory", "lots"), "'lots' is not a memory size"),
        (("--driver-memory", "100m"), "Spark's driver needs at least 512m"),
    ],
)
def test_a_bad_master_or_memory_is_refused_before_spark(
    fixed_history: Path, args: tuple[str, ...], why: str
) -> None:
    """One line, exit 2, at once: no export, no JVM, the history left as it was. Spark
    itself only said "cannot start Spark with master 'local[*]'" for a bad memory."""
    paths = HistoryPaths(fixed_history)
    before = {p: p.read_bytes() for p in fixed_history.rglob("*") if p.is_file()}
    proc = orchestrate(fixed_history, "history", "build", *args)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert why in proc.stderr and "history: " not in proc.stderr
    assert {p: p.read_bytes() for p in fixed_history.rglob("*") if p.is_file()} == before
    assert not paths.spark_log.exists()


def test_a_second_build_at_once_is_refused_before_spark(fixed_history: Path) -> None:
    """While a build runs on the state dir (holding its lock), another is one line and
    exit 1 at once, touching nothing: two would append the same new facts twice."""
    write_export(fixed_history, generate_lines(50, seed=5))
    paths = HistoryPaths(fixed_history)
    with build_lock(paths):
        before = history_files(paths)
        proc = orchestrate(fixed_history, "history", "build")
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1
    assert "another history build is running" in proc.stderr
    assert history_files(paths) == before
