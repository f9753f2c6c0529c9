"""The durable per-job audit log at ``<state_dir>/logs/<job_id>/`` (seed 001 §7).

Layout: ``meta.json`` (the record at registration, secrets redacted),
``events.ndjson`` (append-only, one JSON line per entry: registered,
status_changed, published, received) and ``status.json`` (current status).
The registry is live state; this is history that outlives it.

Every writer is best-effort and isolated: a failure (read-only directory,
full disk, unserialisable value) is logged with ``logger.warning`` and never
reaches the caller, so auditing can never break the registry write, publish or
subscribe it shadows. Appends take an exclusive ``flock`` on events.ndjson and
write each line with O_APPEND, so concurrent processes never interleave lines.
Files are 0600, directories 0700.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import sys
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bus.text import replace_hidden
from registry.errors import JobNotFound
from registry.events import Event, is_job_id
from registry.vocabulary import JobStatus

logger = logging.getLogger(__name__)

META_FILE: Final = "meta.json"
EVENTS_FILE: Final = "events.ndjson"
STATUS_FILE: Final = "status.json"
KINDS: Final = ("registered", "status_changed", "published", "received")
SECRET_KEYS: Final = frozenset(
    {"auth_token", "password", "passwd", "secret", "token", "api_key", "client_secret"}
)
REDACTED: Final = "<redacted>"

AuditEntry = dict[str, Any]
"""One parsed events.ndjson line: ``ts``, ``kind``, ``job_id`` and kind-specific keys."""


@dataclass(frozen=True)
class LoggedJob:
    """One job as its audit log knows it (for ``job logs --list``)."""

    job_id: str
    status: str | None
    updated_at: str | None
    created_at: str | None
    agent: str | None
    agent_session: str | None


class AuditLog:
    """Writers and readers for the audit logs under ``<state_dir>/logs``."""

    def __init__(self, state_dir: Path | str) -> None:
        self.root = Path(state_dir) / "logs"

    def job_dir(self, job_id: str) -> Path:
        """The directory of ``job_id``'s log; ValueError for a malformed id
        (it becomes a path, so nothing like ``../x`` may pass)."""
        if not is_job_id(job_id):
            raise ValueError(f"not a job id: {job_id!r:.40}")
        return self.root / job_id

    # -- writers: never raise ------------------------------------------------

    def record_registered(self, record: Mapping[str, Any], at: datetime | None = None) -> None:
        """Snapshot ``record`` (secrets redacted) to meta.json, set status.json
        and append a ``registered`` line."""
        job_id = str(record.get("job_id", ""))
        status = str(record.get("status", JobStatus.PENDING))
        try:
            directory = self._ensure_dir(job_id)
            _atomic_write_json(directory / META_FILE, redact(dict(record)))
            entry = {
                "ts": _stamp(at),
                "kind": "registered",
                "job_id": job_id,
                "status": status,
                "agent": record.get("agent"),
                "agent_session": record.get("agent_session"),
            }
            self._append(directory, entry, status=status)
        except (OSError, ValueError, TypeError) as exc:
            _warn("registered", job_id, exc)

    def record_status_changed(
        self,
        job_id: str,
        from_status: str | None,
        to_status: str,
        reason: str = "",
        at: datetime | None = None,
    ) -> None:
        """Append a ``status_changed`` line and update status.json, in that
        order under one lock so status.json matches the last line."""
        entry = {
            "ts": _stamp(at),
            "kind": "status_changed",
            "job_id": job_id,
            "from": from_status,
            "to": to_status,
            "reason": reason,
        }
        try:
            self._append(self._ensure_dir(job_id), entry, status=to_status)
        except (OSError, ValueError, TypeError) as exc:
            _warn("status_changed", job_id, exc)

    def record_published(self, event: Event, at: datetime | None = None) -> None:
        """Append a ``published`` line embedding the exact event payload."""
        self._record_event("published", event, at, source="")

    def record_received(self, event: Event, source: str = "", at: datetime | None = None) -> None:
        """Append a ``received`` line (``source``: the transport, e.g. "mqtt")."""
        self._record_event("received", event, at, source=source)

    def _record_event(self, kind: str, event: Event, at: datetime | None, source: str) -> None:
        entry: AuditEntry = {
            "ts": _stamp(at),
            "kind": kind,
            "job_id": event.job_id,
            "event": event.to_dict(),
        }
        if source:
            entry["source"] = source
        try:
            self._append(self._ensure_dir(event.job_id), entry)
        except (OSError, ValueError, TypeError) as exc:
            _warn(kind, event.job_id, exc)

    def _ensure_dir(self, job_id: str) -> Path:
        directory = self.job_dir(job_id)
        for path in (self.root, directory):
            if not path.is_dir():
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.chmod(path, 0o700)  # mkdir's mode is masked by the umask
        return directory

    def _append(self, directory: Path, entry: AuditEntry, status: str | None = None) -> None:
        line = json.dumps(entry, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        payload = (line + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
        fd = os.open(directory / EVENTS_FILE, flags, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
            if status is not None:
                snapshot = {"job_id": entry["job_id"], "status": status, "updated_at": entry["ts"]}
                _atomic_write_json(directory / STATUS_FILE, snapshot)
        finally:
            os.close(fd)  # also releases the flock

    # -- readers ---------------------------------------------------------------

    def read_meta(self, job_id: str) -> dict[str, Any]:
        """The registration snapshot; JobNotFound if the job has no log,
        ``{}`` (with a warning) if meta.json is missing or unreadable."""
        return _read_json(self._existing_dir(job_id) / META_FILE)

    def read_status(self, job_id: str) -> dict[str, Any]:
        """``{"job_id", "status", "updated_at"}``; JobNotFound if no log,
        ``{}`` if status.json is missing or unreadable."""
        return _read_json(self._existing_dir(job_id) / STATUS_FILE)

    def iter_events(self, job_id: str, tail: int | None = None) -> Iterator[AuditEntry]:
        """The job's entries oldest first (only the last ``tail`` if given; a ``tail``
        past any log's length is the whole log, as with ``tail -n``).
        JobNotFound if the job has no log; unreadable lines are skipped with a warning."""
        if tail is not None and tail < 0:
            raise ValueError("tail must be >= 0")
        path = self._existing_dir(job_id) / EVENTS_FILE
        entries = _read_lines(path)
        if tail is None:
            return entries
        return iter(deque(entries, maxlen=min(tail, sys.maxsize)))  # deque needs a C ssize_t

    def list_jobs(self) -> list[LoggedJob]:
        """Every job with a log, oldest registration first."""
        try:
            names = sorted(p.name for p in self.root.iterdir() if p.is_dir())
        except OSError:
            return []
        jobs = []
        for job_id in names:
            if not is_job_id(job_id):
                continue
            meta = _read_json(self.root / job_id / META_FILE)
            status = _read_json(self.root / job_id / STATUS_FILE)
            jobs.append(
                LoggedJob(
                    job_id=job_id,
                    status=_str_or_none(status.get("status")),
                    updated_at=_str_or_none(status.get("updated_at")),
                    created_at=_str_or_none(meta.get("created_at")),
                    agent=_str_or_none(meta.get("agent")),
                    agent_session=_str_or_none(meta.get("agent_session")),
                )
            )
        jobs.sort(key=lambda job: (job.created_at or "", job.job_id))
        return jobs

    def _existing_dir(self, job_id: str) -> Path:
        try:
            directory = self.job_dir(job_id)
        except ValueError:
            raise JobNotFound(f"no audit log for job {job_id!r:.40}") from None
        if not directory.is_dir():
            raise JobNotFound(f"no audit log for job {job_id}")
        return directory


def redact(value: Any) -> Any:
    """A copy of ``value`` with every secret-named key's value replaced by
    ``<redacted>`` (a null stays null, so "signing off" remains visible)."""
    if isinstance(value, Mapping):
        return {
            key: (
                REDACTED
                if str(key).lower() in SECRET_KEYS and value[key] is not None
                else redact(value[key])
            )
            for key in value
        }
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    return value


def format_timeline(entries: Iterable[AuditEntry]) -> str:
    """The human ``job logs`` view: one aligned row per entry with time,
    kind, event or status move, and detail. Pure; tolerates odd entries."""
    rows = [_timeline_row(entry) for entry in entries]
    if not rows:
        return "(no audit entries)"
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + ("  " + row[3] if row[3] else "")
        for row in rows
    ]
    return "\n".join(line.rstrip() for line in lines)


def format_job_list(jobs: Iterable[LoggedJob]) -> str:
    """The human ``job logs --list`` table."""
    header = ("JOB", "STATUS", "UPDATED", "AGENT", "SESSION")
    rows = [header] + [
        (
            job.job_id,
            job.status or "?",
            _short_time(job.updated_at),
            _cell(job.agent or "", 24),
            _cell(job.agent_session or "", 24),
        )
        for job in jobs
    ]
    if len(rows) == 1:
        return "(no audit logs)"
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    )


# -- helpers -------------------------------------------------------------------


def _timeline_row(entry: AuditEntry) -> tuple[str, str, str, str]:
    kind = str(entry.get("kind", "?"))
    what = detail = ""
    if kind == "registered":
        what = str(entry.get("status", JobStatus.PENDING))
        agent, session = entry.get("agent"), entry.get("agent_session")
        detail = " @ ".join(str(part) for part in (agent, session) if part)
    elif kind == "status_changed":
        what = f"{entry.get('from') or '-'} -> {entry.get('to')}"
        detail = str(entry.get("reason") or "")
    elif kind in ("published", "received"):
        event = entry.get("event")
        if isinstance(event, Mapping):
            what = f"#{event.get('seq')} {event.get('event')}"
            detail = str(event.get("detail") or "")
        if entry.get("source"):
            detail = f"[{entry['source']}] {detail}".rstrip()
    return (_short_time(entry.get("ts")), _cell(kind, 16), _cell(what, 40), _cell(detail, 200))


def _short_time(stamp: object) -> str:
    if not isinstance(stamp, str):
        return "?"
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return _cell(stamp, 24)
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _cell(text: str, limit: int) -> str:
    """One line, no hidden character (``bus/text.py``), at most ``limit`` characters."""
    flat = replace_hidden(text, " ")
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _stamp(at: datetime | None) -> str:
    moment = at or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _atomic_write_json(path: Path, value: Any) -> None:
    """Write-then-rename so a reader sees the old or the new file, never half of one.

    No fsync: the audit log is best-effort history beside the database (which
    is the durable record), and an fsync per status change cost ~9 ms, more
    than the registry transaction itself.
    """
    text = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True, default=str)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:  # mkstemp makes it 0600
            handle.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        logger.warning("audit log: cannot read %s: %s", path, exc)
        return {}
    return value if isinstance(value, dict) else {}


def _read_lines(path: Path) -> Iterator[AuditEntry]:
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        logger.warning("audit log: cannot read %s: %s", path, exc)
        return
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                entry = json.loads(raw.decode("utf-8"))
            except ValueError:
                logger.warning("audit log: %s line %d is not JSON; skipped", path, number)
                continue
            if isinstance(entry, dict):
                yield entry


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _warn(kind: str, job_id: str, exc: BaseException) -> None:
    logger.warning("audit log: could not record %s for job %s: %s", kind, job_id[:40], exc)
