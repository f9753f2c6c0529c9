"""Where history lives on disk, the input contract, and the meaning of every aggregate.

Definitions shared by the Spark job and the plain-Python reference
(``aggregate_py``), so both compute the same numbers:

* Every message is placed by its bus commit time ``ts_ms`` (UTC), ordered by
  the bus ``seq``; the event's own ``timestamp`` is advisory and ignored.
* The agent of a job is the ``agent`` of its first ``job.registered``
  message (by seq), else ``"unknown"``.
* ``hour`` is ``ts_ms`` truncated to the hour, UTC.
* ``events``: ``job.event`` messages in that hour for that agent.
* ``jobs_registered`` / ``jobs_started``: ``job.registered`` messages and
  ``started`` events in that hour.
* ``jobs_completed`` / ``jobs_errored``: ``job.status`` messages moving a job
  to ``completed`` / ``error`` in that hour: the registry's record of a job
  ending, whoever ended it (the agent's own event, a queue worker, the control
  room failing a job whose pane died or whose permission was denied, a person).
  A resumed job counts once per attempt.
* ``error_rate``: errored / (completed + errored); null when neither.
* Queue wait of a ``started`` event: its ts minus the latest earlier enqueue
  of the same job (its ``job.registered``, or a ``job.status`` to
  ``pending``, i.e. a resume or a lease expiry). Counted in the hour of the
  ``started`` event.
* Run duration of a job ending (its ``job.status`` to ``completed``/``error``):
  its ts minus the latest earlier ``started`` event of the same job, provided
  no enqueue came between them. Counted in the hour the job ended.
* ``*_p50`` / ``*_p95`` (milliseconds): the exact percentile with linear
  interpolation between closest ranks, as Spark's ``percentile``: sort the n
  values, position = (n - 1) * p, interpolate between floor and ceil.
* Restart markers: the hours holding a ``control.started`` message, with
  how many.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# Message types the pipeline keeps; any other type is read and ignored.
JOB_REGISTERED = "job.registered"
JOB_EVENT = "job.event"
JOB_STATUS = "job.status"
CONTROL_STARTED = "control.started"
KEPT_TYPES = (JOB_REGISTERED, JOB_EVENT, JOB_STATUS, CONTROL_STARTED)
JOB_TYPES = (JOB_REGISTERED, JOB_EVENT, JOB_STATUS)
EVENT_KINDS = ("started", "progress", "permission_required", "completed", "error")
TERMINAL_KINDS = ("completed", "error")
UNKNOWN_AGENT = "unknown"

CORRUPT_COLUMN = "_corrupt_record"

# One bus message per JSONL line (bus.export); only the fields the pipeline uses.
# A line whose kept-type message has a payload that is not an object (or a
# field of the wrong type) comes out with CORRUPT_COLUMN set: malformed. The
# same in an ignored message type (a chat whose payload is a string) is not.
INPUT_DDL = (
    "seq BIGINT, ts_ms BIGINT, type STRING, correlation_id STRING, "
    "payload STRUCT<job_id: STRING, agent: STRING, event: STRING, `to`: STRING>, "
    f"{CORRUPT_COLUMN} STRING"
)

# The facts table: one row per kept message, partitioned by ``date``.
FACT_COLUMNS = ("seq", "ts", "type", "job_id", "event", "agent", "status_to", "date")

# The hourly aggregate table, in column order.
AGG_COLUMNS = (
    "hour",
    "agent",
    "events",
    "jobs_registered",
    "jobs_started",
    "jobs_completed",
    "jobs_errored",
    "error_rate",
    "runs",
    "run_ms_p50",
    "run_ms_p95",
    "waits",
    "wait_ms_p50",
    "wait_ms_p95",
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
