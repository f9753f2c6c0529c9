"""Who answered the agents' questions in a period, the approval policy or a person, and
the person-time the policy saved: the person's median response time (from the wait's
start to their answer) times the questions the policy answered.

A plain SQL query over the registry, not a step of the Spark history build: the
answers are a few ``input`` events a day, already indexed by type in ``messages``
and by job in ``job_activity``, so one read-only query answers it in milliseconds
(the build runs on demand and the History screen reads it; a Spark pass for this
would be slower and would add a column to the build its owner is reshaping). The
median is taken in Python: SQLite has no median.

Each answer is the ``input`` event that app/approvals/answer.py and
app/policy/hook.py record (``data.kind`` = answer, ``data.by`` = policy, reviewer,
or where a person answered: cli, tui).
"""

from __future__ import annotations

import contextlib
import sqlite3
import statistics
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from registry.vocabulary import Activity, DecisionSource, EventType, MessageType

BY_POLICY = (str(DecisionSource.POLICY), str(DecisionSource.REVIEWER))
STATE_DB = "state.db"

ANSWERS_SQL = f"""
SELECT json_extract(m.payload, '$.data.by') AS by_whom,
       m.ts_ms - (
           SELECT max(a.at_ms) FROM job_activity a
           WHERE a.job_id = json_extract(m.payload, '$.job_id')
             AND a.activity = '{Activity.WAITING}' AND a.at_ms <= m.ts_ms
       ) AS response_ms
FROM messages m
LEFT JOIN jobs j ON j.job_id = json_extract(m.payload, '$.job_id')
WHERE m.type = '{MessageType.JOB_EVENT}'
  AND json_extract(m.payload, '$.event') = '{EventType.INPUT}'
  AND json_extract(m.payload, '$.data.kind') = 'answer'
  AND m.ts_ms >= :since AND m.ts_ms < :until
  AND (:agent IS NULL OR j.agent = :agent)
"""


@dataclass(frozen=True)
class AnswerCounts:
    """Questions answered by the policy (its rules or reviewer) and by a person, and
    the person's median time to answer (None: no person answered in the period)."""

    by_policy: int = 0
    by_person: int = 0
    median_response_ms: int | None = None

    @property
    def saved_ms(self) -> int | None:
        """The person-time the policy saved; None when there is no median to go by."""
        if self.median_response_ms is None:
            return None
        return self.median_response_ms * self.by_policy

    @property
    def share(self) -> float | None:
        """The policy's share of the answers (None: nothing was answered)."""
        total = self.by_policy + self.by_person
        return self.by_policy / total if total else None


def answer_counts(
    conn: sqlite3.Connection,
    since_ms: int = 0,
    until_ms: int = 2**62,
    agent: str | None = None,
) -> AnswerCounts:
    """The answers given in ``[since_ms, until_ms)``, of ``agent``'s jobs (None: all)."""
    rows = conn.execute(
        ANSWERS_SQL, {"since": since_ms, "until": until_ms, "agent": agent}
    ).fetchall()
    policy = sum(1 for by, _ in rows if by in BY_POLICY)
    person = [ms for by, ms in rows if by not in BY_POLICY]
    waits = [int(ms) for ms in person if ms is not None and ms >= 0]
    median = int(statistics.median(waits)) if waits else None
    return AnswerCounts(policy, len(person), median)


def read_answer_counts(
    state_dir: Path,
    since_ms: int = 0,
    until_ms: int = 2**62,
    agent: str | None = None,
    busy_timeout_ms: int = 2000,
) -> AnswerCounts:
    """``answer_counts`` of ``state_dir``'s registry, opened read-only (no state.db yet:
    nothing answered)."""
    db_path = state_dir / STATE_DB
    if not db_path.is_file():
        return AnswerCounts()
    with _read_only(db_path, busy_timeout_ms) as conn:
        return answer_counts(conn, since_ms, until_ms, agent)


@contextlib.contextmanager
def _read_only(db_path: Path, busy_timeout_ms: int) -> Iterator[sqlite3.Connection]:
    uri = f"file:{urllib.parse.quote(str(db_path))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_ms / 1000)
    try:
        yield conn
    finally:
        conn.close()


def answers_line(counts: AnswerCounts) -> str | None:
    """The counts in words, for `history show` and the History screen's totals; None
    when nothing was answered in the period."""
    from registry.history.summary import duration

    if not counts.by_policy and not counts.by_person:
        return None
    median = counts.median_response_ms
    you = f"{counts.by_person} by you" + (f" (median {duration(median)})" if median else "")
    saved = counts.saved_ms
    line = f"answered: {counts.by_policy} by the policy, {you}"
    if counts.by_policy:
        line += f" · policy saved {duration(saved)}" if saved is not None else ""
    return line
