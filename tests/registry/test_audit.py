"""The durable audit log: real files, redacted secrets, safe concurrent appends,
and writers that never break their caller."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import stat
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from registry.audit import (
    REDACTED,
    AuditLog,
    LoggedJob,
    format_job_list,
    format_timeline,
    redact,
)
from registry.errors import JobNotFound
from registry.events import build_event
from registry.signing import sign

T0 = datetime(2026, 6, 19, 9, 30, 0, tzinfo=UTC)
JOB_ID = "abc12345"


def record(job_id: str = JOB_ID, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": 1,
        "job_id": job_id,
        "status": "pending",
        "created_at": "2026-06-19T09:30:00Z",
        "prompt": "write sort_problems.md",
        "agent": "claude-code",
        "agent_session": "tmux:claude",
        "broker": {
            "host": "localhost",
            "port": 8883,
            "tls": True,
            "username": "w",
            "password": "pw",
        },
        "auth_token": "super-secret-token",
        "last_seq": 0,
    }
    base.update(overrides)
    return base


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def full_lifecycle(log: AuditLog) -> None:
    log.record_registered(record(), at=T0)
    log.record_status_changed(JOB_ID, "pending", "running", "picked by tmux:claude", at=T0)
    started = sign(build_event(JOB_ID, 1, "started", "Job abc12345 started", now=T0), "tok")
    log.record_published(started, at=T0)
    log.record_received(started, source="mqtt", at=T0)
    log.record_status_changed(JOB_ID, "running", "completed", "event completed", at=T0)


def test_lifecycle_is_recorded_and_read_back(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    full_lifecycle(log)
    entries = list(log.iter_events(JOB_ID))
    assert [e["kind"] for e in entries] == [
        "registered",
        "status_changed",
        "published",
        "received",
        "status_changed",
    ]
    assert entries[1]["from"] == "pending" and entries[1]["to"] == "running"
    assert entries[0]["ts"] == "2026-06-19T09:30:00.000Z"
    published = build_event(JOB_ID, 1, "started", "Job abc12345 started", now=T0)
    assert entries[2]["event"] == sign(published, "tok").to_dict()  # the exact payload
    assert entries[3]["source"] == "mqtt"
    assert log.read_status(JOB_ID) == {
        "job_id": JOB_ID,
        "status": "completed",
        "updated_at": "2026-06-19T09:30:00.000Z",
    }
    assert log.read_meta(JOB_ID)["prompt"] == "write sort_problems.md"
    assert [e["kind"] for e in log.iter_events(JOB_ID, tail=2)] == ["received", "status_changed"]
    assert list(log.iter_events(JOB_ID, tail=0)) == []
    # more than any log holds (even past a C ssize_t) is the whole log, as `tail -n` does
    assert list(log.iter_events(JOB_ID, tail=10**20)) == entries


def test_secrets_never_reach_disk(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    full_lifecycle(log)
    everything = b"".join(p.read_bytes() for p in (tmp_path / "logs").rglob("*") if p.is_file())
    assert b"super-secret-token" not in everything
    assert b'"pw"' not in everything
    meta = log.read_meta(JOB_ID)
    assert meta["auth_token"] == REDACTED and meta["broker"]["password"] == REDACTED
    assert meta["broker"]["username"] == "w"


def test_unsigned_job_keeps_null_token_visible() -> None:
    assert redact({"auth_token": None, "nested": [{"Password": "x"}]}) == {
        "auth_token": None,
        "nested": [{"Password": REDACTED}],
    }


def test_files_are_0600_and_dirs_0700(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        full_lifecycle(AuditLog(tmp_path))
    finally:
        os.umask(old)
    job_dir = tmp_path / "logs" / JOB_ID
    assert mode(tmp_path / "logs") == 0o700 and mode(job_dir) == 0o700
    assert sorted(p.name for p in job_dir.iterdir()) == [
        "events.ndjson",
        "meta.json",
        "status.json",
    ]
    for path in job_dir.iterdir():
        assert mode(path) == 0o600, path


class _Counter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _warnings_while(action: Callable[[], None]) -> int:
    """Run ``action`` and count audit warnings; as root, in a child that drops to
    nobody, because root writes through read-only permissions."""
    counter = _Counter()
    logger = logging.getLogger("registry.audit")
    if os.geteuid() != 0:
        logger.addHandler(counter)
        try:
            action()
        finally:
            logger.removeHandler(counter)
        return len(counter.messages)
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        code = 255
        try:
            os.setgid(65534)
            os.setuid(65534)
            logger.addHandler(counter)
            action()
            code = min(len(counter.messages), 250)
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_read_only_dir_never_raises(tmp_path: Path) -> None:
    """A read-only audit dir costs a warning per write, never the caller's operation."""
    log = AuditLog(tmp_path)
    log.record_registered(record())
    job_dir = tmp_path / "logs" / JOB_ID
    for path in job_dir.iterdir():
        os.chmod(path, 0o444)
    os.chmod(job_dir, 0o555)
    os.chmod(tmp_path / "logs", 0o555)

    def writes() -> None:
        full_lifecycle(log)
        log.record_registered(record("0badc0de"))

    try:
        assert _warnings_while(writes) == 6
    finally:
        os.chmod(tmp_path / "logs", 0o700)
        os.chmod(job_dir, 0o700)
    assert len(list(log.iter_events(JOB_ID))) == 1
    assert log.read_status(JOB_ID)["status"] == "pending"


def test_unwritable_state_dir_never_raises(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Works as root too: 'logs' is a plain file, so nothing can be created under it."""
    (tmp_path / "logs").write_text("not a directory")
    log = AuditLog(tmp_path)
    with caplog.at_level(logging.WARNING, logger="registry.audit"):
        full_lifecycle(log)
    assert caplog.text.count("could not record") == 5
    assert log.list_jobs() == []


def test_bad_input_to_writers_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    log = AuditLog(tmp_path)
    with caplog.at_level(logging.WARNING, logger="registry.audit"):
        log.record_registered(record(job_id="../../etc"))
        log.record_status_changed("../x", "pending", "running")
        log.record_status_changed(JOB_ID, "pending", "running", reason=object())  # type: ignore[arg-type]
    assert caplog.text.count("could not record") == 3
    assert not (tmp_path / "etc").exists()


def test_readers_on_unknown_or_damaged_logs(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    for bad in ("ffffffff", "../../x"):
        with pytest.raises(JobNotFound):
            log.iter_events(bad)
        with pytest.raises(JobNotFound):
            log.read_meta(bad)
    full_lifecycle(log)
    job_dir = tmp_path / "logs" / JOB_ID
    with (job_dir / "events.ndjson").open("a") as handle:
        handle.write('{"half a line\n[1,2]\n')
    (job_dir / "meta.json").write_text("{broken")
    assert len(list(log.iter_events(JOB_ID))) == 5
    assert log.read_meta(JOB_ID) == {}
    with pytest.raises(ValueError):
        log.iter_events(JOB_ID, tail=-1)


def test_list_jobs(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    assert log.list_jobs() == []
    log.record_registered(record("00000002", created_at="2026-06-19T10:00:00Z"), at=T0)
    log.record_registered(record("00000001", created_at="2026-06-19T11:00:00Z"), at=T0)
    log.record_status_changed("00000001", "pending", "running", at=T0)
    (tmp_path / "logs" / "not-a-job").mkdir()
    jobs = log.list_jobs()
    assert [(j.job_id, j.status) for j in jobs] == [
        ("00000002", "pending"),
        ("00000001", "running"),
    ]
    assert jobs[0].agent_session == "tmux:claude"


def _append_many(state_dir: str, worker: int, count: int) -> None:
    log = AuditLog(state_dir)
    for index in range(count):
        event = build_event(JOB_ID, 1 + index, "progress", f"w{worker}", {"pad": "x" * 3000})
        log.record_received(event, source=f"w{worker}")


def test_concurrent_appends_never_interleave(tmp_path: Path) -> None:
    """Four processes appending 3 KB lines: every line is whole and none lost."""
    AuditLog(tmp_path).record_registered(record())
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(tmp_path), n, 50)) for n in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    lines = (tmp_path / "logs" / JOB_ID / "events.ndjson").read_bytes().splitlines()
    assert len(lines) == 1 + 4 * 50
    parsed = [json.loads(line) for line in lines]
    assert (
        sorted(sum(1 for e in parsed if e.get("source") == f"w{n}") for n in range(4)) == [50] * 4
    )


# -- formatting --------------------------------------------------------------------


def test_timeline_format(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    full_lifecycle(log)
    text = format_timeline(log.iter_events(JOB_ID))
    lines = text.splitlines()
    assert lines[0].split() == [
        "2026-06-19",
        "09:30:00",
        "registered",
        "pending",
        "claude-code",
        "@",
        "tmux:claude",
    ]
    assert "pending -> running" in lines[1] and lines[1].endswith("picked by tmux:claude")
    assert "#1 started" in lines[2] and lines[2].endswith("Job abc12345 started")
    assert "[mqtt] Job abc12345 started" in lines[3]
    assert lines[4].split()[3:6] == ["running", "->", "completed"]
    # columns line up
    assert len({line.index("#1") for line in lines[2:4]}) == 1


def test_timeline_tolerates_odd_entries_and_strips_escapes() -> None:
    text = format_timeline(
        [
            {},
            {"ts": 5, "kind": "mystery"},
            {
                "ts": "garbage",
                "kind": "received",
                "event": {"seq": 1, "event": "x", "detail": "\x1b[2Jboom\nline"},
            },
        ]
    )
    assert "\x1b" not in text and len(text.splitlines()) == 3
    assert "boom line" in text
    assert format_timeline([]) == "(no audit entries)"


def test_job_list_format() -> None:
    jobs = [LoggedJob("abc12345", "running", "2026-06-19T09:30:00.000Z", None, "codex", "tmux:a")]
    lines = format_job_list(jobs).splitlines()
    assert lines[0].split() == ["JOB", "STATUS", "UPDATED", "AGENT", "SESSION"]
    assert lines[1].split() == ["abc12345", "running", "2026-06-19", "09:30:00", "codex", "tmux:a"]
    assert format_job_list([]) == "(no audit logs)"
