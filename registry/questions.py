"""The questions agents asked in a period: the registry's ``waiting`` activity changes,
each with its tool and command, for `orchestrate policy replay` (app/policy/replay.py).

Read from ``job_activity`` (registry/activity.py writes it), joined with the job for
its agent kind. Read only: replaying a policy answers nothing.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from registry.activity import Observation
from registry.errors import InvalidJobInput
from registry.vocabulary import Activity


@dataclass(frozen=True)
class AskedQuestion:
    """One recorded wait on a person: when, which job and agent, and what about."""

    at_ms: int
    job_id: str
    agent: str
    tool: str
    command: str
    question: str


def questions_since(conn: sqlite3.Connection, since_ms: int) -> list[AskedQuestion]:
    """Every ``waiting`` change recorded at or after ``since_ms``, oldest first."""
    rows = conn.execute(
        "SELECT a.at_ms, a.job_id, j.agent, a.data FROM job_activity a "
        "JOIN jobs j ON j.job_id = a.job_id WHERE a.activity = ? AND a.at_ms >= ? "
        "ORDER BY a.at_ms, a.id",
        (str(Activity.WAITING), since_ms),
    ).fetchall()
    asked = []
    for at_ms, job_id, agent, data in rows:
        try:
            value = json.loads(data)
            if not isinstance(value, dict):
                continue
            seen = Observation.from_data(value)
        except (ValueError, InvalidJobInput):
            continue
        asked.append(
            AskedQuestion(int(at_ms), job_id, agent, seen.tool, seen.command, seen.question)
        )
    return asked
