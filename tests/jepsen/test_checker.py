"""The checker itself: each property it enforces fails on a history that breaks it."""

from __future__ import annotations

from typing import Any

from tests.jepsen.checker import Applied, History, Op, check

JOB = "0000aaaa"


def event(seq: int, name: str, sig: str = "s") -> dict[str, Any]:
    return {"job_id": JOB, "seq": seq, "event": name, "data": {"hmac_sig": f"{sig}{seq}"}}


def history(*ops: Op) -> History:
    made = History()
    for op in ops:
        made.add(op)
    return made


def ok(seq: int, name: str = "progress") -> Op:
    return Op(JOB, name, "ok", event(seq, name), 0)


def applied(*seqs: int, status: str = "completed", missing: int = 0, last: str = "completed"):  # type: ignore[no-untyped-def]
    rows = [(JOB, seq, event(seq, last if seq == max(seqs) else "progress")) for seq in seqs]
    return Applied(rows, {JOB: status}, {JOB: missing})


def test_a_clean_history_passes() -> None:
    report = check(history(ok(1), ok(2), ok(3, "completed")), applied(1, 2, 3), [JOB])
    assert report.ok and report.acknowledged == 3, report.summary()


def test_an_acknowledged_event_missing_is_lost() -> None:
    report = check(history(ok(1), ok(2), ok(3, "completed")), applied(1, 3, missing=1), [JOB])
    assert report.lost_acknowledged == [f"{JOB}:2 progress (ok)"] and report.gaps


def test_a_terminal_event_missing_or_not_acted_on_is_lost() -> None:
    report = check(history(ok(1), ok(2, "completed")), applied(1, last="progress"), [JOB])
    assert report.lost_terminal and not report.ok
    wrong_status = check(history(ok(1), ok(2, "completed")), applied(1, 2, status="running"), [JOB])
    assert wrong_status.lost_terminal == [f"{JOB}:2 completed (ok): job is running"]


def test_a_queued_event_of_a_failed_publish_must_still_arrive() -> None:
    failed = Op(JOB, "progress", "failed", event(2, "progress"), 1)
    report = check(history(ok(1), failed, ok(3, "completed")), applied(1, 3), [JOB])
    assert report.lost_queued and not report.lost_acknowledged and not report.ok


def test_twice_applied_another_event_under_a_seq_and_phantoms_are_caught() -> None:
    twice = Applied([(JOB, 1, event(1, "progress")), (JOB, 1, event(1, "progress"))],
                    {JOB: "running"}, {JOB: 0})  # fmt: skip
    assert check(history(ok(1)), twice, [JOB]).duplicates == [f"{JOB}:1 x2"]
    forged = Applied([(JOB, 1, event(1, "progress", sig="other"))], {JOB: "running"}, {JOB: 0})
    assert check(history(ok(1)), forged, [JOB]).mismatched
    phantom = Applied([(JOB, 1, event(1, "progress")), (JOB, 2, event(2, "progress"))],
                      {JOB: "running"}, {JOB: 0})  # fmt: skip
    assert check(history(ok(1)), phantom, [JOB]).phantoms == [f"{JOB}:2"]


def test_a_publish_killed_before_it_printed_may_land_once() -> None:
    crashed = Op(JOB, "progress", "crashed", None, -9)
    report = check(history(ok(1), crashed, ok(3, "completed")), applied(1, 2, 3), [JOB])
    assert report.ok, report.summary()
