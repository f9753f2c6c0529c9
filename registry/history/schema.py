"""Where history lives on disk, the input contract, and the meaning of every aggregate.

Definitions shared by the Spark job and the plain-Python reference
(``aggregate_py``), so both compute the same numbers:

* Every message is placed by its bus commit time ``ts_ms`` (UTC), ordered by
  the bus ``seq``; the event's own ``timestamp`` is advisory and ignored. The
  one exception is a ``job.usage`` message, placed at the time the agent's
  transcript gives its model message (``payload.at_ms``, checked by the
  registry when it recorded it).
* The agent of a job is the ``agent`` of its first ``job.registered``
  message (by seq), else ``"unknown"``.
* ``hour`` is the time truncated to the hour, UTC.
* ``events``: ``job.event`` messages in that hour for that agent.
* ``jobs_registered``: ``job.registered`` messages; ``jobs_started``:
  ``job.status`` moves to ``running`` (each attempt that started).
* ``jobs_completed`` / ``jobs_errored`` / ``jobs_cancelled``: ``job.status``
  moves to ``completed`` / ``error`` / ``cancelled``: the registry's record of
  a job ending, whoever ended it (the agent's own event, a queue worker, the
  control room failing a job whose pane died, a person). A resumed job counts
  once per attempt. ``retries``: moves back to ``pending`` (a resume, a lease
  expiry, an interrupted agent restarted).
* ``error_rate``: errored / (completed + errored); null when neither.
* Queue wait (``queue_waits``, ``queue_wait_ms_*``): the move to ``running`` minus
  the latest earlier enqueue of the job (its ``job.registered``, or a move to
  ``pending``), counted in the hour of the move to running. It is the job's wait
  for an agent, never a person's: how long a person took to answer is
  ``response_ms_*``.
* Run duration of a job ending (a move to ``completed``/``error``): its ts minus
  the latest earlier move to ``running``, provided no enqueue came between
  them. Counted in the hour the job ended.
* Activity (what the agent does while its job runs, ``registry.activity``):
  a move to ``running`` starts it as ``starting``; a ``job.event`` then sets it:
  an ``activity`` event to its ``data.activity``, ``started``/``progress`` to
  ``working``, ``permission_required`` to ``waiting``. An event that arrives while
  the job is still pending moves it to running in the same transaction (its
  ``job.status`` follows it on the bus): the job starts with that event's activity
  instead of ``starting``. Events after the job left running change nothing.
  Any move out of ``running`` ends the activity. A job still running at the
  build's cut-off (``cutoff_ms``: the time the bus was exported, else the last
  message of the input) is counted up to it.
* ``<activity>_ms``: milliseconds each agent spent in each activity in that hour;
  an interval crossing hours is split at the hour boundaries.
* ``asks``: times an agent stopped waiting for a person (each change to
  ``waiting`` is a new question), counted in the hour the wait ended; ``answered``:
  those the agent moved on from (another activity), the rest ended with the job
  leaving running (cancelled, failed, requeued). ``response_ms_*``: how long
  each ended wait lasted. A wait still open at the cut-off is in ``waiting_ms``
  only.
* ``*_p50`` / ``*_p95`` (milliseconds): the exact percentile with linear
  interpolation between closest ranks, as Spark's ``percentile``: sort the n
  values, position = (n - 1) * p, interpolate between floor and ceil. Each
  hourly row also keeps its sorted values (``*_values``), so a day or a range
  of hours has exact percentiles too (the concatenation of its hours' values).
* Usage (``usage_hourly``): per hour, agent, model and whether the tokens were
  measured (the agent's own usage record) or estimated (Aider's own count):
  the sums of input, output, cache-read and cache-write tokens, of the agent's
  own cost estimate where it gives one (in millionths of a US dollar, so sums
  are exact), and the number of model messages. Cost
  from the price table (``prices.py``) is applied when read, never stored, so
  editing the prices needs no rebuild.
* Restart markers: the hours holding a ``control.started`` message, with
  how many.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from registry.activity import ACTIVITIES
from registry.events import EVENT_TYPES
from registry.vocabulary import Activity, EventType, JobStatus, MessageType

# Message types the pipeline keeps; any other type is read and ignored.
JOB_REGISTERED: Final = MessageType.JOB_REGISTERED
JOB_EVENT: Final = MessageType.JOB_EVENT
JOB_STATUS: Final = MessageType.JOB_STATUS
JOB_USAGE: Final = MessageType.JOB_USAGE
CONTROL_STARTED: Final = MessageType.CONTROL_STARTED
KEPT_TYPES = (JOB_REGISTERED, JOB_EVENT, JOB_STATUS, JOB_USAGE, CONTROL_STARTED)
JOB_TYPES = (JOB_REGISTERED, JOB_EVENT, JOB_STATUS, JOB_USAGE)
EVENT_KINDS = tuple(EVENT_TYPES)
TERMINAL_KINDS = (EventType.COMPLETED, EventType.ERROR)
ENDED_STATUSES = (JobStatus.COMPLETED, JobStatus.ERROR, JobStatus.CANCELLED)
UNKNOWN_AGENT = "unknown"
UNKNOWN_MODEL = "unknown"
# The activity a job.event shows, by its kind (an ``activity`` event says its own).
EVENT_ACTIVITY: Final[dict[str, str]] = {
    EventType.STARTED: Activity.WORKING,
    EventType.PROGRESS: Activity.WORKING,
    EventType.PERMISSION_REQUIRED: Activity.WAITING,
}
ACTIVITY_MS_COLUMNS = tuple(f"{activity}_ms" for activity in ACTIVITIES)
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")

CORRUPT_COLUMN = "_corrupt_record"

# One bus message per JSONL line (bus.export); only the fields the pipeline uses.
# A line whose kept-type message has a payload that is not an object (or a
# field of the wrong type) comes out with CORRUPT_COLUMN set: malformed. The
# same in an ignored message type (a chat whose payload is a string) is not.
INPUT_DDL = (
    "seq BIGINT, ts_ms BIGINT, type STRING, correlation_id STRING, "
    "payload STRUCT<job_id: STRING, agent: STRING, event: STRING, `to`: STRING, "
    "data: STRUCT<activity: STRING>, at_ms BIGINT, model STRING, "
    + ", ".join(f"{name}: BIGINT" for name in TOKEN_COLUMNS)
    + ", cost_micro_usd: BIGINT, measured: BOOLEAN>, "
    f"{CORRUPT_COLUMN} STRING"
)

# The facts: one row per kept message (``ts_ms`` is where it counts: a usage
# message's own time). The columns every input format becomes; facts Spark parsed
# from JSONL are also partitioned by ``date`` (of ts_ms, UTC).
FACT_COLUMNS = (
    "seq",
    "ts_ms",
    "type",
    "job_id",
    "event",
    "agent",
    "status_to",
    "activity",
    "model",
    *TOKEN_COLUMNS,
    "cost_micro_usd",
    "measured",
)
FACTS_DDL = (
    "seq BIGINT, ts_ms BIGINT, type STRING, job_id STRING, event STRING, agent STRING, "
    "status_to STRING, activity STRING, model STRING, "
    + ", ".join(f"{name} BIGINT" for name in TOKEN_COLUMNS)
    + ", cost_micro_usd BIGINT, measured BOOLEAN"
)

# The hourly aggregate table, in column order.
PERCENTILE_MEASURES = ("run", "queue_wait", "response")  # run, queue wait, a person's answer
AGG_COLUMNS = (
    "hour",
    "agent",
    "events",
    "jobs_registered",
    "jobs_started",
    "jobs_completed",
    "jobs_errored",
    "jobs_cancelled",
    "retries",
    "error_rate",
    "runs",
    "run_ms_p50",
    "run_ms_p95",
    "queue_waits",
    "queue_wait_ms_p50",
    "queue_wait_ms_p95",
    *ACTIVITY_MS_COLUMNS,
    "asks",
    "answered",
    "response_ms_p50",
    "response_ms_p95",
    "run_values",
    "queue_wait_values",
    "response_values",
)
USAGE_COLUMNS = (
    "hour",
    "agent",
    "model",
    "measured",
    "messages",
    *TOKEN_COLUMNS,
    "agent_cost_micro_usd",
)
MARKER_COLUMNS = ("hour", "restarts")


@dataclass(frozen=True)
class HistoryPaths:
    """The files of ``<state_dir>/history/``."""

    state_dir: Path

    @property
    def root(self) -> Path:
        return self.state_dir / "history"

    @property
    def facts(self) -> Path:
        """Facts parquet dataset, partitioned ``date=YYYY-MM-DD``."""
        return self.root / "facts"

    @property
    def aggregates(self) -> Path:
        """Hourly per-agent aggregates: one small parquet file, replaced atomically."""
        return self.root / "agg_hourly.parquet"

    @property
    def usage(self) -> Path:
        """Tokens per hour, agent and model (cost is applied when read)."""
        return self.root / "usage_hourly.parquet"

    @property
    def segments(self) -> Path:
        """The bus as facts, in parquet segments `history build` appends from the bus
        (``registry.history.segments``): the default input, read with no parsing."""
        return self.root / "segments"

    @property
    def markers(self) -> Path:
        """Control-room restart markers per hour."""
        return self.root / "markers.parquet"

    @property
    def state(self) -> Path:
        """The watermark of the last build (state.json)."""
        return self.root / "state.json"

    @property
    def journal(self) -> Path:
        """Facts files present before an incremental append (exists only during one)."""
        return self.root / "append-journal.json"

    @property
    def staging(self) -> Path:
        """Scratch space for the new tail of the input during an incremental build."""
        return self.root / "staging"

    @property
    def build_lock(self) -> Path:
        """Held (flock) by the one build running on this state dir."""
        return self.root / "build.lock"

    @property
    def spark_log(self) -> Path:
        """Where the JVM's own log lines go, so the terminal shows only progress."""
        return self.root / "spark.log"

    @property
    def default_input(self) -> Path:
        return self.state_dir / "export" / "bus.jsonl"


def exact_percentile(values: Sequence[float], fraction: float) -> float | None:
    """Spark's ``percentile(col, fraction)``, bit for bit: linear interpolation
    between the closest ranks. The arithmetic order matters for the last bit:
    Spark 4.3 computes ``low + (position - floor) * (high - low)`` (measured:
    the older ``(ceil - pos) * low + (pos - floor) * high`` differs by 1 ulp)."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    lower = math.floor(position)
    higher = math.ceil(position)
    lower_value = float(ordered[lower])
    if higher == lower or ordered[higher] == ordered[lower]:
        return lower_value
    return lower_value + (position - lower) * (float(ordered[higher]) - lower_value)
