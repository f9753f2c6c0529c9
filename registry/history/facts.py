"""One bus message as a history fact, in plain Python: what the segment export writes and
what the plain-Python reference aggregates.

The rules mirror, check for check, how Spark reads the same message from a JSONL
export with ``schema.INPUT_DDL`` (``spark_sql.FLAG_SQL``/``FACTS_SQL``), so the two
input formats make the same facts (tests/history checks it): a field Spark cannot
convert to its declared type marks the whole line corrupt, and a corrupt line of a
kept type is malformed; a string field takes any JSON scalar as its text.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal, NamedTuple

from registry.activity import ACTIVITIES
from registry.history.schema import (
    CONTROL_STARTED,
    EVENT_ACTIVITY,
    EVENT_KINDS,
    JOB_EVENT,
    JOB_REGISTERED,
    JOB_STATUS,
    JOB_TYPES,
    JOB_USAGE,
    KEPT_TYPES,
    TOKEN_COLUMNS,
    UNKNOWN_MODEL,
)
from registry.vocabulary import EventType

MALFORMED: Final = "malformed"
_INT64 = (-(2**63), 2**63)
_TEXT_FIELDS = ("job_id", "agent", "event", "to", "model")
_INT_FIELDS = ("at_ms", *TOKEN_COLUMNS, "cost_micro_usd")


class Fact(NamedTuple):
    """One kept message, in ``schema.FACT_COLUMNS`` order. A NamedTuple: the segment
    export builds one per bus message."""

    seq: int
    ts_ms: int
    type: str
    job_id: str | None
    event: str | None
    agent: str | None
    status_to: str | None
    activity: str | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_micro_usd: int | None
    measured: bool | None


def _is_int(value: Any) -> bool:
    # bool is an int subclass in Python but not a JSON number for Spark: exact type check.
    return type(value) is int and _INT64[0] <= value < _INT64[1]


def _text(value: Any) -> str | None:
    """A STRING field as Spark reads it: a string as is, any other JSON value as its
    compact JSON text, null as null."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _payload_converts(payload: Mapping[str, Any]) -> bool:
    """Whether every payload field of INPUT_DDL converts to its type (else Spark marks
    the line corrupt)."""
    for name in _INT_FIELDS:
        value = payload.get(name)
        if value is not None and not _is_int(value):
            return False
    measured = payload.get("measured")
    if measured is not None and type(measured) is not bool:
        return False
    data = payload.get("data")
    return data is None or isinstance(data, dict)


def fact_of_message(message: Any) -> Fact | Literal["malformed"] | None:
    """The fact of one decoded bus message (as ``bus.export`` writes it): a Fact, None
    for a type the history ignores, or MALFORMED for a kept type that breaks the
    input contract (the build counts and skips those)."""
    if not isinstance(message, dict):
        return MALFORMED
    seq: Any = message.get("seq")
    ts_ms: Any = message.get("ts_ms")
    kind = _text(message.get("type"))
    payload = message.get("payload")
    converts = payload is None or (isinstance(payload, dict) and _payload_converts(payload))
    if not (_is_int(seq) and _is_int(ts_ms)) or kind is None:
        return MALFORMED
    if kind not in KEPT_TYPES:
        return None
    if not converts:
        return MALFORMED
    fields: Mapping[str, Any] = payload if isinstance(payload, dict) else {}
    job_id = _text(message.get("correlation_id"))
    if job_id is None:
        job_id = _text(fields.get("job_id"))
    if kind in JOB_TYPES and job_id is None:
        return MALFORMED
    event = _text(fields.get("event")) if kind == JOB_EVENT else None
    activity = None
    if kind == JOB_EVENT:
        if event not in EVENT_KINDS:
            return MALFORMED
        if event == EventType.ACTIVITY:
            data = fields.get("data")
            activity = _text(data.get("activity")) if isinstance(data, dict) else None
            if activity not in ACTIVITIES:
                return MALFORMED
        else:
            activity = EVENT_ACTIVITY.get(str(event))
    usage: tuple[Any, ...] = (None,) * 7
    placed_ms: Any = ts_ms
    if kind == JOB_USAGE:
        tokens = [fields.get(name) or 0 for name in TOKEN_COLUMNS]
        cost = fields.get("cost_micro_usd")
        if any(count < 0 for count in tokens) or (cost is not None and cost < 0):
            return MALFORMED
        at_ms = fields.get("at_ms")
        placed_ms = ts_ms if at_ms is None else at_ms
        model = _text(fields.get("model"))
        usage = (
            UNKNOWN_MODEL if model is None else model,
            *tokens,
            cost,
            bool(fields.get("measured")),
        )
    return Fact(
        seq,
        placed_ms,
        kind,
        job_id if kind != CONTROL_STARTED else None,
        event,
        _text(fields.get("agent")) if kind == JOB_REGISTERED else None,
        _text(fields.get("to")) if kind == JOB_STATUS else None,
        activity,
        *usage,
    )


def fact_of_line(line: str) -> Fact | Literal["malformed"] | None:
    """The fact of one JSONL export line (a line that is not JSON is malformed)."""
    try:
        message = json.loads(line)
    except ValueError:
        return MALFORMED
    return fact_of_message(message)
