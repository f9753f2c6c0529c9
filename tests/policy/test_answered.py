"""Who answered the agents, the policy or a person, and the person-time the policy
saved (registry/answered.py): over a real registry, then in `history show` and in
the History screen's totals line (both over the fixed history of tests/history)."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from app.tui.screens.history_read import HistoryLoaded, read_history
from app.tui.screens.history_text import totals_content
from registry.answered import AnswerCounts, answer_counts, answers_line
from registry.jobs import Registry
from registry.vocabulary import Activity, EventType, MessageType
from tests.history.test_cli import HOUR, fixed_history, orchestrate

__all__ = ["fixed_history"]  # the fixture, used by name below

MS = 1000


def at(moment: datetime) -> int:
    return int(moment.timestamp() * MS)


def answered(registry: Registry, agent: str, by: str, asked: datetime, waited_s: float) -> None:
    """A job of ``agent`` that waited from ``asked`` and was answered by ``by``."""
    job_id = registry.register("work", agent, "s", sign_events=False).job_id
    conn = registry.db.conn
    with conn:
        conn.execute(
            "INSERT INTO job_activity (job_id, at_ms, activity, source, data) VALUES (?,?,?,?,?)",
            (job_id, at(asked), str(Activity.WAITING), "screen:x", "{}"),
        )
    registry.publish(job_id, EventType.INPUT, "answered yes", {"kind": "answer", "by": by})
    with conn:  # the answer came ``waited_s`` after the question
        conn.execute(
            "UPDATE messages SET ts_ms = ? "
            "WHERE seq = (SELECT max(seq) FROM messages WHERE type = ?)",
            (at(asked) + int(waited_s * MS), str(MessageType.JOB_EVENT)),
        )


def day(registry: Registry) -> None:
    """In HOUR: 3 answers by the policy (rules or reviewer), 3 by a person after 10, 20
    and 90 s; an hour later one more by a person (outside HOUR)."""
    for minute, by in ((1, "policy"), (2, "reviewer"), (3, "policy")):
        answered(registry, "gemini", by, HOUR + timedelta(minutes=minute), 0.5)
    for minute, (by, waited) in enumerate((("tui", 10), ("cli", 20), ("tui", 90)), 10):
        answered(registry, "claude", by, HOUR + timedelta(minutes=minute), waited)
    answered(registry, "claude", "cli", HOUR + timedelta(hours=1, minutes=5), 600)


def test_counts_and_the_time_saved(tmp_path: Path) -> None:
    registry = Registry.open(tmp_path)
    day(registry)
    conn = registry.db.conn
    hour = answer_counts(conn, at(HOUR), at(HOUR + timedelta(hours=1)))
    assert hour == AnswerCounts(by_policy=3, by_person=3, median_response_ms=20 * MS)
    assert hour.saved_ms == 60 * MS and hour.share == 0.5
    assert (
        answers_line(hour)
        == "answered: 3 by the policy, 3 by you (median 20.0s) · policy saved 1m00s"
    )
    everything = answer_counts(conn)
    assert (everything.by_person, everything.median_response_ms) == (4, 55 * MS)
    only_gemini = answer_counts(conn, agent="gemini")
    assert (only_gemini.by_policy, only_gemini.by_person, only_gemini.saved_ms) == (3, 0, None)
    assert answers_line(AnswerCounts()) is None


def test_history_show_and_the_history_screen_say_it(fixed_history: Path) -> None:
    day(Registry.open(fixed_history))
    proc = orchestrate(fixed_history, "history", "show")
    assert proc.returncode == 0, proc.stderr
    line = "Answered: 3 by the policy, 3 by you (median 20.0s) · policy saved 1m00s."
    assert line in proc.stdout, proc.stdout
    loaded = read_history(fixed_history, None, 24)
    assert isinstance(loaded, HistoryLoaded) and loaded.charts is not None
    assert loaded.charts.answers == AnswerCounts(3, 3, 20 * MS)
    assert "3 by the policy" in totals_content(loaded.snapshot, loaded.charts).plain
