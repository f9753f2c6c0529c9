"""Signed fleet commands: what a control room asks a node to do, and the node's answer.

A command (take a placed job, answer, send, cancel) travels on the node's
``<prefix>/nodes/<node>/commands`` topic (``bus.fleet_topics``) as one JSON object
signed like a job's events are (``registry/signing.py``: HMAC-SHA256 over the
canonical JSON, sorted keys, no spaces, the signature left out), keyed by the node's
own key. That key is derived from the control room's key
(``<state>/fleet/control.key``, made on first use) and the node's name, so each node
holds a key that signs for itself alone: a node broken into cannot command another.
``orchestrate node key NAME`` prints it for ``node run --trust KEYFILE``.

A command's ``id`` is made once by whoever sends it; the node records each id it
executed with its confirmation (``DoneCommands``), so a redelivery (QoS 1, a control
room sending it again after a restart) is confirmed again, never done twice. The
control room records each command it sent before sending it (``SentCommands``), and
each confirmation that comes back, by the command that waited for it or by the ingest
bridge: a command whose sender died (a control room restarted mid-command) still shows
in ``job why`` as confirmed, or as not confirmed yet.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bus.db import BusDB, apply_migrations, now_ms, translate
from registry.errors import RegistryError
from registry.events import is_job_id
from registry.presence import is_node_name
from registry.records import Job, iso_from_ms
from registry.vocabulary import FleetVerb

MAX_COMMAND_BYTES: Final = 512 * 1024
KEY_FILE: Final = Path("fleet") / "control.key"
SIGNATURE: Final = "sig"
VERSION_KEY: Final = "fleet_commands_schema_version"

SENT_VERSION_KEY: Final = "fleet_commands_sent_schema_version"
_SENT_V1 = """
CREATE TABLE IF NOT EXISTS fleet_commands_sent (
    id TEXT PRIMARY KEY,
    node TEXT NOT NULL,
    job_id TEXT NOT NULL,
    verb TEXT NOT NULL,
    sent_at_ms INTEGER NOT NULL,
    confirmed_at_ms INTEGER,
    ok INTEGER,
    detail TEXT
);
CREATE INDEX IF NOT EXISTS idx_fleet_commands_sent_job ON fleet_commands_sent(job_id, sent_at_ms);
"""
_V1 = """
CREATE TABLE IF NOT EXISTS fleet_commands_done (
    id TEXT PRIMARY KEY,
    job_id TEXT NOT NULL,
    verb TEXT NOT NULL,
    confirm BLOB NOT NULL,
    at_ms INTEGER NOT NULL
);
"""


class InvalidCommand(RegistryError):
    """A command that is malformed, unsigned, forged or for another node (one line)."""


@dataclass(frozen=True)
class Command:
    """One command for one node about one job."""

    id: str
    node: str
    job_id: str
    verb: FleetVerb
    args: dict[str, Any] = field(default_factory=dict, hash=False)
    at_ms: int = 0

    def body(self) -> dict[str, Any]:
        """The wire form without its signature."""
        return {
            "v": 1,
            "id": self.id,
            "node": self.node,
            "job_id": self.job_id,
            "verb": str(self.verb),
            "args": self.args,
            "at_ms": self.at_ms,
        }


def new_command(node: str, job_id: str, verb: FleetVerb, **args: Any) -> Command:
    """A command with a fresh id (the id is what makes it done once)."""
    return Command(secrets.token_hex(8), node, job_id, verb, dict(args), now_ms())


def take_command(job: Job, node: str) -> Command:
    """The ``take`` command of a placed job: everything the node needs to start it,
    its auth token included (the node signs its events with it). Its id is the job's,
    so sending it again (at each announcement of the node) is taken once."""
    args = {
        "prompt": job.prompt,
        "agent": job.agent,
        "agent_session": job.agent_session,
        "timeout_sec": job.timeout_sec,
        "idle_timeout_sec": job.idle_timeout_sec,
        "expected_artifacts": list(job.expected_artifacts),
        "done_when": job.done_when,
        "token": job.auth_token,
    }
    return Command(f"take{job.job_id}", node, job.job_id, FleetVerb.TAKE, args, now_ms())


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def node_key(control_key: bytes, node: str) -> bytes:
    """The key that signs commands for ``node`` alone (derived, never stored by it)."""
    return hmac.new(control_key, b"orchestrate node " + node.encode(), hashlib.sha256).digest()


def signed(command: Command, key: bytes) -> bytes:
    """``command`` on the wire, signed with ``key`` (the node's key)."""
    body = command.body()
    body[SIGNATURE] = hmac.new(key, _canonical(body), hashlib.sha256).hexdigest()
    return _canonical(body)


def verify(payload: bytes, key: bytes | None, node: str) -> Command:
    """The command in ``payload`` if it is well-formed, for ``node`` and signed with
    ``key``; ``InvalidCommand`` with a one-line reason otherwise (``key`` None: this
    node trusts no control room, so it refuses everything)."""
    if len(payload) > MAX_COMMAND_BYTES:
        raise InvalidCommand(f"command is {len(payload)} bytes, over {MAX_COMMAND_BYTES}")
    try:
        body = json.loads(payload)
    except (UnicodeDecodeError, ValueError):
        raise InvalidCommand("command is not JSON") from None
    if not isinstance(body, dict):
        raise InvalidCommand("command is not a JSON object")
    carried = body.pop(SIGNATURE, None)
    ident = body.get("id")
    if not isinstance(ident, str) or not ident.isalnum() or len(ident) > 64:
        raise InvalidCommand("command has no usable id")
    if not isinstance(carried, str):
        raise InvalidCommand(f"command {ident} is unsigned")
    if key is None:
        raise InvalidCommand(f"command {ident} refused: this node trusts no control room (--trust)")
    expected = hmac.new(key, _canonical(body), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(carried.encode("utf-8", "replace"), expected.encode()):
        raise InvalidCommand(f"command {ident}: signature mismatch (forged, or another key)")
    verb, job_id, args, at_ms = (
        body.get("verb"),
        body.get("job_id"),
        body.get("args"),
        body.get("at_ms"),
    )
    if body.get("v") != 1 or body.get("node") != node:
        raise InvalidCommand(f"command {ident} is not a v1 command for node {node}")
    if verb not in set(FleetVerb) or not is_job_id(job_id) or not isinstance(args, dict):
        raise InvalidCommand(f"command {ident} has a bad verb, job id or args")
    if not isinstance(at_ms, int):
        raise InvalidCommand(f"command {ident} has no time")
    return Command(ident, node, str(job_id), FleetVerb(verb), args, at_ms)


@dataclass(frozen=True)
class Confirmation:
    """A node's answer to one command: done (``ok``) or refused, and what happened."""

    id: str
    job_id: str
    verb: str
    ok: bool
    detail: str

    def to_json(self) -> bytes:
        """The wire form."""
        return json.dumps(
            {"id": self.id, "job_id": self.job_id, "verb": self.verb, "ok": self.ok,
             "detail": self.detail[:2000]}
        ).encode()  # fmt: skip

    @classmethod
    def from_json(cls, payload: bytes) -> Confirmation | None:
        """The confirmation in ``payload``, or None if it is not one."""
        try:
            raw = json.loads(payload)
        except (UnicodeDecodeError, ValueError):
            return None
        if not isinstance(raw, dict):
            return None
        fields = (raw.get("id"), raw.get("job_id"), raw.get("verb"), raw.get("detail"))
        if not all(isinstance(value, str) for value in fields) or not isinstance(
            raw.get("ok"), bool
        ):
            return None
        return cls(raw["id"], raw["job_id"], raw["verb"], raw["ok"], raw["detail"])


def control_key(state_dir: Path) -> bytes:
    """The control room's key (32 random bytes, made on first use, mode 0600)."""
    path = state_dir / KEY_FILE
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pass
    except ValueError:
        raise InvalidCommand(f"{path} does not hold a hex key") from None
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    fresh = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="ascii") as file:
        file.write(key.hex() + "\n")
    try:
        os.link(fresh, path)  # whole or not at all; the first of two at once wins
    except FileExistsError:
        pass
    finally:
        fresh.unlink()
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def read_trust(path: Path) -> bytes:
    """The node key in ``path`` (``node key`` wrote it); ``InvalidCommand`` if unusable."""
    try:
        text = path.read_text(encoding="ascii").strip()
        key = bytes.fromhex(text)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise InvalidCommand(f"cannot read a hex key from {path}: {exc}") from None
    if len(key) < 16:
        raise InvalidCommand(f"{path}: a key is at least 16 bytes, got {len(key)}")
    return key


def check_node(name: str) -> str:
    """``name`` if it can name a node (``InvalidCommand`` otherwise)."""
    if not is_node_name(name):
        raise InvalidCommand(f"not a node name: {name[:64]!r}")
    return name


class DoneCommands:
    """The node's record of every command it executed, with its confirmation."""

    def __init__(self, db: BusDB) -> None:
        self.db = db
        try:
            apply_migrations(db.conn, VERSION_KEY, [_V1], db.path)
        except sqlite3.Error as exc:
            raise translate(exc, db.path) from exc

    def confirmation(self, command_id: str) -> bytes | None:
        """The confirmation sent for ``command_id`` (None: never executed here)."""
        row = self.db.conn.execute(
            "SELECT confirm FROM fleet_commands_done WHERE id = ?", (command_id,)
        ).fetchone()
        return bytes(row[0]) if row is not None else None

    def record(self, command: Command, confirmation: Confirmation) -> None:
        """Remember that ``command`` ran (and what it said)."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO fleet_commands_done (id, job_id, verb, confirm, at_ms) "
                "VALUES (?, ?, ?, ?, ?)",
                (command.id, command.job_id, str(command.verb), confirmation.to_json(), now_ms()),
            )

    def taken_jobs(self) -> list[str]:
        """The jobs this node took (their events go to the control room)."""
        rows = self.db.conn.execute(
            "SELECT job_id FROM fleet_commands_done WHERE verb = ? ORDER BY at_ms",
            (str(FleetVerb.TAKE),),
        ).fetchall()
        return [str(row[0]) for row in rows]


@dataclass(frozen=True)
class SentCommand:
    """A command the control room sent, and what its node said (None: nothing yet)."""

    id: str
    node: str
    job_id: str
    verb: str
    sent_at_ms: int
    confirmed_at_ms: int | None
    ok: bool | None
    detail: str | None

    def line(self) -> str:
        """How `job why` tells it (``detail`` is the node's text: its sink sanitises)."""
        sent = f"{self.verb} sent to {self.node} at {iso_from_ms(self.sent_at_ms)}"
        if self.confirmed_at_ms is None:
            return f"{sent}, not confirmed yet (it runs when {self.node} takes it)"
        word = "done" if self.ok else "refused"
        return f"{sent}, {word}: {self.detail}"


class SentCommands:
    """The control room's record of the commands it sent to nodes."""

    def __init__(self, db: BusDB) -> None:
        self.db = db
        try:
            apply_migrations(db.conn, SENT_VERSION_KEY, [_SENT_V1], db.path)
        except sqlite3.Error as exc:
            raise translate(exc, db.path) from exc

    def sent(self, command: Command) -> None:
        """Record ``command`` before it goes out (again: the first sending stays)."""
        with self.db.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO fleet_commands_sent (id, node, job_id, verb, sent_at_ms) "
                "VALUES (?, ?, ?, ?, ?)",
                (command.id, command.node, command.job_id, str(command.verb), now_ms()),
            )

    def confirmed(self, node: str, confirmation: Confirmation) -> bool:
        """Record what ``node`` said of one of the commands sent to it (only to it: a
        node cannot confirm another's); False if there was no such command waiting."""
        with self.db.transaction() as conn:
            changed = conn.execute(
                "UPDATE fleet_commands_sent SET confirmed_at_ms = ?, ok = ?, detail = ? "
                "WHERE id = ? AND node = ? AND confirmed_at_ms IS NULL",
                (now_ms(), int(confirmation.ok), confirmation.detail[:2000], confirmation.id, node),
            ).rowcount
        return changed > 0

    def last(self, job_id: str) -> SentCommand | None:
        """The latest command sent about ``job_id`` (None: none)."""
        row = self.db.conn.execute(
            "SELECT id, node, job_id, verb, sent_at_ms, confirmed_at_ms, ok, detail "
            "FROM fleet_commands_sent WHERE job_id = ? ORDER BY sent_at_ms DESC, rowid DESC "
            "LIMIT 1",
            (job_id,),
        ).fetchone()
        if row is None:
            return None
        ok = None if row[6] is None else bool(row[6])
        ident, node, job, verb, sent_at, confirmed_at = row[:6]
        return SentCommand(ident, node, job, verb, sent_at, confirmed_at, ok, row[7])
