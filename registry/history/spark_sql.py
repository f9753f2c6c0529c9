"""The Spark SQL of the history build: the texts and the calls that run them.

Three statements, each a named text: ``FLAG_SQL`` checks every input line,
``FACTS_SQL`` keeps the well-formed lines as facts, and ``AGGREGATE_SQL`` turns the
facts of whole jobs into the hourly aggregates, usage, restart markers and open
jobs that ``registry.history.schema`` defines. Kept apart from the build driver
(``spark_job``: what to read, what to write, the watermark) so each can be read
alone; ``aggregate_py`` is the plain-Python reference these must equal.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.utils import get_lit_sql_str

from registry.activity import ACTIVITIES
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
from registry.vocabulary import Activity, EventType, JobStatus


def _sql_list(values: tuple[str, ...]) -> str:
    """Our constants as a SQL list of string literals. They are written into the SQL
    text, not bound as parameters: binding cost 30-50 ms of analysis per statement."""
    return ", ".join(get_lit_sql_str(value) for value in values)


def _sql(word: str) -> str:
    """A vocabulary word as a SQL string literal (written into the text, as above)."""
    return get_lit_sql_str(word)


ACTIVITY_EVENT_SQL = _sql(EventType.ACTIVITY)
WAITING_SQL = _sql(Activity.WAITING)
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


def _percentile_sql(sorted_values: str, fraction: float) -> str:
    """Spark's exact ``percentile`` (schema.exact_percentile) read off a sorted array.

    Same result to the last bit (``D``: double arithmetic, as ``percentile``), but
    2-3x cheaper than four ``percentile`` aggregates, whose per-group hash maps
    dominated the whole aggregation.
    """
    position = f"((size({sorted_values}) - 1) * {fraction}D)"
    low = f"CAST(element_at({sorted_values}, CAST(floor({position}) AS INT) + 1) AS DOUBLE)"
    high = f"CAST(element_at({sorted_values}, CAST(ceil({position}) AS INT) + 1) AS DOUBLE)"
    return (
        f"CASE WHEN size({sorted_values}) > 0 "
        f"THEN {low} + ({position} - floor({position})) * ({high} - {low}) END"
    )


UNKNOWN_SQL = get_lit_sql_str(UNKNOWN_AGENT)
HOUR_MS = 3_600_000
# What each fact is to the aggregation, as a small code so the shuffle by job
# carries one int instead of strings. The status moves are in the order of
# their codes: STATUS_FIRST..STATUS_LAST are the job machine's own moves.
(
    REGISTERED,
    ENQUEUED,
    RUNNING,
    COMPLETED,
    ERRORED,
    CANCELLED,
    OTHER_STATUS,
    EVENT,
    USAGE,
    RESTART,
) = range(10)
_STATUS_KINDS = f"{ENQUEUED}, {RUNNING}, {COMPLETED}, {ERRORED}, {CANCELLED}"
_ACTIVITY_SUMS = ",\n    ".join(
    f"coalesce(sum(CASE WHEN e.activity = {get_lit_sql_str(activity)} THEN e.ms END), 0) "
    f"AS {activity}_ms"
    for activity in ACTIVITIES
)
_TOKEN_SUMS = ", ".join(f"sum(e.usage.{name}) AS {name}" for name in TOKEN_COLUMNS)


def _pieces(start: str, end: str, activity: str) -> str:
    """SQL: the interval [start, end) of ``activity`` as one element per hour it
    covers (its milliseconds in that hour); empty when end <= start."""
    first = f"({start} - pmod({start}, {HOUR_MS}))"
    last = f"(({end} - 1) - pmod({end} - 1, {HOUR_MS}))"
    return (
        f"CASE WHEN {end} > {start} THEN transform(sequence({first}, {last}, {HOUR_MS}L), "
        f"h -> named_struct('hour_ms', h, 'agent', agent, 'model', CAST(NULL AS STRING), "
        f"'open_job', CAST(NULL AS STRING), 'kind', -1, 'activity', {activity}, "
        f"'ms', least({end}, h + {HOUR_MS}) - greatest({start}, h), "
        f"'queue_wait_ms', CAST(NULL AS BIGINT), 'run_ms', CAST(NULL AS BIGINT), "
        f"'response_ms', CAST(NULL AS BIGINT), 'answered', false, 'usage', usage)) "
        f"ELSE array() END"
    )


# The aggregates of schema.py in one statement, over the facts of whole jobs.
# 1. `timed`: one window pass by job (ordered by seq) finds for each fact the job's
#    agent, its latest earlier enqueue, move to running and status move, and the
#    fact just before it.
# 2. `bounded`: the activity boundaries (a move to running; an activity-bearing
#    event while running; a move out of running) and, in a second pass over the
#    same sorted partition, for each boundary the one before it (so the interval
#    that ends here) and whether it is the job's last (an interval open at the
#    cut-off). Only growing and whole-partition frames: linear in a job's facts.
# 3. Every fact becomes one element for the hourly groups, plus one element per
#    hour an activity interval ending at it covers, plus one per job open at the
#    cut-off; one group by puts them in rows. Usage rows are keyed by model too;
#    restart markers ride along with a null agent, open jobs with a null hour.
AGGREGATE_SQL = f"""
WITH coded AS (
  SELECT job_id, seq, ts_ms, activity,
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
    CASE WHEN type = {REGISTERED_SQL} THEN coalesce(agent, {UNKNOWN_SQL}) END AS registered_agent,
    CASE WHEN type = {USAGE_SQL} THEN named_struct(
      'model', model, 'measured', measured,
      {", ".join(f"'{name}', {name}" for name in TOKEN_COLUMNS)},
      'cost_micro_usd', cost_micro_usd) END AS usage
  FROM {{facts}}
), timed AS (
  SELECT job_id, seq, ts_ms, activity, kind, usage,
    CASE WHEN kind != {RESTART}
         THEN coalesce(first(registered_agent, true) OVER whole_job, {UNKNOWN_SQL}) END AS agent,
    last(CASE WHEN kind <= {ENQUEUED} THEN seq END, true) OVER before AS enq_seq,
    last(CASE WHEN kind <= {ENQUEUED} THEN ts_ms END, true) OVER before AS enq_ms,
    last(CASE WHEN kind = {RUNNING} THEN seq END, true) OVER before AS run_seq,
    last(CASE WHEN kind = {RUNNING} THEN ts_ms END, true) OVER before AS run_ms,
    last(CASE WHEN kind IN ({_STATUS_KINDS}) THEN kind END, true) OVER before AS status_before,
    lag(kind) OVER ordered AS prev_kind,
    lag(activity) OVER ordered AS prev_activity
  FROM coded
  WINDOW whole_job AS (PARTITION BY job_id ORDER BY seq
                       ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING),
         before AS (PARTITION BY job_id ORDER BY seq
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
         ordered AS (PARTITION BY job_id ORDER BY seq)
), changed AS (
  SELECT *,
    CASE WHEN kind = {RUNNING} THEN
           CASE WHEN prev_kind = {EVENT} AND prev_activity IS NOT NULL
                     AND coalesce(status_before, {ENQUEUED}) = {ENQUEUED}
                THEN prev_activity ELSE {_sql(Activity.STARTING)} END
         WHEN kind = {EVENT} AND status_before = {RUNNING} THEN activity
    END AS new_activity,
    kind = {RUNNING}
      OR (kind = {EVENT} AND activity IS NOT NULL AND status_before = {RUNNING})
      OR (kind IN ({ENQUEUED}, {COMPLETED}, {ERRORED}, {CANCELLED})
          AND status_before = {RUNNING}) AS boundary
  FROM timed
), bounded AS (
  SELECT *,
    last(CASE WHEN boundary THEN named_struct('ts', ts_ms, 'activity', new_activity) END, true)
      OVER before AS previous,
    last(CASE WHEN boundary THEN seq END, true) OVER whole_job AS last_boundary
  FROM changed
  WINDOW whole_job AS (PARTITION BY job_id ORDER BY seq
                       ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING),
         before AS (PARTITION BY job_id ORDER BY seq
                    ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
), elements AS (
  SELECT explode(concat(
    CASE WHEN kind != {OTHER_STATUS} THEN array(named_struct(
      'hour_ms', ts_ms - pmod(ts_ms, {HOUR_MS}), 'agent', agent,
      'model', usage.model, 'open_job', CAST(NULL AS STRING), 'kind', kind,
      'activity', CAST(NULL AS STRING), 'ms', CAST(NULL AS BIGINT),
      'queue_wait_ms', CASE WHEN kind = {RUNNING} THEN ts_ms - enq_ms END,
      'run_ms', CASE WHEN kind IN ({COMPLETED}, {ERRORED}) AND run_seq IS NOT NULL
                          AND (enq_seq IS NULL OR enq_seq < run_seq)
                     THEN ts_ms - run_ms END,
      'response_ms', CASE WHEN boundary AND previous.activity = {WAITING_SQL}
                          THEN ts_ms - previous.ts END,
      'answered', boundary AND previous.activity = {WAITING_SQL} AND new_activity IS NOT NULL,
      'usage', usage)) ELSE array() END,
    CASE WHEN boundary AND previous.activity IS NOT NULL
         THEN {_pieces("previous.ts", "ts_ms", "previous.activity")} ELSE array() END,
    CASE WHEN boundary AND seq = last_boundary AND new_activity IS NOT NULL
         THEN concat({_pieces("ts_ms", "{cutoff}L", "new_activity")}, array(named_struct(
           'hour_ms', CAST(NULL AS BIGINT), 'agent', CAST(NULL AS STRING),
           'model', CAST(NULL AS STRING), 'open_job', job_id, 'kind', -2,
           'activity', CAST(NULL AS STRING), 'ms', CAST(NULL AS BIGINT),
           'queue_wait_ms', CAST(NULL AS BIGINT), 'run_ms', CAST(NULL AS BIGINT),
           'response_ms', CAST(NULL AS BIGINT), 'answered', false, 'usage', usage)))
         ELSE array() END
  )) AS e
  FROM bounded
), grouped AS (
  SELECT e.hour_ms AS hour_ms, e.agent AS agent, e.model AS model,
    e.usage.measured AS measured, e.open_job AS open_job,
    count_if(e.kind = {EVENT}) AS events,
    count_if(e.kind = {REGISTERED}) AS jobs_registered,
    count_if(e.kind = {RUNNING}) AS jobs_started,
    count_if(e.kind = {COMPLETED}) AS jobs_completed,
    count_if(e.kind = {ERRORED}) AS jobs_errored,
    count_if(e.kind = {CANCELLED}) AS jobs_cancelled,
    count_if(e.kind = {ENQUEUED}) AS retries,
    count(e.run_ms) AS runs, array_sort(collect_list(e.run_ms)) AS run_values,
    count(e.queue_wait_ms) AS queue_waits,
    array_sort(collect_list(e.queue_wait_ms)) AS queue_wait_values,
    {_ACTIVITY_SUMS},
    count(e.response_ms) AS asks, count_if(e.answered) AS answered,
    array_sort(collect_list(e.response_ms)) AS response_values,
    count_if(e.kind = {RESTART}) AS restarts,
    count_if(e.kind = {USAGE}) AS messages, {_TOKEN_SUMS},
    sum(e.usage.cost_micro_usd) AS agent_cost_micro_usd
  FROM elements
  GROUP BY e.hour_ms, e.agent, e.model, e.usage.measured, e.open_job
)
SELECT *, timestamp_millis(hour_ms) AS hour,
  {_percentile_sql("run_values", 0.5)} AS run_ms_p50,
  {_percentile_sql("run_values", 0.95)} AS run_ms_p95,
  {_percentile_sql("queue_wait_values", 0.5)} AS queue_wait_ms_p50,
  {_percentile_sql("queue_wait_values", 0.95)} AS queue_wait_ms_p95,
  {_percentile_sql("response_values", 0.5)} AS response_ms_p50,
  {_percentile_sql("response_values", 0.95)} AS response_ms_p95,
  CASE WHEN jobs_completed + jobs_errored > 0
       THEN jobs_errored / (jobs_completed + jobs_errored) END AS error_rate
FROM grouped
"""


AGGREGATE_STEPS = ("coded", "timed", "changed", "bounded", "elements", "grouped")


def aggregate_step(facts: DataFrame, cutoff_ms: int, step: str) -> DataFrame:
    """The aggregation up to one of its AGGREGATE_STEPS (bench/history.py times each)."""
    query = AGGREGATE_SQL.replace("{cutoff}", str(int(cutoff_ms)))
    query = query[: query.rindex("SELECT *, timestamp_millis")] + f"SELECT * FROM {step}"
    return facts.sparkSession.sql(query, facts=facts)


def aggregate(facts: DataFrame, cutoff_ms: int) -> DataFrame:
    """Hourly per-agent aggregates, usage, restart markers and open jobs from the facts
    of whole jobs (definitions in schema.py), with jobs still running counted up to
    ``cutoff_ms``.

    One SQL statement rather than the DataFrame API: built in one py4j call instead
    of hundreds (about 0.1 s per build), and its narrowed shuffle measured ~20 %
    faster on a million facts.
    """
    return facts.sparkSession.sql(
        AGGREGATE_SQL.replace("{cutoff}", str(int(cutoff_ms))), facts=facts
    )
