"""The commands that act on the selected job or its session, on the screens that
select one (main, inbox, job page): each screen handles them itself.

The app binds their keys once, from the command table (app/tui/commands.py,
``on_screen``), and its action of that name hands each on to the screen on top: a
screen without it (History, Review, a dialog) neither runs nor shows the key. What a
screen offers is its own ``JOB_COMMANDS``, asked of its class, so Textual's checks
(on every key, also while the screen is still being built) never read a selection.
The blocking work stays in the app's thread workers (``ControlRoomApp.call_source``
and friends): a screen asks, dialogs and refusals are the screen's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar, cast

from textual.app import App
from textual.screen import Screen

from app.tui.commands import COMMANDS
from app.tui.screens.confirm import ConfirmScreen
from app.tui.screens.review import ReviewScreen
from app.tui.screens.stop_session import StopSessionScreen
from app.tui.screens.talk import TalkScreen
from app.tui.source import ControlRoomSource, JobRow, SessionRow, StopMode
from registry import states
from registry.vocabulary import FINAL_JOB_STATUSES, Activity, JobStatus, SessionStatus

JOB_COMMANDS: frozenset[str] = frozenset(
    {"open_job", "cancel_job", "resume_job", "stop_session", "toggle_log"}
    | {"tmux_split", "review_job", "attach_job", "talk", "sort"}
)
"""Every action a screen that selects jobs may handle (the table's `on_screen` ones)."""
assert {c.action for c in COMMANDS if c.on_screen} == JOB_COMMANDS, "one list of job commands"
RESUMABLE = states.JOB.transition("resume").sources
# A completed job may still have its agent at its prompt (`--done-when idle` keeps
# the pane for review and follow-up): stepping in and talking ask the source for
# its pane instead of judging by the status.
NO_PANE_STATUSES = frozenset({JobStatus.PENDING, JobStatus.ERROR, JobStatus.CANCELLED})


AppClass = TypeVar("AppClass", bound=type[App[Any]])


def hands_job_commands_to_the_screen(app_class: AppClass) -> AppClass:
    """Give the app an action for each job command, which the screen on top runs: the
    keys, the palette and `:` command mode run the app's actions, the screen does it."""

    def handed_on(action: str) -> Callable[[App[Any]], Awaitable[None]]:
        async def hand_on(app: App[Any]) -> None:
            await app.screen.run_action(action)

        hand_on.__doc__ = f"`{action}`: the screen on top handles it (its own action)."
        return hand_on

    for action in JOB_COMMANDS:
        setattr(app_class, f"action_{action}", handed_on(action))
    return app_class


def screen_offers(screen: Screen[Any], action: str) -> bool:
    """Whether ``screen`` runs the job command ``action`` now. Its class is asked, not
    its widgets: Textual checks every key at any time, also while it is being built."""
    handles = hasattr(type(screen), f"action_{action}")
    return handles and screen.check_action(action, ()) is not False


class SessionsShown(Protocol):
    """The main screen, as far as a job command needs it."""

    @property
    def known_sessions(self) -> Mapping[str, SessionRow] | None: ...


class ControlRoom(Protocol):
    """What a screen asks of the app it is in (ControlRoomApp): its source, what the
    main screen last read, and the workers that do the blocking part."""

    source: ControlRoomSource

    def job_row(self, job_id: str) -> JobRow | None: ...

    @property
    def main(self) -> SessionsShown: ...

    def open_job_page(self, job_id: str) -> None: ...

    def find_pane(self, job_id: str, then: str, status: str) -> object: ...

    def find_log(self, job_id: str) -> object: ...

    def call_source(
        self, description: str, done: str, verb: str, call: Callable[..., object], *args: object
    ) -> None: ...


class JobCommands(Screen[None]):
    """A screen that selects jobs; subclasses say which job commands they offer and
    define ``selected_job_id`` and ``selected_session``."""

    JOB_COMMANDS: ClassVar[frozenset[str]] = JOB_COMMANDS - {"sort"}
    """The job commands this screen offers (sorting is the jobs table's alone)."""

    @property
    def selected_job_id(self) -> str | None:
        return None

    @property
    def selected_session(self) -> str | None:
        return None

    @property
    def room(self) -> ControlRoom:
        """The control room this screen is in (its workers and its source)."""
        return cast(ControlRoom, self.app)

    def offers_job_commands(self) -> bool:
        """Whether there is a job here to act on at all (an empty inbox: none)."""
        return True

    def offers(self, action: str) -> bool:
        """Whether one of the app's own commands (not a job's) applies here: all but
        `tab` to the next waiting job, which moves focus as usual on a job's page."""
        return action != "next_waiting"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in JOB_COMMANDS:
            return action in self.JOB_COMMANDS and self.offers_job_commands()
        return True

    # -- helpers -------------------------------------------------------------
    def _selected_job(self) -> str | None:
        job_id = self.selected_job_id
        if job_id is None:
            self.notify("Select a job first", severity="warning")
        return job_id

    def _job_row(self, job_id: str) -> JobRow | None:
        """The job as the jobs table last saw it (None: not in the table)."""
        return self.room.job_row(job_id)

    def _refuse(self, text: str) -> None:
        """An action that cannot apply: said at once, instead of a dialog that fails."""
        self.notify(text, severity="warning")

    def _no_pane_yet(self, job_id: str) -> bool:
        """Refuse at once (True) for a job that has no agent to act on."""
        job = self._job_row(job_id)
        if job is None or job.status not in NO_PANE_STATUSES:
            return False
        why = "has not started yet" if job.status == JobStatus.PENDING else "has stopped"
        self._refuse(f"{job_id} is {job.status}: its agent {why} (d: its page)")
        return True

    # -- the commands ------------------------------------------------------------
    def action_open_job(self) -> None:
        if job_id := self._selected_job():
            self.room.open_job_page(job_id)

    def action_attach_job(self) -> None:
        """Put the person into the agent's pane (the first time, after a word on how
        to come back); the control room is as they left it when they return."""
        if (job_id := self._selected_job()) and not self._no_pane_yet(job_id):
            job = self._job_row(job_id)
            self.room.find_pane(job_id, "attach", job.status if job is not None else "")

    def action_talk(self) -> None:
        """A prompt box whose text goes to the agent as a paste (`orchestrate send`); a
        completed job's, once its pane is known to be there."""
        if not (job_id := self._selected_job()) or self._no_pane_yet(job_id):
            return
        job = self._job_row(job_id)
        if job is not None and job.status == JobStatus.COMPLETED:
            self.room.find_pane(job_id, "talk", job.status)
        else:
            self.talk_box(job_id)

    def talk_box(self, job_id: str) -> None:
        """The talk box for ``job_id``; what is typed goes to its agent in a worker."""
        job = self._job_row(job_id)
        reopens = job is not None and job.status == JobStatus.COMPLETED

        def send(text: str | None) -> None:
            if text:
                done = f"Sent {{result}} characters to {job_id}"
                if reopens:
                    done += ": its job runs again until the agent is done"
                send_input = self.room.source.send_input
                sending = f"Sending to {job_id}"
                self.room.call_source(sending, done, "send", send_input, job_id, text)

        agent = job.agent if job is not None else ""
        self.app.push_screen(TalkScreen(job_id, agent, reopens=reopens), send)

    def action_review_job(self) -> None:
        """The Review screen of the selected job (work-tree jobs: the others are told so)."""
        service = getattr(self.room.source, "review_service", None)
        if service is None:
            self.notify("This control room has no reviews", severity="warning")
        elif job_id := self._selected_job():
            self.app.push_screen(ReviewScreen(service, job_id))

    def action_cancel_job(self) -> None:
        if not (job_id := self._selected_job()):
            return
        job = self._job_row(job_id)
        if job is not None and job.status in FINAL_JOB_STATUSES:
            self._refuse(f"{job_id} is already {job.status}: nothing to cancel")
            return
        source = self.room.source

        def confirmed(yes: bool | None) -> None:
            if yes:
                done = f"Cancelled job {job_id}"
                self.room.call_source(f"Cancelling {job_id}", done, "cancel", source.cancel, job_id)

        question = f"Cancel job {job_id}? Its agent stops working on it."
        self.app.push_screen(ConfirmScreen(question, "Cancel job"), confirmed)

    def action_resume_job(self) -> None:
        if not (job_id := self._selected_job()):
            return
        job = self._job_row(job_id)
        interrupted = job is not None and job.activity == Activity.INTERRUPTED
        if job is not None and job.status not in RESUMABLE and not interrupted:
            self._refuse(
                f"{job_id} is {job.status}: only an errored, cancelled or interrupted job "
                "can be resumed"
            )
            return
        resume = self.room.source.resume
        self.room.call_source(
            f"Resuming {job_id}", f"Resumed job {job_id}", "resume", resume, job_id
        )

    def action_stop_session(self) -> None:
        label = self.selected_session
        if not label:
            self.notify("Select a job or session first", severity="warning")
            return
        known = self.room.main.known_sessions
        session = known.get(label) if known is not None else None
        if known is not None and session is None:
            self._refuse(f"session {label} does not exist: nothing to stop")
            return
        if session is not None and session.state == SessionStatus.TERMINATED:
            self._refuse(f"session {label} is already terminated: nothing to stop")
            return
        stop = self.room.source.stop_session

        def chosen(mode: StopMode | None) -> None:
            if mode is None:
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    done = f"Stopped session {label} ({mode})"
                    self.room.call_source(f"Stopping {label}", done, "stop", stop, label, mode)

            question = f"Stop session {label} ({mode})?"
            self.app.push_screen(ConfirmScreen(question, "Stop session"), confirmed)

        self.app.push_screen(StopSessionScreen(label), chosen)

    def action_tmux_split(self) -> None:
        if job_id := self._selected_job():
            done = f"Opened the tmux control-room split for {job_id} (window w:{job_id}); "
            done += "attach with: {result}"
            split = self.room.source.open_control_room_split
            self.room.call_source("Opening tmux split", done, "open", split, job_id)

    def action_toggle_log(self) -> None:
        """`l`: each screen shows or hides its own view of the job's pane."""
