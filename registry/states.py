"""The job, session and worker state machines, as data, with one checker.

Each machine is a table of named transitions (``pick``: pending -> running,
...). Code never compares status strings to decide what is legal: it asks
:func:`check_transition` (by target) or :func:`next_state` (by transition
name), which raise :class:`~registry.errors.UnknownStatus` or
:class:`~registry.errors.IllegalTransition` with one line a person can act on.
:func:`explain` turns a record's recorded history into "why is it in this
state".

Session decisions (the seed 000 glossary leaves them open): ``terminated``
is final, since the tmux session is gone and there is nothing to resume;
``archived`` (soft stop, tmux left alive) can be resumed or hard-stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from registry.errors import IllegalTransition, UnknownStatus
from registry.vocabulary import Activity, JobStatus, ReviewState, SessionStatus


@dataclass(frozen=True)
class Transition:
    """A named move from any of ``sources`` to ``target``.

    ``phrase`` is how :func:`explain` says it happened when no reason was
    recorded; ``tally``, when set, makes explain count repeats of it
    ("retried {n} times after lease expiry", with a multiplication sign).
    ``recorded_only`` transitions are named only when the change recorded them, so
    histories written before they existed still read as the older transition.
    ``by_name_only`` ones are taken only by code that names them (`next_state`,
    `check_move`): never inferred from a target (`job status --set running` on a
    completed job stays illegal), and the state they leave still counts as final.
    """

    name: str
    sources: frozenset[str]
    target: str
    phrase: str
    tally: str = ""
    recorded_only: bool = False
    by_name_only: bool = False


@dataclass(frozen=True)
class StateMachine:
    """States, the initial one, and the named transitions between them."""

    name: str
    states: tuple[str, ...]
    initial: str
    transitions: tuple[Transition, ...]

    def __post_init__(self) -> None:
        """Refuse a table that names a state it does not declare."""
        known = set(self.states)
        if self.initial not in known:
            raise ValueError(f"{self.name}: initial state {self.initial!r} is not a state")
        for move in self.transitions:
            unknown = (move.sources | {move.target}) - known
            if unknown:
                raise ValueError(f"{self.name}.{move.name}: unknown states {sorted(unknown)}")

    @property
    def graph(self) -> Mapping[str, frozenset[str]]:
        """state -> the states reachable from it in one move."""
        graph: dict[str, set[str]] = {state: set() for state in self.states}
        for move in self.transitions:
            if move.by_name_only:
                continue
            for source in move.sources:
                graph[source].add(move.target)
        return {state: frozenset(targets) for state, targets in graph.items()}

    def allowed(self, state: str) -> tuple[str, ...]:
        """The states ``state`` may move to, in declaration order."""
        self.require_state(state)
        targets = self.graph[state]
        return tuple(s for s in self.states if s in targets)

    def is_final(self, state: str) -> bool:
        """True when no transition leaves ``state``."""
        return not self.allowed(state)

    def transition(self, name: str) -> Transition:
        """The transition called ``name``; IllegalTransition if there is none."""
        for move in self.transitions:
            if move.name == name:
                return move
        known = ", ".join(move.name for move in self.transitions)
        raise IllegalTransition(f"{self.name}: no transition called {name!r} (known: {known})")

    def names_between(self, current: str, target: str) -> tuple[str, ...]:
        """Names of the transitions that move ``current`` to ``target``."""
        return tuple(
            move.name
            for move in self.transitions
            if current in move.sources and move.target == target and not move.by_name_only
        )

    def require_state(self, state: str) -> None:
        """Raise UnknownStatus unless ``state`` belongs to this machine."""
        if state not in self.states:
            raise UnknownStatus(
                f"unknown {self.name} status {state!r} (known: {', '.join(self.states)})"
            )


def _move(
    name: str,
    sources: str | tuple[str, ...],
    target: str,
    phrase: str,
    tally: str = "",
    *,
    recorded_only: bool = False,
    by_name_only: bool = False,
) -> Transition:
    """A `Transition` from one state or several (vocabulary members) to ``target``."""
    from_states = frozenset((sources,) if isinstance(sources, str) else sources)
    return Transition(name, from_states, target, phrase, tally, recorded_only, by_name_only)


# The recorded name of a move a person made (`job status --set`): no transition of
# the machine has it, so explain never takes it for one (a requeue by hand is not a
# lease expiry) and says it with its reason alone.
BY_HAND: Final = "by_hand"

JOB: Final = StateMachine(
    name="job",
    states=tuple(JobStatus),
    initial=JobStatus.PENDING,
    transitions=(
        _move("pick", JobStatus.PENDING, JobStatus.RUNNING, "picked by its agent session"),
        _move("start", JobStatus.PENDING, JobStatus.RUNNING, "agent published started"),
        _move("complete", JobStatus.RUNNING, JobStatus.COMPLETED, "agent published completed"),
        _move("fail", JobStatus.RUNNING, JobStatus.ERROR, "agent published error"),
        _move("cancel", (JobStatus.PENDING, JobStatus.RUNNING), JobStatus.CANCELLED, "cancelled"),
        _move(
            "lease_expired",
            JobStatus.RUNNING,
            JobStatus.PENDING,
            "lease expired",
            tally="retried {n}\u00d7 after lease expiry",
        ),
        _move(
            "release",
            JobStatus.RUNNING,
            JobStatus.PENDING,
            "given back by its worker",
            tally="given back {n}\u00d7 by its worker",
            recorded_only=True,
        ),
        _move(
            "resume",
            (JobStatus.ERROR, JobStatus.CANCELLED),
            JobStatus.PENDING,
            "resumed",
            tally="resumed {n}\u00d7",
        ),
        _move(
            "restart",
            JobStatus.RUNNING,
            JobStatus.PENDING,
            "restarted after its pane was lost",
            tally="restarted {n}\u00d7 after an interruption",
            recorded_only=True,
        ),
        _move(
            "follow_up",
            JobStatus.COMPLETED,
            JobStatus.RUNNING,
            "a person sent its agent a follow-up",
            tally="followed up {n}\u00d7",
            recorded_only=True,
            by_name_only=True,
        ),
    ),
)
"""Jobs (SPEC §3): pending -> running -> completed | error, cancel while live,
lease expiry (or a worker giving it back) to pending, resume a failed or cancelled job;
a completed job whose agent is still there runs again when a person sends it a
follow-up (`orchestrate send`, the control room's `i`): only by that name."""

SESSION: Final = StateMachine(
    name="session",
    states=tuple(SessionStatus),
    initial=SessionStatus.RUNNING,
    transitions=(
        _move("stop", SessionStatus.RUNNING, SessionStatus.STOPPED, "stopped gracefully"),
        _move(
            "soft_stop",
            SessionStatus.RUNNING,
            SessionStatus.ARCHIVED,
            "soft-stopped, tmux left alive",
        ),
        _move(
            "hard_stop",
            (SessionStatus.RUNNING, SessionStatus.STOPPED, SessionStatus.ARCHIVED),
            SessionStatus.TERMINATED,
            "hard-killed",
        ),
        _move(
            "reconcile",
            (SessionStatus.RUNNING, SessionStatus.STOPPED, SessionStatus.ARCHIVED),
            SessionStatus.TERMINATED,
            "tmux session gone",
        ),
        _move(
            "resume",
            (SessionStatus.STOPPED, SessionStatus.ARCHIVED),
            SessionStatus.RUNNING,
            "resumed",
            tally="resumed {n}\u00d7",
        ),
    ),
)
"""tmux agent sessions (seed 000 glossary); terminated is final."""

WORKER: Final = StateMachine(
    name="worker",
    states=tuple(ReviewState),
    initial=ReviewState.ASSIGNED,
    transitions=(
        _move("start", ReviewState.ASSIGNED, ReviewState.WORKING, "started work"),
        _move("done", ReviewState.WORKING, ReviewState.IN_REVIEW, "submitted for review"),
        _move("approve", ReviewState.IN_REVIEW, ReviewState.APPROVED, "approved"),
        _move(
            "reject",
            # APPROVED: its merge conflicted, the agent resolves it
            (ReviewState.IN_REVIEW, ReviewState.APPROVED),
            ReviewState.WORKING,
            "review rejected",
            tally="sent back from review {n}\u00d7",
        ),
        _move("merge", ReviewState.APPROVED, ReviewState.COMPLETED, "merged"),
        _move(
            "cancel",
            (
                ReviewState.ASSIGNED,
                ReviewState.WORKING,
                ReviewState.IN_REVIEW,
                ReviewState.APPROVED,
            ),
            ReviewState.CANCELLED,
            "cancelled",
        ),
        _move(
            "fail",
            (
                ReviewState.ASSIGNED,
                ReviewState.WORKING,
                ReviewState.IN_REVIEW,
                ReviewState.APPROVED,
            ),
            ReviewState.FAILED,
            "failed",
        ),
        _move(
            "resume",
            (ReviewState.CANCELLED, ReviewState.FAILED),
            ReviewState.WORKING,
            "resumed",
            tally="resumed {n}\u00d7",
        ),
    ),
)
"""The worker review flow (seed 002): cancel/fail from any live state; resuming the
job (error|cancelled -> pending) puts its work tree back to WORKING."""

MACHINES: Final[Mapping[str, StateMachine]] = {m.name: m for m in (JOB, SESSION, WORKER)}

STOPPED_AFTER_BLOCK: Final = frozenset({Activity.IDLE, Activity.BLOCKED})
"""What an agent that was refused something and has not gone on since may be seen
doing, to count as stopped at the refusal."""


def after_block(seen: str) -> str:
    """The activity a sighting means while the agent's last news was a block (auto mode
    refused a command): idle there is ``blocked``, since an agent that stops after a
    refusal did not get what it needed and waits on a person, though no dialog asks
    (shown ``idle``, it would read as done, and a job done at idle would complete).
    Any other sighting (working on, a dialog, an exit) is news of its own.

    >>> after_block(Activity.IDLE) == Activity.BLOCKED, after_block(Activity.WORKING)
    (True, <Activity.WORKING: 'working'>)
    """
    return Activity.BLOCKED if seen in STOPPED_AFTER_BLOCK else seen


def check_transition(
    machine: StateMachine, current: str, target: str, subject: str | None = None
) -> None:
    """Return if ``current`` -> ``target`` is legal; raise otherwise.

    ``subject`` names the record in the message ("abc12345" gives
    "job abc12345: cannot go from completed to running (allowed from
    completed: none)").
    """
    machine.require_state(current)
    machine.require_state(target)
    if machine.names_between(current, target):
        return
    allowed = ", ".join(machine.allowed(current)) or "none"
    already = f"; already {current}" if current == target else ""
    raise IllegalTransition(
        f"{_who(machine, subject)}: cannot go from {current} to {target} "
        f"(allowed from {current}: {allowed}{already})"
    )


def check_move(
    machine: StateMachine,
    current: str,
    target: str,
    transition: str | None,
    subject: str | None = None,
) -> None:
    """`check_transition`, unless ``transition`` names a by-name-only move of the
    machine: then that move must apply from ``current`` and lead to ``target``."""
    move = next((m for m in machine.transitions if m.name == transition), None)
    if move is None or not move.by_name_only:
        check_transition(machine, current, target, subject)
        return
    if next_state(machine, current, move.name, subject) != target:
        raise IllegalTransition(
            f"{_who(machine, subject)}: {move.name} leads to {move.target}, not {target}"
        )


def next_state(
    machine: StateMachine, current: str, transition: str, subject: str | None = None
) -> str:
    """The state the named ``transition`` leads to from ``current``; raise if
    it does not apply ("job abc12345: cannot resume from completed (resume
    applies to: error, cancelled)")."""
    machine.require_state(current)
    move = machine.transition(transition)
    if current not in move.sources:
        sources = ", ".join(s for s in machine.states if s in move.sources)
        raise IllegalTransition(
            f"{_who(machine, subject)}: cannot {transition} from {current} "
            f"({transition} applies to: {sources})"
        )
    return move.target


@dataclass(frozen=True)
class StateChange:
    """One recorded transition of a record: when, from where (None when the
    record was created), to where, and why."""

    at: str
    from_state: str | None
    to_state: str
    reason: str = ""
    transition: str | None = None


HistoryItem = StateChange | tuple[str, str | None, str, str]


def explain(
    machine: StateMachine, history: Sequence[HistoryItem], now: datetime | None = None
) -> str:
    """Why a record is in its current state, in one line, from its history
    (oldest first): "running since 14:03:10 (picked by tmux:claude); retried
    1\u00d7 after lease expiry at 13:58:00" (with a real multiplication sign).

    Times show as HH:MM:SS when everything (and ``now``, if given) falls on
    one UTC day, else with the date.
    """
    changes = [_as_change(item) for item in history]
    if not changes:
        return f"no recorded {machine.name} state changes"
    moments = [_parse(change.at) for change in changes]
    if now is not None:
        moments.append(_utc(now))
    days = {moment.date() for moment in moments if moment is not None}
    with_date = len(days) > 1

    last = changes[-1]
    why = last.reason or _phrase(machine, last)
    final = last.to_state in machine.states and machine.is_final(last.to_state)
    when = "at" if final else "since"
    clauses = [
        f"{last.to_state} {when} {_clock(last.at, with_date)}" + (f" ({why})" if why else "")
    ]

    tallies: dict[str, list[StateChange]] = {}
    for change in changes:
        move = _transition_of(machine, change)
        if move is not None and move.tally:
            tallies.setdefault(move.tally, []).append(change)
    for tally, repeats in tallies.items():
        text = tally.format(n=len(repeats))
        latest = _clock(repeats[-1].at, with_date)
        text += f" at {latest}" if len(repeats) == 1 else f", last at {latest}"
        clauses.append(text)
    return "; ".join(clauses)


def _who(machine: StateMachine, subject: str | None) -> str:
    return f"{machine.name} {subject}" if subject else machine.name


def _as_change(item: HistoryItem) -> StateChange:
    if isinstance(item, StateChange):
        return item
    at, from_state, to_state, reason = item
    return StateChange(at=at, from_state=from_state, to_state=to_state, reason=reason)


def _transition_of(machine: StateMachine, change: StateChange) -> Transition | None:
    """The named transition of a change: recorded, or inferred from its edge."""
    if change.transition is not None:
        for move in machine.transitions:
            if move.name == change.transition:
                return move
        return None
    if change.from_state is None:
        return None
    moves = [
        machine.transition(name)
        for name in machine.names_between(change.from_state, change.to_state)
    ]
    moves = [move for move in moves if not move.recorded_only]
    # Ambiguous edges (pick and start both lead pending -> running) stay unnamed.
    return moves[0] if len(moves) == 1 else None


def _phrase(machine: StateMachine, change: StateChange) -> str:
    if change.from_state is None:
        return "created"
    move = _transition_of(machine, change)
    return move.phrase if move is not None else ""


def _parse(stamp: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(stamp)
    except (TypeError, ValueError):
        return None
    return _utc(moment)


def _utc(moment: datetime) -> datetime:
    """Aware times in UTC; naive ones are taken as UTC already."""
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment


def _clock(stamp: str, with_date: bool) -> str:
    moment = _parse(stamp)
    if moment is None:
        return str(stamp)
    return moment.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")
