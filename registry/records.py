"""The job record (seed 001 schema_version 1 plus seed 004's queue fields) and its validation."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from bus.text import find_hidden
from registry.errors import InvalidJobInput
from registry.vocabulary import Activity, EventType, JobStatus
from registry.waiting_count import stuck

RECORD_SCHEMA_VERSION: Final = 1
DEFAULT_TIMEOUT_SEC: Final = 3600
DEFAULT_IDLE_TIMEOUT_SEC: Final = 120
MAX_TIMEOUT_SEC: Final = 30 * 24 * 3600
"""Longest timeout or idle timeout a job may have (30 days). Leases are stored as
epoch milliseconds in SQLite's 64-bit INTEGER; anything near that limit would
overflow at `pick`, and no agent run is meant to outlive a month unwatched."""
MAX_PROMPT_BYTES: Final = 1024 * 1024
MAX_LABEL_CHARS: Final = 200
MAX_ARTIFACTS: Final = 1000
REDACTED: Final = "<hidden: use --show-token>"

_TOPIC_BAD = re.compile(r"[+#\x00]")
# Jobs publish on <DEFAULT_PREFIX>/<job_id>/events unless registered otherwise,
# which is what the control room's bridge ingests (`orchestrate ingest --prefix`).
DEFAULT_PREFIX: Final = "jobs"


def iso_from_ms(ms: int) -> str:
    """ISO-8601 UTC with a ``Z`` and whole seconds, as the seed's records show."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def iso_ms_from_ms(ms: int) -> str:
    """ISO-8601 UTC with milliseconds, for transition history (order within a second)."""
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


@dataclass(frozen=True)
class Job:
    """One delegated job as stored. ``missing_seqs`` holds [first, last] ranges of
    event seqs never received, so the UI can say "N events missing"."""

    job_id: str
    status: str
    created_at: str
    updated_at: str
    prompt: str
    agent: str
    agent_session: str
    broker: dict[str, Any] | None
    topic_prefix: str
    timeout_sec: int
    idle_timeout_sec: int
    expected_artifacts: list[str]
    last_seq: int
    auth_token: str | None
    claimed_at: str | None = None
    completed_at: str | None = None
    lease_until: str | None = None
    retry_count: int = 0
    result: Any = None
    missing_seqs: list[list[int]] = field(default_factory=list)
    last_event: str | None = None
    last_event_at: str | None = None
    last_detail: str | None = None
    schema_version: int = RECORD_SCHEMA_VERSION
    created_at_ms: int = 0
    lease_until_ms: int | None = None
    max_seen_seq: int = 0
    seq_floor: int = 0
    activity: str | None = None
    activity_at_ms: int | None = None
    activity_source: str | None = None
    activity_data: dict[str, Any] | None = None
    agent_session_id: str | None = None
    done_when: str | None = None

    @property
    def events_topic(self) -> str:
        """The MQTT topic this job's events travel on."""
        return f"{self.topic_prefix}/events"

    @property
    def missing_count(self) -> int:
        """How many event seqs below the highest seen never arrived."""
        return sum(last - first + 1 for first, last in self.missing_seqs)

    @property
    def signed(self) -> bool:
        """True when events for this job must carry a valid HMAC signature."""
        return self.auth_token is not None

    def to_dict(self, *, show_token: bool = False) -> dict[str, Any]:
        """The seed 001 record (plus queue and gap fields) as JSON-ready data.

        Secrets (auth_token, the broker password) are shown only on request.
        """
        broker = dict(self.broker) if self.broker is not None else None
        if broker is not None and broker.get("password") and not show_token:
            broker["password"] = REDACTED
        token = self.auth_token
        if token is not None and not show_token:
            token = REDACTED
        return {
            "schema_version": self.schema_version,
            "job_id": self.job_id,
            "status": self.status,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "prompt": self.prompt,
            "agent": self.agent,
            "agent_session": self.agent_session,
            "broker": broker,
            "topic_prefix": self.topic_prefix,
            "timeout_sec": self.timeout_sec,
            "idle_timeout_sec": self.idle_timeout_sec,
            "expected_artifacts": list(self.expected_artifacts),
            "last_seq": self.last_seq,
            "auth_token": token,
            "claimed_at": self.claimed_at,
            "completed_at": self.completed_at,
            "lease_until": self.lease_until,
            "retry_count": self.retry_count,
            "result": self.result,
            "missing_seqs": [list(r) for r in self.missing_seqs],
            "missing_count": self.missing_count,
            "last_event": self.last_event,
            "last_event_at": self.last_event_at,
            "activity": self.activity_record(),
            "agent_session_id": self.agent_session_id,
            "done_when": self.done_when,
        }

    def activity_record(self) -> dict[str, Any] | None:
        """The current activity as JSON-ready data: what, since when, from which
        source, and about what (question, tool, command); None when it has none."""
        if not self.activity:
            return None
        record: dict[str, Any] = dict(self.activity_data or {})
        record["activity"] = self.activity
        record["source"] = self.activity_source
        record["since"] = iso_from_ms(self.activity_at_ms) if self.activity_at_ms else None
        return record

    @property
    def waiting(self) -> bool:
        """True while the job waits on a person: its agent's dialog (activity
        ``waiting``) or a ``permission_required`` event it published."""
        if self.status != JobStatus.RUNNING:
            return False
        if self.activity is not None:
            return self.activity == Activity.WAITING
        return self.last_event == EventType.PERMISSION_REQUIRED

    @property
    def needs_person(self) -> bool:
        """True while a person must act: it waits (`waiting`), or it is stuck: its agent
        stopped at a block (auto mode refused a command: nothing to answer), or shows a
        screen nothing explains (`unknown`) (registry/waiting_count.py STUCK)."""
        return self.waiting or stuck(self.status, self.activity)


def job_from_row(row: sqlite3.Row) -> Job:
    """Decode a ``jobs`` row."""
    return Job(
        job_id=row["job_id"],
        status=row["status"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        prompt=row["prompt"],
        agent=row["agent"],
        agent_session=row["agent_session"],
        broker=json.loads(row["broker"]) if row["broker"] else None,
        topic_prefix=row["topic_prefix"],
        timeout_sec=int(row["timeout_sec"]),
        idle_timeout_sec=int(row["idle_timeout_sec"]),
        expected_artifacts=list(json.loads(row["expected_artifacts"] or "[]")),
        last_seq=int(row["last_seq"]),
        auth_token=row["auth_token"],
        claimed_at=row["claimed_at"],
        completed_at=row["completed_at"],
        lease_until=row["lease_until"],
        retry_count=int(row["retry_count"]),
        result=json.loads(row["result"]) if row["result"] is not None else None,
        missing_seqs=[list(r) for r in json.loads(row["missing_seqs"] or "[]")],
        last_event=row["last_event"],
        last_event_at=row["last_event_at"],
        last_detail=row["last_detail"],
        schema_version=int(row["schema_version"]),
        created_at_ms=int(row["created_at_ms"]),
        lease_until_ms=row["lease_until_ms"],
        max_seen_seq=int(row["max_seen_seq"]),
        seq_floor=int(row["seq_floor"]),
        activity=row["activity"],
        activity_at_ms=row["activity_at_ms"],
        activity_source=row["activity_source"],
        activity_data=_json_column(row, "activity_data"),
        agent_session_id=row["agent_session_id"],
        done_when=row["done_when"],
    )


def _json_column(row: sqlite3.Row, name: str) -> Any:
    text = row[name]
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def account_seq(missing: list[list[int]], max_seen: int, seq: int) -> tuple[list[list[int]], int]:
    """The missing-seq ranges and highest seq seen after ``seq`` arrives.

    A jump past ``max_seen + 1`` opens a gap [max_seen + 1, seq - 1]; a late
    arrival inside a gap closes its hole (splitting the range if needed).
    """
    if seq > max_seen:
        ranges = [list(r) for r in missing]
        if seq > max_seen + 1:
            ranges.append([max_seen + 1, seq - 1])
        return ranges, seq
    ranges = []
    for first, last in missing:
        if first <= seq <= last:
            if first < seq:
                ranges.append([first, seq - 1])
            if seq < last:
                ranges.append([seq + 1, last])
        else:
            ranges.append([first, last])
    return ranges, max_seen


# -- validation ----------------------------------------------------------------


def check_prompt(prompt: object) -> str:
    """A non-empty prompt of reasonable size (it is typed into a pane later)."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise InvalidJobInput("prompt must not be empty")
    if len(prompt.encode("utf-8", "surrogatepass")) > MAX_PROMPT_BYTES:
        raise InvalidJobInput(f"prompt is larger than {MAX_PROMPT_BYTES // 1024} KiB")
    if "\x00" in prompt:
        raise InvalidJobInput("prompt contains a NUL character")
    return prompt


def check_label(name: str, value: object) -> str:
    """An agent name or agent_session label: one printable word such as ``tmux:claude``."""
    if not isinstance(value, str) or not value:
        raise InvalidJobInput(f"{name} must not be empty")
    # One word with no hidden character (bus/text.py): a label is printed in tables and
    # titles, where such characters would act on the terminal or reorder text.
    one_word = not any(char.isspace() for char in value)
    if len(value) > MAX_LABEL_CHARS or not one_word or find_hidden(value) is not None:
        raise InvalidJobInput(
            f"{name} must be one word of printable characters (at most {MAX_LABEL_CHARS})"
        )
    return value


def check_seconds(name: str, value: object) -> int:
    """A positive whole number of seconds, at most ``MAX_TIMEOUT_SEC``."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InvalidJobInput(f"{name} must be a positive number of seconds, got {value!r}")
    if value > MAX_TIMEOUT_SEC:
        raise InvalidJobInput(f"{name} must be at most {MAX_TIMEOUT_SEC} seconds (30 days)")
    return value


def check_artifacts(artifacts: Iterable[object]) -> list[str]:
    """Expected artifact names: non-empty strings, no NUL."""
    names: list[str] = []
    for item in artifacts:
        if not isinstance(item, str) or not item.strip() or "\x00" in item:
            raise InvalidJobInput(f"artifact names must be non-empty text, got {item!r}")
        names.append(item)
    if len(names) > MAX_ARTIFACTS:
        raise InvalidJobInput(f"at most {MAX_ARTIFACTS} expected artifacts")
    return names


def ingest_prefix_for(topic_prefix: str) -> str | None:
    """The ``orchestrate ingest --prefix`` whose ``<prefix>/+/events`` carries this job's events.

    A bridge subscribes with one single-level wildcard, so only a topic prefix
    of two levels or more has one; a one-level prefix reaches no bridge at all,
    nor does one with a leading ``/`` (an empty first level ``--prefix`` strips).
    """
    parent, _, name = topic_prefix.rstrip("/").rpartition("/")
    return parent if parent and name and not parent.startswith("/") else None


def check_topic_prefix(prefix: object) -> str:
    """An MQTT topic prefix a publisher may use (no wildcards, no trailing slash)."""
    if not isinstance(prefix, str) or not prefix.strip("/") or _TOPIC_BAD.search(prefix):
        raise InvalidJobInput(f"topic prefix must be a topic without wildcards, got {prefix!r}")
    return prefix.rstrip("/")


def check_broker(block: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The job's broker block {host, port, tls, username, password}, or None."""
    if block is None:
        return None
    host = block.get("host")
    if not isinstance(host, str) or not host.strip():
        raise InvalidJobInput("broker block needs a host")
    from bus.broker_checks import host_or_none  # ipaddress: only when a broker is given

    if host_or_none(host.strip()) is None:
        raise InvalidJobInput(f"broker host must be an IP address or a host name, got {host!r}")
    port = block.get("port", 1883)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise InvalidJobInput(f"broker port must be in 1-65535, got {port!r}")
    tls = block.get("tls", False)
    if not isinstance(tls, bool):
        raise InvalidJobInput(f"broker tls must be true or false, got {tls!r}")
    out: dict[str, Any] = {"host": host.strip(), "port": port, "tls": tls}
    for key in ("username", "password"):
        value = block.get(key)
        if value is not None and not isinstance(value, str):
            raise InvalidJobInput(f"broker {key} must be text")
        out[key] = value or None
    return out
