"""Jobs run in their own git work tree, and their review (seed 002's worker machine).

A record per such job: the repository, the base branch and the commit the job's
branch started from, the branch, the work tree, and the job's place in
``registry.states.WORKER`` (ASSIGNED -> WORKING -> IN_REVIEW -> APPROVED ->
COMPLETED). Each move is recorded with its reason, like a job's, and announced
on the bus (``review.status``) in the same transaction; `job why` explains it.

The tables have their own version key (``review_schema_version``), so they
migrate independently of the registry's. This module never runs git: the app
reads the work trees and hands the registry what it found (``ReviewSummary``).
"""

from __future__ import annotations

import builtins
import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from bus.db import apply_migrations, now_ms, translate
from bus.messages import Bus
from registry import states
from registry.errors import IllegalTransition, InvalidJobInput, RegistryError
from registry.records import iso_from_ms
from registry.store import RecordKind, Records, record_dict
from registry.vocabulary import JobStatus, MessageType, ReviewState
from registry.wording import counted

VERSION_KEY: Final = "review_schema_version"
REVIEW_STATUS: Final = MessageType.REVIEW_STATUS
"""The bus message announcing a review's move (not one of the registry's reserved
``MessageType``s: ``registry/bus_types.py`` does not reserve ``review.``)."""
LIVE: Final = (
    ReviewState.ASSIGNED,
    ReviewState.WORKING,
    ReviewState.IN_REVIEW,
    ReviewState.APPROVED,
)
WORK_DONE: Final = (ReviewState.IN_REVIEW, ReviewState.APPROVED)
"""The work waits for a person, not the agent."""
BRANCH_PREFIX: Final = "orchestrate/"
MERGE_MODES: Final = ("merge", "squash", "rebase")

_V1 = """
CREATE TABLE IF NOT EXISTS reviews (
    job_id TEXT PRIMARY KEY REFERENCES jobs(job_id) ON DELETE CASCADE,
    state TEXT NOT NULL,
    repo TEXT NOT NULL,
    base TEXT NOT NULL,
    base_commit TEXT NOT NULL,
    branch TEXT NOT NULL,
    worktree TEXT NOT NULL,
    workdir TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    summary TEXT,
    conflicts TEXT,
    merge_mode TEXT,
    merged_commit TEXT,
    discarded INTEGER NOT NULL DEFAULT 0,
    removed_at TEXT,
    removed_at_ms INTEGER
);
CREATE INDEX IF NOT EXISTS idx_reviews_state ON reviews(state, updated_at_ms);

CREATE TABLE IF NOT EXISTS review_transitions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id TEXT NOT NULL REFERENCES reviews(job_id) ON DELETE CASCADE,
    at TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    transition TEXT,
    reason TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS idx_review_transitions_job ON review_transitions(job_id, id);
"""
# Where the base was when the branch was merged into it: the merged diff is onto..merged.
_V2 = "ALTER TABLE reviews ADD COLUMN merged_onto TEXT;"
MIGRATIONS: list[str] = [_V1, _V2]


class ReviewNotFound(RegistryError):
    """The job was not run in a work tree of its own (or has no such record)."""


@dataclass(frozen=True)
class ReviewSummary:
    """What a job's branch holds when it comes up for review, against its merge base."""

    head: str
    commits: int
    files: int
    added: int
    deleted: int
    uncommitted_files: int = 0

    def describe(self) -> str:
        """'2 commits, 3 files +40 \u22122 (1 file uncommitted)'; 'no changes' when empty."""
        if not self.files and not self.commits:
            return "no changes"
        text = f"{counted(self.commits, 'commit')}, {counted(self.files, 'file')} "
        text += f"+{self.added} \u2212{self.deleted}"
        if self.uncommitted_files:
            text += f" ({counted(self.uncommitted_files, 'file')} uncommitted)"
        return text

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, stored in the review's ``summary`` column."""
        return record_dict(self)

    @classmethod
    def from_json(cls, text: str | None) -> ReviewSummary | None:
        """The summary stored as JSON; None when there is none or it is unreadable."""
        if not text:
            return None
        try:
            data = json.loads(text)
            return cls(**{key: data[key] for key in cls.__dataclass_fields__})
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class Review:
    """One job's work tree and review state, as stored."""

    job_id: str
    state: str
    repo: str
    base: str
    base_commit: str
    branch: str
    worktree: str
    workdir: str
    created_at: str
    updated_at: str
    updated_at_ms: int
    summary: ReviewSummary | None = None
    conflicts: tuple[str, ...] = ()
    merge_mode: str | None = None
    merged_commit: str | None = None
    merged_onto: str | None = None  # the base's commit the merge was made on
    discarded: bool = False
    removed_at: str | None = None
    removed_at_ms: int | None = None

    @property
    def live(self) -> bool:
        """Still in the machine's working part (not completed, cancelled or failed)."""
        return self.state in LIVE

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form for `review list --json` and `review show --json` (the
        millisecond twins of the stamps are for ordering, not for people)."""
        return record_dict(self, omit=("updated_at_ms", "removed_at_ms"))


@dataclass(frozen=True)
class ReviewStamp:
    """What changes when a review moves or is updated (``own``), and when any review
    moves (``moves``: another job merged, so the base this one merges into moved)."""

    own: tuple[Any, ...]
    moves: int


@dataclass(frozen=True)
class JobMove:
    """A job's latest status move, as `follow_jobs` weighs it against the review."""

    job_id: str
    status: str
    at_ms: int
    reason: str
    started_at_ms: int | None = None  # its first move to running since the review's last


def _review(row: sqlite3.Row) -> Review:
    try:
        conflicts = tuple(str(item) for item in json.loads(row["conflicts"] or "[]"))
    except ValueError:
        conflicts = ()
    return Review(
        job_id=row["job_id"],
        state=row["state"],
        repo=row["repo"],
        base=row["base"],
        base_commit=row["base_commit"],
        branch=row["branch"],
        worktree=row["worktree"],
        workdir=row["workdir"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        updated_at_ms=int(row["updated_at_ms"]),
        summary=ReviewSummary.from_json(row["summary"]),
        conflicts=conflicts,
        merge_mode=row["merge_mode"],
        merged_commit=row["merged_commit"],
        merged_onto=row["merged_onto"],
        discarded=bool(row["discarded"]),
        removed_at=row["removed_at"],
        removed_at_ms=row["removed_at_ms"],
    )


def _not_found(job_id: str) -> ReviewNotFound:
    return ReviewNotFound(f"job {job_id!r} did not run in a work tree of its own")


REVIEWS: Final = RecordKind(
    table="reviews",
    key="job_id",
    history_table="review_transitions",
    from_column="from_state",
    to_column="to_state",
    decode=_review,
    missing=_not_found,
)


class ReviewStore:
    """Review records in the bus's database, next to the jobs they belong to."""

    def __init__(self, bus: Bus) -> None:
        self.records = Records(bus, REVIEWS)  # migrates the jobs table it refers to
        self.bus = bus
        self.db = bus.db
        try:
            apply_migrations(self.db.conn, VERSION_KEY, MIGRATIONS, self.db.path)
        except sqlite3.Error as exc:
            raise translate(exc, self.db.path) from exc

    # -- creating ---------------------------------------------------------------
    def create(
        self,
        job_id: str,
        *,
        repo: str,
        base: str,
        base_commit: str,
        branch: str,
        worktree: str,
        workdir: str,
    ) -> Review:
        """Record a job's new work tree: ASSIGNED, until its agent starts."""
        for name, value in (("repo", repo), ("base", base), ("branch", branch)):
            if not value or any(ord(c) < 32 for c in value):
                raise InvalidJobInput(f"review {name} must be non-empty printable text")
        with self.records.write() as conn:
            if conn.execute("SELECT 1 FROM reviews WHERE job_id = ?", (job_id,)).fetchone():
                raise InvalidJobInput(f"job {job_id} already has a work tree")
            at_ms = now_ms()
            stamp = iso_from_ms(at_ms)
            conn.execute(
                "INSERT INTO reviews (job_id, state, repo, base, base_commit, branch, worktree, "
                "workdir, created_at, updated_at, updated_at_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    job_id,
                    states.WORKER.initial,
                    repo,
                    base,
                    base_commit,
                    branch,
                    worktree,
                    workdir,
                    stamp,
                    stamp,
                    at_ms,
                ),
            )
            reason = f"work tree on {branch}, from {base} at {base_commit[:12]}"
            self._record(conn, job_id, at_ms, None, states.WORKER.initial, reason, None)
            return self.records.require(conn, job_id)

    # -- reading ----------------------------------------------------------------
    def find(self, job_id: str) -> Review | None:
        """The job's review record, or None when it did not run in a work tree."""
        return self.records.load(self.db.conn, job_id)

    def get(self, job_id: str) -> Review:
        """The job's review record; ReviewNotFound if it has none."""
        return self.records.get(job_id)

    def list(self, *, state: Sequence[str] | None = None) -> builtins.list[Review]:
        """Records oldest first, optionally only some states."""
        sql, params = "SELECT * FROM reviews", []
        if state:
            for name in state:
                states.WORKER.require_state(name)
            sql += f" WHERE state IN ({','.join('?' * len(state))})"
            params = list(state)
        rows = self.records.read(sql + " ORDER BY created_at, rowid", params)
        return [_review(row) for row in rows]

    def states_of(self, job_ids: Sequence[str]) -> dict[str, str]:
        """The review state of each of these jobs that has one (the jobs table's rows)."""
        found: dict[str, str] = {}
        ids = list(job_ids)
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for row in self.records.read(
                f"SELECT job_id, state FROM reviews WHERE job_id IN ({marks})", chunk
            ):
                found[row[0]] = row[1]
        return found

    def count(self, state: str) -> int:
        """How many reviews are in ``state`` (the header's "in review")."""
        states.WORKER.require_state(state)
        rows = self.records.read("SELECT COUNT(*) FROM reviews WHERE state = ?", (state,))
        return int(rows[0][0])

    def stamp(self, job_id: str) -> ReviewStamp:
        """The review's stamp, in one indexed read (a screen showing it polls this)."""
        rows = self.records.read(
            "SELECT state, updated_at_ms, conflicts, removed_at_ms, "
            "(SELECT MAX(id) FROM review_transitions) FROM reviews WHERE job_id = ?",
            (job_id,),
        )
        if not rows:
            raise _not_found(job_id)
        return ReviewStamp(tuple(rows[0])[:4], int(rows[0][4] or 0))

    def history(self, job_id: str) -> builtins.list[states.StateChange]:
        """The review's recorded transitions, oldest first."""
        return self.records.history(job_id)

    def why(self, job_id: str) -> str:
        """One line saying why the job's review is where it is."""
        return states.explain(states.WORKER, self.history(job_id))

    def job_moves(self) -> builtins.list[tuple[Review, JobMove]]:
        """Reviews whose state may follow their job's (still working, or failed or
        cancelled but not discarded), each with the job's latest status move."""
        rows = self.records.read(
            "SELECT r.*, j.status AS job_status, t.at_ms AS job_at_ms, t.reason AS job_reason, "
            "(SELECT MIN(s.at_ms) FROM job_transitions s WHERE s.job_id = r.job_id "
            "AND s.to_status = ? AND s.at_ms >= r.updated_at_ms) AS job_started_at_ms "
            "FROM reviews r JOIN jobs j ON j.job_id = r.job_id "
            "JOIN job_transitions t ON t.id = "
            "(SELECT MAX(id) FROM job_transitions WHERE job_id = r.job_id) "
            "WHERE r.state IN (?, ?) OR (r.state IN (?, ?) AND r.discarded = 0 "
            "AND j.status IN (?, ?)) ORDER BY r.created_at, r.rowid",
            (
                JobStatus.RUNNING,
                *(ReviewState.ASSIGNED, ReviewState.WORKING),
                *(ReviewState.CANCELLED, ReviewState.FAILED),
                *(JobStatus.PENDING, JobStatus.RUNNING),
            ),
        )
        return [
            (
                _review(row),
                JobMove(
                    row["job_id"],
                    row["job_status"],
                    int(row["job_at_ms"]),
                    str(row["job_reason"] or ""),
                    row["job_started_at_ms"],
                ),
            )
            for row in rows
        ]

    # -- moving -------------------------------------------------------------------
    def move(
        self,
        job_id: str,
        transition: str,
        reason: str,
        *,
        at_ms: int | None = None,
        expect: Sequence[str] | None = None,
        summary: ReviewSummary | None = None,
        merged: tuple[str, str, str] | None = None,
    ) -> Review:
        """Apply the WORKER machine's ``transition`` (IllegalTransition if it does not
        apply). ``expect``: the states the caller saw, so a move raced by another
        process is refused rather than applied to a state nobody looked at.
        ``summary`` is what IN_REVIEW shows; ``merged`` is (mode, commit, the base's
        commit it was merged onto) for COMPLETED.
        ``at_ms`` dates a move that happened earlier (a job event caught up with)."""
        with self.records.write() as conn:
            review = self.records.require(conn, job_id)
            if expect is not None and review.state not in expect:
                raise _changed_under(job_id, review.state, transition)
            target = states.next_state(states.WORKER, review.state, transition, job_id)
            moment = now_ms()
            at = min(at_ms, moment) if at_ms is not None else moment
            at = max(at, review.updated_at_ms)  # never before the move it follows
            fields: dict[str, Any] = {
                "state": target,
                "updated_at": iso_from_ms(moment),
                "updated_at_ms": at,
            }
            if summary is not None:
                fields["summary"] = json.dumps(summary.to_dict())
            if target in (ReviewState.WORKING, ReviewState.COMPLETED):
                fields["conflicts"] = None
            if merged is not None:
                fields["merge_mode"], fields["merged_commit"], fields["merged_onto"] = merged
            assignments = ", ".join(f"{name} = ?" for name in fields)
            conn.execute(
                f"UPDATE reviews SET {assignments} WHERE job_id = ?", (*fields.values(), job_id)
            )
            self._record(conn, job_id, at, review.state, target, reason, transition)
            return self.records.require(conn, job_id)

    def set_conflicts(self, job_id: str, conflicts: Sequence[str]) -> Review:
        """Remember the files the last merge attempt could not merge (empty: none)."""
        with self.records.write() as conn:
            self.records.require(conn, job_id)
            value = json.dumps(list(conflicts), ensure_ascii=False) if conflicts else None
            conn.execute("UPDATE reviews SET conflicts = ? WHERE job_id = ?", (value, job_id))
            self._announce(conn, job_id, {"job_id": job_id, "conflicts": len(conflicts)})
            return self.records.require(conn, job_id)

    def mark_removed(self, job_id: str, *, discarded: bool) -> Review:
        """The work tree (and branch) are gone: by `review discard`, or by `gc`."""
        with self.records.write() as conn:
            self.records.require(conn, job_id)
            at_ms = now_ms()
            conn.execute(
                "UPDATE reviews SET removed_at = ?, removed_at_ms = ?, "
                "discarded = MAX(discarded, ?) WHERE job_id = ?",
                (iso_from_ms(at_ms), at_ms, int(discarded), job_id),
            )
            self._announce(conn, job_id, {"job_id": job_id, "removed": True})
            return self.records.require(conn, job_id)

    def mark_discarded(self, job_id: str) -> Review:
        """A person threw the work away (its tree may outlive this, if it could not go)."""
        with self.records.write() as conn:
            self.records.require(conn, job_id)
            conn.execute("UPDATE reviews SET discarded = 1 WHERE job_id = ?", (job_id,))
            return self.records.require(conn, job_id)

    # -- helpers ------------------------------------------------------------------
    def _record(
        self,
        conn: sqlite3.Connection,
        job_id: str,
        at_ms: int,
        before: str | None,
        after: str,
        reason: str,
        transition: str | None,
    ) -> None:
        """One move: its history row and its ``review.status`` message, together."""
        self.records.record_move(conn, job_id, at_ms, before, after, reason, transition)
        payload = {"job_id": job_id, "from": before, "to": after, "reason": reason}
        self._announce(conn, job_id, payload)

    def _announce(self, conn: sqlite3.Connection, job_id: str, payload: dict[str, Any]) -> None:
        self.records.announce(conn, REVIEW_STATUS, job_id, payload)


def _changed_under(job_id: str, state: str, transition: str) -> RegistryError:
    """The refusal for a move whose review changed under the caller."""
    return IllegalTransition(f"review {job_id}: is {state} now; cannot {transition} it")
