"""The Spark SQL of the history build: the texts and the calls that run them.

Three statements, each a named text: ``FLAG_SQL`` checks every input line,
``FACTS_SQL`` keeps the well-formed lines as facts, and ``CODED_SQL`` gives each fact
of whole jobs its small code for the per-job pass (``job_pass``, on each partition of
the one shuffle by job); the driver merges that pass's partials into the hourly
aggregates, usage, restart markers and open jobs that ``registry.history.schema``
defines (``final_merge``). Kept apart from the build driver
(``spark_job``: what to read, what to write, the watermark) so each can be read
alone; ``aggregate_py`` is the plain-Python reference these must equal.
"""

from __future__ import annotations

import functools

import pyarrow as pa
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.utils import get_lit_sql_str

from registry.activity import ACTIVITIES
from registry.history.final_merge import merge_partials
from registry.history.job_pass import (
    CANCELLED,
    COMPLETED,
    ENQUEUED,
    ERRORED,
    EVENT,
    OTHER_STATUS,
    PARTIAL_DDL,
    REGISTERED,
    RESTART,
    RUNNING,
    USAGE,
    pass_batches,
)
from registry.history.schema import (
    CONTROL_STARTED,
    CORRUPT_COLUMN,
    EVENT_ACTIVITY,
    EVENT_KINDS,
    FACT_COLUMNS,
    INPUT_DDL,
    JOB_EVENT,
    JOB_REGISTERED,
    JOB_STATUS,
    JOB_TYPES,
    JOB_USAGE,
    KEPT_TYPES,
    TOKEN_COLUMNS,
    UNKNOWN_AGENT,
    UNKNOWN_MODEL,
)
from registry.history.watermark import ReadPlan
from registry.vocabulary import EventType, JobStatus


def _sql_list(values: tuple[str, ...]) -> str:
    """Our constants as a SQL list of string literals. They are written into the SQL
    text, not bound as parameters: binding cost 30-50 ms of analysis per statement."""
    return ", ".join(get_lit_sql_str(value) for value in values)


def _sql(word: str) -> str:
    """A vocabulary word as a SQL string literal (written into the text, as above)."""
    return get_lit_sql_str(word)


ACTIVITY_EVENT_SQL = _sql(EventType.ACTIVITY)
REGISTERED_SQL, EVENT_SQL, STATUS_SQL, USAGE_SQL, RESTART_SQL = (
    get_lit_sql_str(kind)
    for kind in (JOB_REGISTERED, JOB_EVENT, JOB_STATUS, JOB_USAGE, CONTROL_STARTED)
)
_NEGATIVE_USAGE = " OR ".join(
    f"coalesce(payload.{name}, 0) < 0" for name in (*TOKEN_COLUMNS, "cost_micro_usd")
)
_EVENT_ACTIVITY = " ".join(
    f"WHEN {get_lit_sql_str(kind)} THEN {get_lit_sql_str(activity)}"
    for kind, activity in EVENT_ACTIVITY.items()
)

# Each input line with its fields checked. PERMISSIVE parsing keeps the fields read
# before an error, so a bad payload in a message type we ignore still shows its
# type and is not counted as malformed. (registry.history.facts: the same rules in
# Python, for the segment export and the reference.)
FLAG_SQL = f"""
SELECT seq, ts_ms, type, coalesce(correlation_id, payload.job_id) AS job_id, payload,
  seq IS NULL OR ts_ms IS NULL OR type IS NULL
  OR ({CORRUPT_COLUMN} IS NOT NULL AND type IN ({_sql_list(KEPT_TYPES)}))
  OR (type IN ({_sql_list(JOB_TYPES)}) AND coalesce(correlation_id, payload.job_id) IS NULL)
  OR (type = {EVENT_SQL}
      AND NOT coalesce(payload.event IN ({_sql_list(EVENT_KINDS)}), false))
  OR (type = {EVENT_SQL} AND payload.event = {ACTIVITY_EVENT_SQL}
      AND NOT coalesce(payload.data.activity IN ({_sql_list(ACTIVITIES)}), false))
  OR (type = {USAGE_SQL} AND ({_NEGATIVE_USAGE}))
  AS malformed
FROM {{raw}}
"""
# The facts: well-formed lines of the kept types past the watermark, each field
# kept only for the types it means something in.
FACTS_SQL = f"""
SELECT seq,
  CASE WHEN type = {USAGE_SQL} THEN coalesce(payload.at_ms, ts_ms) ELSE ts_ms END AS ts_ms,
  type,
  CASE WHEN type != {RESTART_SQL} THEN job_id END AS job_id,
  CASE WHEN type = {EVENT_SQL} THEN payload.event END AS event,
  CASE WHEN type = {REGISTERED_SQL} THEN payload.agent END AS agent,
  CASE WHEN type = {STATUS_SQL} THEN payload.`to` END AS status_to,
  CASE WHEN type = {EVENT_SQL} THEN
    CASE payload.event WHEN {ACTIVITY_EVENT_SQL} THEN payload.data.activity {_EVENT_ACTIVITY} END
  END AS activity,
  CASE WHEN type = {USAGE_SQL} THEN coalesce(payload.model, {get_lit_sql_str(UNKNOWN_MODEL)})
  END AS model,
  {
    ", ".join(
        f"CASE WHEN type = {USAGE_SQL} THEN coalesce(payload.{name}, 0) END AS {name}"
        for name in TOKEN_COLUMNS
    )
},
  CASE WHEN type = {USAGE_SQL} THEN payload.cost_micro_usd END AS cost_micro_usd,
  CASE WHEN type = {USAGE_SQL} THEN coalesce(payload.measured, false) END AS measured
FROM {{flagged}}
WHERE NOT malformed AND type IN ({_sql_list(KEPT_TYPES)}) AND seq > {{min_seq}}
"""


def parse_input(spark: SparkSession, plan: ReadPlan) -> tuple[DataFrame, Observation, Observation]:
    """Read the JSONL with an explicit schema; flag (never fail on) malformed lines.

    The two observations count every line read and every fact kept as the facts
    are written, so the counts cost no second pass over the input.
    """
    raw = (
        spark.read.schema(INPUT_DDL)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_COLUMN)
        .json(list(plan.uris))
    )
    lines = Observation("lines")
    kept = Observation("kept")
    flagged = spark.sql(FLAG_SQL, raw=raw).observe(
        lines,
        F.count(F.lit(1)).alias("lines"),
        F.sum(F.col("malformed").cast("long")).alias("malformed"),
    )
    facts = spark.sql(FACTS_SQL, flagged=flagged, min_seq=int(plan.min_seq)).observe(
        kept,
        F.count(F.lit(1)).alias("rows"),
        F.max("seq").alias("max_seq"),
        F.max("ts_ms").alias("max_ts_ms"),
    )
    dated = facts.withColumn("date", F.to_date(F.timestamp_millis("ts_ms")))
    return dated.select(*FACT_COLUMNS, "date"), lines, kept


UNKNOWN_SQL = get_lit_sql_str(UNKNOWN_AGENT)
# What each fact is to the per-job pass (``job_pass``: the codes are its own), as a
# small int so the shuffle by job carries one int instead of strings.
CODED_SQL = f"""
SELECT job_id, seq, ts_ms,
  CASE WHEN type = {REGISTERED_SQL} THEN {REGISTERED}
       WHEN type = {STATUS_SQL} THEN CASE status_to
         WHEN {_sql(JobStatus.PENDING)} THEN {ENQUEUED}
         WHEN {_sql(JobStatus.RUNNING)} THEN {RUNNING}
         WHEN {_sql(JobStatus.COMPLETED)} THEN {COMPLETED}
         WHEN {_sql(JobStatus.ERROR)} THEN {ERRORED}
         WHEN {_sql(JobStatus.CANCELLED)} THEN {CANCELLED} ELSE {OTHER_STATUS} END
       WHEN type = {EVENT_SQL} THEN {EVENT}
       WHEN type = {USAGE_SQL} THEN {USAGE}
       ELSE {RESTART} END AS kind,
  activity,
  CASE WHEN type = {REGISTERED_SQL} THEN coalesce(agent, {UNKNOWN_SQL}) END AS registered_agent,
  model, measured, {", ".join(TOKEN_COLUMNS)}, cost_micro_usd
FROM {{facts}}
"""
AGGREGATE_STEPS = ("sorted", "passed")


def job_partitions(facts: DataFrame) -> DataFrame:
    """The coded facts shuffled once by job, each partition sorted by job and seq: the
    one shuffle of every fact any exact per-job aggregation needs."""
    coded = facts.sparkSession.sql(CODED_SQL, facts=facts)
    return coded.repartition("job_id").sortWithinPartitions("job_id", "seq")


def partials(facts: DataFrame, cutoff_ms: int) -> DataFrame:
    """Each job partition's partial aggregates (``job_pass``, on Arrow batches)."""
    return job_partitions(facts).mapInArrow(
        functools.partial(pass_batches, cutoff_ms=int(cutoff_ms)), PARTIAL_DDL
    )


def aggregate_step(facts: DataFrame, cutoff_ms: int, step: str) -> DataFrame:
    """The aggregation up to one of its AGGREGATE_STEPS (bench/history.py times each)."""
    return job_partitions(facts) if step == "sorted" else partials(facts, cutoff_ms)


def aggregate(facts: DataFrame, cutoff_ms: int) -> pa.Table:
    """Hourly per-agent aggregates, usage, restart markers and open jobs from the facts
    of whole jobs (definitions in schema.py), with jobs still running counted up to
    ``cutoff_ms``.

    One shuffle by job, then one vectorised pass per sorted partition in Python
    (``job_pass``) instead of SQL: the SQL needed two window operators (each fact's
    boundary depends on the first one's results) and an array of structs per fact
    exploded into an object-hash aggregation that has no code generation; measured
    on a million facts, those cost about twice the shuffle itself. The partials,
    per hour and agent, are few: the driver merges them (``final_merge``), where a
    Spark group-by cost a stage and ~0.6 s of CPU.
    """
    return merge_partials(partials(facts, cutoff_ms).toArrow())
