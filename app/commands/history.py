"""`orchestrate history build/show`: the Spark pipeline to parquet, and its aggregates."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from app.settings import Settings, find_cache_dir
from registry.history.errors import CorruptHistory, JavaNotFound, java_available
from registry.history.schema import HistoryPaths
from registry.history.spark_options import check_driver_memory, check_master
from registry.history.summary import duration
from registry.wording import counted

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from registry.history.jvm import JvmPlan
    from registry.history.reader import HourlyAggregate, RestartMarker
    from registry.history.summary import RangeSummary

HOURS_SHOWN = 24  # `history show`: hourly rows for the newest day; older ones as days
HOUR = timedelta(hours=1)


def _checked_by(check: Callable[[str], str]) -> Callable[[click.Context, object, str], str]:
    """A registry check as a click callback: its ValueError is a one-line usage error."""

    def callback(_ctx: click.Context, _param: object, value: str) -> str:
        try:
            return check(value)
        except ValueError as exc:
            raise click.BadParameter(str(exc)) from None

    return callback


def _progress(line: str) -> None:
    """Progress goes to stderr as `history: ...` lines (the TUI parses them)."""
    click.echo(f"history: {line}", err=True)


@click.group()
def history() -> None:
    """Turn the bus export into parquet with Spark and show hourly throughput."""


@history.command()
@click.option(
    "--master",
    default="local[*]",
    show_default=True,
    metavar="URL",
    help="Spark master: local[*], spark://host:7077, local-cluster[2,1,1024] ...",
    callback=_checked_by(check_master),
)
@click.option("--full", is_flag=True, help="Rebuild everything instead of only new input.")
@click.option(
    "--input",
    "input_uri",
    metavar="PATH_OR_URI",
    help="JSONL bus export (file, directory or any URI Spark reads); "
    "default <state-dir>/export/bus.jsonl.",
)
@click.option(
    "--driver-memory",
    default="2g",
    show_default=True,
    metavar="SIZE",
    help="The driver JVM's heap (spark.driver.memory): 2g, 512m, at least 512m.",
    callback=_checked_by(check_driver_memory),
)
@click.option(
    "--class-archive/--no-class-archive",
    default=True,
    show_default=True,
    help="Start the JVM from a class-data-sharing archive (~190 MB, recorded by the "
    "first build) in ORCHESTRATE_CACHE_DIR or ~/.cache/orchestrate.",
)
@click.option(
    "--warm-up",
    is_flag=True,
    help="Run a tiny build of generated events first, so the real one finds Spark warm.",
)
@click.option(
    "--when-told",
    is_flag=True,
    help="Start Spark and warm it up, print 'history: ready', then build only once "
    "'go' arrives on stdin (the History screen starts it when opened); end of input "
    "stops Spark without building.",
)
@click.pass_obj
def build(
    settings: Settings,
    master: str,
    full: bool,
    input_uri: str | None,
    driver_memory: str,
    class_archive: bool,
    warm_up: bool,
    when_told: bool,
) -> None:
    """Read the bus export, append facts parquet, recompute hourly aggregates."""
    from registry.history.spark_job import run_build
    from registry.history.spark_session import stop_session
    from registry.history.watermark import build_lock

    if not java_available():
        raise JavaNotFound()
    for stop_signal in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(stop_signal, _interrupt)
    _STOP.requested, _STOP.end_jvm = False, None
    sys.unraisablehook = _unraisable
    for handler in logging.getLogger().handlers:
        handler.addFilter(_QUIET)
    paths = HistoryPaths(settings.state_dir)
    start = functools.partial(
        _start_spark, settings, paths, master, driver_memory, class_archive, input_uri, full
    )
    started = None
    if when_told:  # Spark starts before the lock: a build from the CLI meanwhile still runs
        started = start(warm_up=True)
        _progress("ready: waiting for 'go' on stdin")
        with _stopped_if_failed(*started):
            told = sys.stdin.readline().strip() == "go"
        if not told:
            stop_session(*started)
            _progress("not told to go: Spark stopped, nothing built")
            return
    # The lock before anything slow: a second build is refused at once.
    with (
        _stopped_if_failed(*started) if started else contextlib.nullcontext(),
        build_lock(paths),
        _full_build_repairs(unless=full),
    ):
        cutoff_ms: int | None = None
        if input_uri is None and settings.db_path.exists():
            # the default input: the bus itself, brought up to date first
            cutoff_ms = _bring_segments_up_to_date(settings)
        spark, jvm = started or start(warm_up=warm_up)
        with contextlib.nullcontext() if started else _stopped_if_failed(spark, jvm):
            report = run_build(
                spark,
                settings.state_dir,
                input_uri=input_uri,
                full=full,
                cutoff_ms=cutoff_ms,
                progress=_progress,
            )
            _raise_if_stopped()
        if jvm.recording is not None:
            _progress("saving the JVM class archive (once)")
        saved = stop_session(spark, jvm)
        _raise_if_stopped()
        if saved:
            _progress(f"class archive saved: {jvm.target}")
    kind = "full" if report.full else "incremental"
    click.echo(
        f"{kind} build: {counted(report.new_facts, 'new fact')} from "
        f"{counted(report.lines_read, 'line')}, "
        f"{counted(report.malformed, 'malformed line')} skipped; "
        f"{counted(report.facts_rows, 'fact')} in all; "
        f"{report.seconds:.1f} s"
    )


def _start_spark(
    settings: Settings,
    paths: HistoryPaths,
    master: str,
    driver_memory: str,
    class_archive: bool,
    input_uri: str | None,
    full: bool,
    *,
    warm_up: bool,
) -> tuple[SparkSession, JvmPlan]:
    """The build's Spark session, its JVM planned for the bytes it will read; warmed
    up with a tiny build (``registry.history.warm_up``) when asked."""
    from registry.history.jvm import plan_jvm
    from registry.history.segments import bytes_to_read as segment_bytes
    from registry.history.spark_job import warm_up as run_warm_up
    from registry.history.spark_session import create_session, end_jvm
    from registry.history.watermark import bytes_to_read, resolve_input

    read_bytes: int | None
    if input_uri is None and settings.db_path.exists():
        read_bytes = segment_bytes(paths, full)
    else:
        spec = resolve_input(input_uri, paths)  # a missing export fails before the JVM
        read_bytes = bytes_to_read(spec, paths, full)
    jvm = plan_jvm(find_cache_dir() if class_archive else None, read_bytes)
    _progress(f"starting Spark (master {master}; JVM log in {paths.spark_log})")
    _progress(jvm.describe())
    spark = create_session(master, driver_memory=driver_memory, log_path=paths.spark_log, jvm=jvm)
    # PySpark's own Ctrl-C handler cancels the jobs through the py4j connection the
    # interrupted call is reading: a reentrant call and a logged traceback. The build
    # stops anyway, so Ctrl-C ends it as SIGTERM does, JVM first.
    _STOP.end_jvm = functools.partial(end_jvm, spark, jvm)
    signal.signal(signal.SIGINT, _interrupt)
    if warm_up:
        with _stopped_if_failed(spark, jvm):
            _progress(f"warmed up Spark in {run_warm_up(spark):.1f} s")
    return spark, jvm


@contextlib.contextmanager
def _stopped_if_failed(spark: SparkSession, jvm: JvmPlan) -> Iterator[None]:
    """Whatever ends the block early stops Spark: a recording JVM is killed (no half
    archive), so is an interrupted build's. Stopped by the person, the build ends as
    interrupted whatever the Spark call its dead JVM failed raised."""
    from registry.history.spark_session import stop_session

    try:
        yield
    except BaseException as exc:
        stop_session(spark, jvm, failed=True, interrupted=_STOP.requested)
        if _STOP.requested and not isinstance(exc, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise


@contextlib.contextmanager
def _full_build_repairs(*, unless: bool = False) -> Iterator[None]:
    """A damaged history file's error names the build that repairs it (the TUI's b
    runs the same): an incremental build reads the damaged files, a full one does not."""
    try:
        yield
    except CorruptHistory as exc:
        reason = str(exc).rstrip(".")
        if unless or "--full" in reason:
            raise
        hint = "`orchestrate history build --full` rebuilds it from the bus export"
        raise CorruptHistory(f"{reason}; {hint}") from None


class _Stop:
    """Whether the person stopped the build (Ctrl-C, the TUI closing), and how to end
    its JVM once Spark is up."""

    requested = False
    end_jvm: Callable[[], None] | None = None


_STOP = _Stop()


def _interrupt(signum: int, frame: object) -> None:
    """SIGTERM (the TUI closing during a rebuild, `kill`) or SIGHUP (its terminal
    closed) ends a build as Ctrl-C does, through its clean-up: by default Python would
    just die and leave the JVM behind. The JVM is signalled first: the exception
    raised here is lost when the signal lands in a finalizer (py4j's run often), and
    a build without its JVM cannot go on."""
    _STOP.requested = True
    if _STOP.end_jvm is not None:
        _STOP.end_jvm()
    raise KeyboardInterrupt


def _raise_if_stopped() -> None:
    """The build was stopped, though its KeyboardInterrupt was lost in a finalizer."""
    if _STOP.requested:
        raise KeyboardInterrupt


def _unraisable(unraisable: sys.UnraisableHookArgs) -> None:
    """Once the build is stopped, the KeyboardInterrupt a finalizer swallowed is not
    news ("aborted" says it); anything else is reported as Python would."""
    if not (_STOP.requested and isinstance(unraisable.exc_value, KeyboardInterrupt)):
        sys.__unraisablehook__(unraisable)


class _QuietWhenStopped(logging.Filter):
    """Once the user stopped the build (Ctrl-C, the TUI closing), drop what py4j logs
    about the connection being torn down: tracebacks of the interrupted call and of
    its shutdown. "aborted" says what happened; anything else still gets through."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_STOP.requested and record.name.partition(".")[0] in ("py4j", "root"))


_QUIET = _QuietWhenStopped()


def _bring_segments_up_to_date(settings: Settings) -> int:
    """Record the token usage the agents' transcripts add, then append what the bus
    holds beyond the last segment; returns the cut-off (when the bus was read: a job
    still running counts up to then)."""
    from app.usage.sync import sync_usage
    from registry.history.segments import export_segments

    registry = settings.open_registry()
    try:
        synced = sync_usage(registry, settings.state_dir, os.environ)
        if synced.transcripts or synced.skipped:
            skipped = f", {synced.skipped} unreadable" if synced.skipped else ""
            _progress(
                f"usage: {counted(synced.recorded, 'new model message')} from "
                f"{counted(synced.transcripts, 'agent transcript')}{skipped}"
            )
        cutoff_ms = int(time.time() * 1000)
        paths = HistoryPaths(settings.state_dir)
        exported = export_segments(registry.bus, paths)
    finally:
        registry.db.close()
    _progress(f"exported {counted(exported.messages, 'new bus message')} to {paths.segments}")
    return cutoff_ms


def _hour(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:00")


@history.command()
@click.option("--json", "as_json", is_flag=True, help="Print the aggregates as JSON (all hours).")
@click.option(
    "--hours",
    type=click.IntRange(min=0),
    default=HOURS_SHOWN,
    show_default=True,
    help="The newest N hours of the history (per agent, and hour by hour); 0 for all.",
)
@click.pass_obj
def show(settings: Settings, as_json: bool, hours: int) -> None:
    """Print, per agent, where the time went, how long agents waited for a person, how
    jobs ended and what it cost, then hour by hour (no Spark): the newest hours and,
    for a longer history, every day in one row. Costs are estimates from
    <state-dir>/prices.toml (written on first use; edit it freely)."""
    from registry.history.prices import load_prices
    from registry.history.reader import load_history
    from registry.history.summary import summarize

    with _full_build_repairs():
        snapshot = load_history(settings.state_dir)
    if as_json:
        sys.stdout.write(json.dumps(snapshot.to_json(), indent=2) + "\n")
        return
    prices = load_prices(settings.state_dir)
    # A pipe gets a fixed, wide table rather than rich's 80-column default.
    console = Console() if sys.stdout.isatty() else Console(width=160)
    built = snapshot.built_at.strftime("%Y-%m-%d %H:%M:%S UTC") if snapshot.built_at else "?"
    if not snapshot.rows:
        console.print(f"No job activity in the history yet (built {built}).", markup=False)
        return
    summary = summarize(snapshot, hours or None, prices)
    first, last = snapshot.rows[0].hour, snapshot.rows[-1].hour
    since = summary.first_hour or first
    cutoff = snapshot.cutoff.strftime("%Y-%m-%d %H:%M UTC") if snapshot.cutoff else "?"
    console.print(
        f"History built {built} from {snapshot.facts_rows} facts; "
        f"{counted(snapshot.running, 'job')} still running at {cutoff} counted up to then.",
        markup=False,
    )
    console.print(_agent_table(summary))
    answered = _answers(settings, summary)
    if answered:
        console.print(answered.capitalize() + ".", markup=False)
    console.print(
        "Tokens: measured by each agent's own usage records (* Aider's own estimate). "
        f"Costs: estimates from {prices.path} (Aider's own where it gives one).",
        markup=False,
    )
    if since > first:  # a Rich row costs ~0.4 ms: 30 days hour by hour took seconds
        console.print(_daily_table(snapshot.rows))
    shown = [row for row in snapshot.rows if row.hour >= since]
    restarts = [marker for marker in snapshot.restarts if marker.hour >= since]
    console.print(_hourly_table(shown, restarts))
    if restarts:
        hours_restarted = ", ".join(f"{_hour(m.hour)} x{m.restarts}" for m in restarts)
        console.print(f"⟳ control-room restarts: {hours_restarted}", markup=False)
    if since > first:
        span = int((last - first) / HOUR) + 1
        console.print(
            f"Hour by hour: the newest {hours} of {span} hours "
            "(--hours N for more, --hours 0 for all, --json for everything).",
            markup=False,
        )
    if snapshot.malformed_total:
        console.print(f"{snapshot.malformed_total} malformed input line(s) were skipped.")


def _answers(settings: Settings, summary: RangeSummary) -> str | None:
    """Who answered the agents over the table's hours: the policy or a person, and the
    time the policy saved (registry/answered.py: a query over the registry)."""
    import sqlite3

    from registry.answered import answers_line, read_answer_counts

    first, last = summary.first_hour, summary.last_hour
    since = int(first.timestamp() * 1000) if first else 0
    until = int(last.timestamp() * 1000) + 3_600_000 if last else 2**62
    try:
        counts = read_answer_counts(settings.state_dir, since, until)
    except sqlite3.Error as error:  # busy or damaged: the rest of the history still shows
        return f"answers: not read ({error})"
    return answers_line(counts)


def _agent_table(summary: RangeSummary) -> Table:
    """The range per agent: the supervisor's questions, one row each."""
    from registry.history.summary import TABLE_COLUMNS, table_rows

    first = summary.first_hour.strftime("%Y-%m-%d %H:00") if summary.first_hour else "?"
    last = summary.last_hour.strftime("%Y-%m-%d %H:00") if summary.last_hour else "?"
    table = Table(title=f"Per agent, {first} to {last} UTC", title_justify="left")
    for index, header in enumerate(TABLE_COLUMNS):
        table.add_column(header, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for row in table_rows(summary):
        table.add_row(Text(row[0]), *row[1:])  # an agent's name is data, not markup
    return table


def _hourly_table(rows: list[HourlyAggregate], restarts: list[RestartMarker]) -> Table:
    table = Table(title="Per hour and agent", title_justify="left")
    table.add_column("hour (UTC)", no_wrap=True)
    table.add_column("agent", no_wrap=True)
    for header in ("events", "done", "errors", "err %", "working", "waiting", "idle"):
        table.add_column(header, justify="right")
    for header in ("run p50", "run p95", "queue p50", "queue p95", "response p50"):
        table.add_column(header, justify="right")
    restarted = {marker.hour: marker.restarts for marker in restarts}
    for row in rows:
        mark = f" ⟳{restarted[row.hour]}" if row.hour in restarted else ""
        table.add_row(
            _hour(row.hour) + mark,
            Text(row.agent),
            str(row.events),
            str(row.jobs_completed),
            str(row.jobs_errored),
            "-" if row.error_rate is None else f"{100 * row.error_rate:.0f}",
            duration(row.working_ms),
            duration(row.waiting_ms),
            duration(row.idle_ms),
            duration(row.run_ms_p50),
            duration(row.run_ms_p95),
            duration(row.queue_wait_ms_p50),
            duration(row.queue_wait_ms_p95),
            duration(row.response_ms_p50),
        )
    return table


def _daily_table(rows: tuple[HourlyAggregate, ...]) -> Table:
    """Each day's counts per agent: sums of the hours (percentiles do not add up, so
    the run and wait times stay in the hourly table). The error rate is the
    pipeline's: errored over ended (completed or errored) jobs."""
    days: dict[tuple[date, str], list[int]] = {}
    for row in rows:
        counts = days.setdefault((row.hour.date(), row.agent), [0, 0, 0, 0, 0])
        counts[0] += 1
        counts[1] += row.events
        counts[2] += row.jobs_registered
        counts[3] += row.jobs_completed
        counts[4] += row.jobs_errored
    table = Table(title="Per day (UTC) and agent", title_justify="left")
    table.add_column("day", no_wrap=True)
    table.add_column("agent", no_wrap=True)
    for header in ("hours", "events", "registered", "done", "errors", "err %"):
        table.add_column(header, justify="right")
    for (day, agent), (active, events, registered, done, errors) in sorted(days.items()):
        table.add_row(
            day.isoformat(),
            Text(agent),
            str(active),
            str(events),
            str(registered),
            str(done),
            str(errors),
            f"{100 * errors / (errors + done):.0f}" if errors + done else "-",
        )
    return table
