"""What a running job's agent is doing (its activity), who said so, and why it is believed.

A job's *status* (pending, running, ...) is the registry's state machine; its
*activity* is finer and only means something while it runs: starting, working,
waiting for a person, idle at its prompt, stalled, exited, or interrupted (its
pane vanished with the tmux server). Activity is observed, not reported: a hook
of the agent, its status escape sequence, a screen rule over its pane, the
process itself, or an event it published. Every change is recorded with that
source, so `job why` can give its evidence ("waiting since 12:03:04: Claude
Code hook PermissionRequest: Bash `npm test`").
"""

from __future__ import annotations

import json
import sqlite3
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from bus.text import replace_hidden
from registry.errors import InvalidJobInput
from registry.states import after_block
from registry.vocabulary import Activity, PauseReason

ACTIVITIES: Final = tuple(Activity)
"""Every activity a running job can have (SPEC §3)."""

NEEDS_PERSON: Final = frozenset({Activity.WAITING, Activity.BLOCKED, Activity.PAUSED})
"""Activities a person must act on: a dialog to answer, a refusal the agent stopped at,
or a turn orchestrate paused (its budget). Only ``waiting`` takes an answer
(``Job.waiting``)."""
PAUSE_ENDS: Final = frozenset({Activity.EXITED, Activity.INTERRUPTED})
"""What still counts while a job is paused: its agent gone. Every other sighting (the
idle prompt after the interrupt, a hook) leaves the pause until a person resumes it."""
APP_SERVER: Final = "appserver:"
ACP: Final = "acp:"
STRUCTURED_SOURCES: Final = ("hook:", APP_SERVER, ACP)
"""Sources that report from inside the agent (its hooks, Codex's app-server, an ACP
session); its status sequence and screen are weaker (see Observation.defers_to)."""
AFTER_ANSWER: Final = "control-room:"
"""The source prefix of what an answer saw as it went in: the dialog it answered replaced
on screen by another question (app/approvals). That question is newer than the
structured wait the answer ended, so it never defers to it: without this a hook's
answered wait outranked the question after it (Claude Code 2.1.332's offer to make auto
mode the default, which no hook reports) until that too was answered."""
MAX_TEXT: Final = 500
"""Longest question, tool or command kept (the screen or hook may hold much more)."""
_ABOUT: Final = ("question", "tool", "command", "blocked_by")
"""The fields that say what a sighting is about (stored when not empty)."""

# Source prefixes, and how `job why` says them.
_SOURCE_WORDS: Final = {
    "hook": "hook",
    "osc": "status sequence (OSC 7501)",
    "screen": "screen rule",
    "title": "pane title",
    "process": "process",
    "publish": "event published by the agent",
    "control-room": "control room",
    "appserver": "app-server",
    "acp": "ACP",
    PauseReason.BUDGET: "budget watch",
}
AGENT_NAMES: Final = {  # the one place: each adapter's display_name is read from here
    "claude": "Claude Code",
    "claude-code": "Claude Code",
    "codex": "Codex",
    "gemini": "Gemini CLI",
    "aider": "Aider",
    "demo": "demo agent",
    "acp": "ACP agent",
    "gemini-acp": "Gemini CLI (ACP)",
    "qwen": "Qwen Code",
    "qwen-code": "Qwen Code",
    "qwen-acp": "Qwen Code (ACP)",
}


def _stand_in(char: str) -> str:
    """A space for a control or a line/paragraph separator (folded with the other
    whitespace), U+FFFD for a format character or a lone surrogate."""
    return " " if unicodedata.category(char) in ("Cc", "Zl", "Zp") else "\ufffd"


def clean_text(value: object, limit: int = MAX_TEXT) -> str:
    """Agent text made storable: control characters out, whitespace runs folded, the
    other hidden characters (``bus/text.py``) marked (U+FFFD), cut short.

    What an agent prints or sends is hostile; the sinks sanitise again, but a
    stored record should already be one readable line. Bidi controls are marked, not
    dropped: a command would show in another order than it runs
    (``echo ok #<RLO>...; rm -rf ~``) wherever it is printed.
    """
    if not isinstance(value, str):
        return ""
    text = " ".join(replace_hidden(value, _stand_in).split())
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class Observation:
    """One sighting of an agent's activity and its evidence.

    ``source`` names where it came from as ``kind:agent:name`` (``hook:claude:
    PermissionRequest``, ``screen:aider.run_shell``, ``osc:codex``, ``process``).
    ``blocked_by`` names what refused the agent the ``tool``/``command`` ("auto mode"),
    with its reason in ``question``; empty when nothing was refused.
    """

    activity: str
    source: str
    question: str = ""
    tool: str = ""
    command: str = ""
    exit_status: int | None = None
    blocked_by: str = ""

    def __post_init__(self) -> None:
        """Refuse an activity the model does not know (a typo in an adapter or a rule)."""
        if self.activity not in ACTIVITIES:
            raise InvalidJobInput(
                f"unknown activity {self.activity!r} (known: {', '.join(ACTIVITIES)})"
            )

    def to_data(self) -> dict[str, Any]:
        """The event's ``data``: everything but empty fields."""
        data: dict[str, Any] = {"activity": self.activity, "source": clean_text(self.source, 120)}
        for name in _ABOUT:
            value = clean_text(getattr(self, name))
            if value:
                data[name] = value
        if self.exit_status is not None:
            data["exit_status"] = self.exit_status
        return data

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Observation:
        """The observation an ``activity`` event carries (InvalidJobInput if it is not one)."""
        status = data.get("exit_status")
        return cls(
            activity=str(data.get("activity", "")),
            source=clean_text(data.get("source"), 120) or "unknown",
            question=clean_text(data.get("question")),
            tool=clean_text(data.get("tool")),
            command=clean_text(data.get("command")),
            exit_status=status if type(status) is int else None,
            blocked_by=clean_text(data.get("blocked_by"), 60),
        )

    def same_as(self, activity: str | None, data: Mapping[str, Any] | None) -> bool:
        """True when this says nothing new over the job's current activity: the same
        activity (a repeated signal is one change), and for ``waiting`` or a block the
        same question (a second question is a new wait, a second refusal news)."""
        if activity != self.activity:
            return False
        data = data or {}
        if self.activity not in NEEDS_PERSON and not (self.blocked_by or data.get("blocked_by")):
            return True
        mine = self.to_data()
        return all(mine.get(k) == data.get(k) for k in _ABOUT)

    def after(self, current: Observation | None) -> Observation:
        """This sighting as it counts after the job's ``current`` activity: while the
        agent's last news is a block it has not gone on from, an idle sighting (a hook's
        Stop, its idle screen) says it stopped at the block (``after_block``), and keeps
        what was blocked. Applied wherever a change is written, so every source agrees."""
        if current is None or not current.blocked_by or self.blocked_by:
            return self
        activity = after_block(self.activity)
        if activity == self.activity:
            return self
        return Observation(
            activity,
            self.source,
            question=current.question,
            tool=current.tool,
            command=current.command,
            blocked_by=current.blocked_by,
        )

    def defers_to(self, current: Observation | None) -> bool:
        """Whether this sighting, from a weaker source, must leave the job's current
        activity alone: it only repeats what a structured source (a hook, Codex's
        app-server) said, adding no command; it is a status sequence repeating the
        current state; it is Codex's status sequence while its app-server reports (read
        late from the pane log, it may be stale); or it is a screen while that
        app-server holds a request (the server says when the request is over: a remote
        TUI drawn late under load showed its prompt for 2 s, and its idle ended a
        request still pending).

        Checked where the change is written, so a supervision pass that read the job
        before the structured source spoke cannot undo what it said."""
        if current is not None and current.activity == Activity.PAUSED:
            # held until `job resume`, whose own sighting comes from the pause's source;
            # a second pause (another process's pass, a later spend) is no news: the
            # one that was recorded is the one that sends the interrupt
            ours = self.source.partition(":")[0] == current.source.partition(":")[0]
            if self.activity == Activity.PAUSED:
                return True
            return not ours and self.activity not in PAUSE_ENDS
        if current is None or self.source.startswith((*STRUCTURED_SOURCES, AFTER_ANSWER)):
            return False
        if self.source.startswith("osc:") and current.activity == self.activity:
            # A status sequence only ever says the state: Codex repeats `blocked` as it
            # redraws its dialog, which undid the command its screen had named and
            # started the wait again (a second bell and notify for one question).
            return True
        if current.source.startswith(STRUCTURED_SOURCES) and current.activity == self.activity:
            return bool(current.command) or not self.command
        if not current.source.startswith(APP_SERVER):
            return False
        asking = current.activity == Activity.WAITING
        return self.source.startswith("osc:") or (asking and self.source.startswith("screen:"))

    def summary(self) -> str:
        """What it is about, in a few words: "Bash `npm test`", or the question; a block
        says what blocked what ("auto mode blocked `rm -rf build`")."""
        if self.blocked_by:
            what = f"`{self.command}`" if self.command else self.tool or "a tool call"
            return f"{self.blocked_by} blocked {what}"
        if self.command:
            return f"{self.tool} `{self.command}`" if self.tool else f"`{self.command}`"
        return self.question or self.tool


@dataclass(frozen=True)
class ActivityChange:
    """One recorded change of a job's activity."""

    at_ms: int
    observation: Observation
    seq: int | None = None

    @property
    def activity(self) -> str:
        return self.observation.activity


def describe_source(source: str) -> str:
    """A source as `job why` says it: "Claude Code hook PermissionRequest",
    "screen rule aider.run_shell matched", "Codex status sequence (OSC 7501)"."""
    kind, _, rest = source.partition(":")
    agent, _, name = rest.partition(":")
    if kind == "screen":
        return f"screen rule {rest} matched" if rest else "screen rule matched"
    if kind == "process":  # "process:output": what was seen of it, not an agent
        return f"process ({rest})" if rest else "process"
    words = _SOURCE_WORDS.get(kind, kind)
    who = AGENT_NAMES.get(agent, agent)
    return " ".join(part for part in (who, words, name) if part)


def explain(change: ActivityChange, *, with_date: bool = False) -> str:
    """ "waiting since 12:03:04: Claude Code hook PermissionRequest: Bash `npm test`"."""
    moment = datetime.fromtimestamp(change.at_ms / 1000, UTC)
    clock = moment.strftime("%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")
    obs = change.observation
    text = f"{obs.activity} since {clock}: {describe_source(obs.source)}"
    about = obs.summary()
    if obs.exit_status is not None:
        about = f"exit status {obs.exit_status}" + (f"; {about}" if about else "")
    if obs.blocked_by and obs.question:
        about = f"{about} ({obs.question})"
    return f"{text}: {about}" if about else text


# -- storage (called inside the registry's write transactions) ----------------


def store_change(
    conn: sqlite3.Connection, job_id: str, observation: Observation, at_ms: int, seq: int | None
) -> None:
    """Make ``observation`` the job's current activity and append it to its history."""
    data = json.dumps(observation.to_data(), ensure_ascii=False)
    conn.execute(
        "UPDATE jobs SET activity = ?, activity_at_ms = ?, activity_source = ?, "
        "activity_data = ? WHERE job_id = ?",
        (observation.activity, at_ms, observation.source, data, job_id),
    )
    conn.execute(
        "INSERT INTO job_activity (job_id, at_ms, activity, source, data, seq) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (job_id, at_ms, observation.activity, observation.source, data, seq),
    )


def clear(conn: sqlite3.Connection, job_id: str) -> None:
    """The job left running: it has no activity any more (its history stays)."""
    conn.execute(
        "UPDATE jobs SET activity = NULL, activity_at_ms = NULL, activity_source = NULL, "
        "activity_data = NULL WHERE job_id = ?",
        (job_id,),
    )


def load_history(conn: sqlite3.Connection, job_id: str) -> list[ActivityChange]:
    """The job's activity changes, oldest first."""
    rows = conn.execute(
        "SELECT at_ms, data, seq FROM job_activity WHERE job_id = ? ORDER BY id", (job_id,)
    ).fetchall()
    changes = []
    for at_ms, data, seq in rows:
        try:
            observation = Observation.from_data(json.loads(data))
        except (ValueError, InvalidJobInput):
            continue
        changes.append(ActivityChange(int(at_ms), observation, seq))
    return changes


def observation_of(
    activity: str | None, source: str | None, data: Mapping[str, Any] | None
) -> Observation | None:
    """The current activity of a job row as an Observation (None when it has none)."""
    if not activity:
        return None
    try:
        return Observation.from_data({**(data or {}), "activity": activity, "source": source})
    except InvalidJobInput:
        return None


INTERRUPTED_WHY: Final = "its agent pane is gone"
"""Said of an interrupted job whose record holds no reason (an older release's)."""


def interruption(activity: str | None, data: Mapping[str, Any] | None) -> str | None:
    """Why a running job is ``interrupted`` (its pane gone: a reboot, tmux killed), as
    the supervisor recorded it; None when the job is not interrupted."""
    if activity != Activity.INTERRUPTED:
        return None
    return clean_text((data or {}).get("question")) or INTERRUPTED_WHY
