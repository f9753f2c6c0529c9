"""ControlRoomApp: the `orchestrate watch` application."""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.command import CommandPalette
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState, get_current_worker

from app.tui.commands import BINDINGS, COMMANDS, ControlRoomCommands
from app.tui.mailbox import DeltaMailbox
from app.tui.safe_text import visible
from app.tui.screens.confirm import ConfirmScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.history import HistoryScreen
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.new_job import NewJobRequest, NewJobScreen
from app.tui.screens.review import ReviewScreen
from app.tui.screens.stop_session import StopSessionScreen
from app.tui.source import SOURCE_ERRORS, ControlRoomSource, Delta, JobRow, StopMode
from app.tui.widgets.jobs_table import JobsTable
from registry import states
from registry.jobstore import FINAL_STATUSES
from registry.wording import counted

COMMAND_ACTIONS = {command.action.split("(")[0] for command in COMMANDS}
# The commands that act on the selected job or its session.
JOB_ACTIONS = frozenset(
    {"open_job", "cancel_job", "resume_job", "stop_session", "answer", "toggle_log"}
    | {"tmux_split", "review_job"}
)
RESUMABLE = states.JOB.transition("resume").sources
MAX_BACKOFF_S = 5.0
RECONCILE_INTERVAL_S = 3.0
HISTORY_READ_AHEAD_S = 3.0  # after the first delta: read the History screen's data
HISTORY_RECHECK_S = 10.0  # and look again this often (a build from the CLI, a resize)
BUSY_POLL_S = 0.015  # while events flow: ~20 per delta at 1k ev/s, each row ~20 ms late


class ControlRoomApp(App[None]):
    """Live jobs, sessions and events; every source call runs in a thread worker."""

    CSS_PATH = Path(__file__).parent / "control_room.tcss"  # absolute: subclasses live elsewhere
    TITLE = "orchestrate"
    BINDINGS = BINDINGS
    COMMANDS = App.COMMANDS | {ControlRoomCommands}

    class DeltaReady(Message):
        """Doorbell from the poller: a delta waits in the mailbox."""

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ControlRoomApp.DeltaReady)

    class SourceFailed(Message):
        """The source raised while polling (locked or corrupt db, broker down)."""

        def __init__(self, error: Exception) -> None:
            super().__init__()
            self.error = error

    class Notice(Message):
        """A line for the user from a worker thread. Posted, never `call_from_thread`:
        that blocks, and a worker blocked on an exiting app keeps the process alive."""

        def __init__(self, text: str, severity: SeverityLevel = "information") -> None:
            super().__init__()
            self.text = text
            self.severity = severity

    class LogPath(Message):
        """Where the selected job's pane log is, for the split tail."""

        def __init__(self, job_id: str, path: Path | None) -> None:
            super().__init__()
            self.job_id = job_id
            self.path = path

    def __init__(
        self,
        source: ControlRoomSource,
        *,
        clock: Callable[[], datetime] | None = None,
        poll_interval_s: float = 0.15,
        age_refresh_s: float = 2.0,
        reconcile_interval_s: float | None = RECONCILE_INTERVAL_S,
        history_read_ahead_s: float | None = HISTORY_READ_AHEAD_S,
        history_recheck_s: float | None = HISTORY_RECHECK_S,
        demo_agents: int = 0,
    ) -> None:
        """`reconcile_interval_s=None` leaves liveness to others (snapshots, benches);
        `history_read_ahead_s` after the first delta the History screen's data is
        read (None: when `h` asks), and then every `history_recheck_s` it is read
        again if its files changed; `demo_agents` starts that many real demo agents
        once the app is up."""
        super().__init__()
        self.source = source
        self.clock = clock or (lambda: datetime.now(UTC))
        self.poll_interval_s = poll_interval_s
        self.age_refresh_s = age_refresh_s
        self.reconcile_interval_s = reconcile_interval_s
        self.history_read_ahead_s = history_read_ahead_s
        self.history_recheck_s = history_recheck_s
        self.demo_agents = demo_agents
        self.demo_job_ids: list[str] = []
        self._stop_bridge = threading.Event()
        self.main = MainScreen()
        self.polls_applied = 0  # deltas drawn so far; tests wait on it
        self._mailbox = DeltaMailbox()

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice here carries data (labels, job ids, errors, pane text), so none
        is ever markup, whatever the caller asks, and control characters show as such.
        Screens' and widgets' `notify` come here too."""
        super().notify(
            visible(message, one_line=False),
            title=visible(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def on_mount(self) -> None:
        # The first poll reads a screenful of jobs and events: started after the
        # first frame, so its Python work does not contend with that frame for the GIL.
        self.call_after_refresh(self._poll)
        self.set_interval(self.age_refresh_s, lambda: self.main.refresh_ages(self.clock()))
        self._start()
        self._bridge()
        if self.reconcile_interval_s is not None:
            self._reconcile()

    @work(thread=True, exit_on_error=False, group="bridge", description="MQTT ingest bridge")
    def _bridge(self) -> None:
        """Run the MQTT ingest bridge (if a broker is configured) until the app exits."""
        self.source.run_bridge(self._stop_bridge)

    def on_unmount(self) -> None:
        self._stop_bridge.set()

    # -- start, demo and reconcile ------------------------------------------
    @work(thread=True, exit_on_error=False, group="start", description="Opening the registry")
    def _start(self) -> None:
        """Mark the start on the bus, start demo agents if asked, then reconcile."""
        try:
            self.source.start()
        except SOURCE_ERRORS as error:  # the poller reports the same failure
            self.post_message(self.SourceFailed(error))
        if self.demo_agents:
            count = self.demo_agents
            self.post_message(self.Notice(f"Starting {counted(count, 'demo agent')} in tmux…"))
            self.demo_job_ids = self.source.start_demo(count)
            started = counted(len(self.demo_job_ids), "demo agent")
            self.post_message(self.Notice(f"Started {started}"))

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="reconcile",
        description="Reconciling liveness",
    )
    def _reconcile(self) -> None:
        """Every few seconds: dead panes, expired leases, stale heartbeats."""
        worker = get_current_worker()
        failure = ""
        interval = self.reconcile_interval_s or RECONCILE_INTERVAL_S
        while not worker.is_cancelled:
            try:
                notice = self.source.reconcile()
            except Exception as error:
                if str(error) != failure:
                    failure = str(error)
                    self.post_message(self.Notice(f"Reconcile failed: {error}", "warning"))
            else:
                failure = ""
                if notice:
                    self.post_message(self.Notice(notice))
            deadline = time.monotonic() + interval
            while time.monotonic() < deadline and not worker.is_cancelled:
                time.sleep(0.1)

    # -- polling ------------------------------------------------------------
    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="poll",
        description="Polling the registry",
    )
    def _poll(self) -> None:
        worker = get_current_worker()
        cursor, failure, backoff_s = 0, "", self.poll_interval_s
        previous: Delta | None = None
        while not worker.is_cancelled:
            try:
                delta = self.source.poll(cursor)
            except SOURCE_ERRORS as error:
                if str(error) != failure:  # one notice per distinct failure, not per poll
                    failure = str(error)
                    self.post_message(self.SourceFailed(error))
                time.sleep(backoff_s)
                backoff_s = min(backoff_s * 2, MAX_BACKOFF_S)
                continue
            failure, backoff_s = "", self.poll_interval_s
            cursor = delta.cursor
            unchanged = previous is not None and not (
                delta.jobs or delta.removed_job_ids or delta.events or delta.notices
            )
            if (
                unchanged
                and previous is not None
                and delta.snapshot == previous.snapshot
                and delta.sessions in (None, previous.sessions)
            ):
                time.sleep(self.poll_interval_s)
                continue
            previous = delta
            if self._mailbox.put(delta):
                self.post_message(self.DeltaReady())
            # Busy bus: look again soon (latency); quiet bus: the normal interval.
            busy = bool(delta.events or delta.jobs)
            time.sleep(min(BUSY_POLL_S, self.poll_interval_s) if busy else self.poll_interval_s)

    def on_control_room_app_delta_ready(self) -> None:
        if not self.is_running:  # shutting down: the screens' widgets are being removed
            # (under run_test the app's loop still takes messages while _shutdown
            # prunes the screens: on a loaded machine a delta met a MainScreen
            # without its #jobs table, NoMatches, three failed tests a run)
            return
        if not self.main.is_mounted:  # not mounted yet (or torn down): ring again soon
            # Composed is not enough: a widget whose message loop has not started
            # yet drops the idle prompts that its refreshes and a DataTable's
            # measuring rely on. A mounted screen's children are all mounted.
            self.set_timer(0.02, lambda: self.post_message(self.DeltaReady()))
            return
        delta = self._mailbox.take()
        if delta is not None:
            self.main.apply_delta(delta, self.clock())
            self.polls_applied += 1
            if self.polls_applied == 1:  # once its rows are on screen
                self.call_after_refresh(self._freeze_startup_heap)
                if self.history_read_ahead_s is not None:
                    self.set_timer(self.history_read_ahead_s, self._read_history_ahead)
                if self.history_recheck_s is not None:
                    self.set_interval(self.history_recheck_s, self._read_history_ahead)
            for notice in delta.notices:
                self.notify(notice, severity="warning", timeout=8)

    def _read_history_ahead(self) -> None:
        """The first `h` of a session then opens the History screen without
        waiting on a read, on pyarrow's first-use costs or on plotext drawing the
        charts (146 -> 74 ms here, then 26-44 ms with the charts drawn ahead).
        A few seconds in, so the startup backlog is drawn first. Called again, it
        costs three stats unless something changed (``HistoryScreen.read_ahead``)."""
        HistoryScreen.shared(self).read_ahead(self)

    @staticmethod
    def _freeze_startup_heap() -> None:
        """Move everything alive once the first delta is drawn (modules, widgets,
        a thousand rows) out of the garbage collector's sight.

        Those objects live as long as the app, yet every full collection walked
        them all: with events arriving that was a 60-100 ms pause every ~650 ms,
        the slowest 1% of publish->row. Objects created afterwards are collected
        as usual; frozen ones are still freed by reference counting. No collection
        first: it would cost the first frame ~50 ms, and the few cycles it would
        free are a one-off.

        What the full collections still walk afterwards is mostly the widgets'
        render caches, which is why those are sized to a few screenfuls
        (JobsTable, EventStream). Rarer full collections were tried and are
        worse: cyclic garbage piles up between them, and one pass took ~1 s
        after 40 s at 1k ev/s."""
        gc.freeze()

    def on_control_room_app_notice(self, message: Notice) -> None:
        self.notify(message.text, severity=message.severity)

    def on_control_room_app_source_failed(self, message: SourceFailed) -> None:
        """One notice per problem (the start and the poller both meet it), and the
        problem stays on screen until a read works again."""
        problem = str(message.error)
        if problem != self.main.problem:
            self.notify(f"Registry unavailable: {problem}", severity="error", timeout=8)
        self.main.problem = problem

    @on(Worker.StateChanged)
    def _worker_failed(self, event: Worker.StateChanged) -> None:
        """The one place worker errors become visible; the app keeps running."""
        if event.state != WorkerState.ERROR:
            return
        worker = event.worker
        if isinstance(worker.error, self.ActionFailed):
            self.notify(str(worker.error), severity="error")
        else:
            self.notify(f"{worker.description or worker.name}: {worker.error}", severity="error")
        if worker.group == "poll":  # never leave the control room without live data
            self.set_timer(MAX_BACKOFF_S, self._poll)

    # -- source calls in workers ---------------------------------------------
    class ActionFailed(Exception):
        """An action the source refused, worded for a notice."""

    def _call(self, description: str, done: str, method: str, *args: object) -> None:
        """Run `source.<method>(*args)` in a thread worker; notify `done` on success.

        A refusal reads "Could not cancel: job b113a06c: cannot cancel from
        completed …", the job named once (the registry's error names it)."""
        verb = method.split("_")[0]
        subject = str(args[0]) if args else ""

        def call() -> None:
            try:
                result = getattr(self.source, method)(*args)
            except SOURCE_ERRORS as error:
                named = subject and subject in str(error)
                what = f"Could not {verb}" if named else f"Could not {verb} {subject}".rstrip()
                raise self.ActionFailed(f"{what}: {error}") from error
            # replace, not str.format: `done` holds labels and ids, and a label such as
            # "{result.__class__}" must stay text, not reach into objects
            self.post_message(self.Notice(done.replace("{result}", str(result))))

        self.run_worker(call, thread=True, exit_on_error=False, description=description)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # keys of the main screens must not fire from under a modal or the palette
        if action in COMMAND_ACTIONS and isinstance(self.screen, ModalScreen | CommandPalette):
            return False
        # nor a job's keys where no job can be selected (the History screen): hidden
        # from its footer, instead of each answering "Select a job first". The class
        # is asked, not the screen: the property queries widgets that may not exist yet.
        selects_jobs = hasattr(type(self.screen), "selected_job_id")
        if action == "history" and isinstance(self.screen, HistoryScreen):
            return False  # h on the History screen itself: nothing to do, not in its footer
        return selects_jobs or action not in JOB_ACTIONS

    def _selected_job(self) -> str | None:
        job_id: str | None = getattr(self.screen, "selected_job_id", None)
        if job_id is None:
            self.notify("Select a job first", severity="warning")
        return job_id

    def action_open_job(self) -> None:
        if isinstance(self.screen, MainScreen) and (job_id := self._selected_job()):
            self.push_screen(JobDetailScreen(self.source, job_id))

    def action_review_job(self) -> None:
        """The Review screen of the selected job (work-tree jobs: the others are told so)."""
        service = getattr(self.source, "review_service", None)
        if service is None:
            self.notify("This control room has no reviews", severity="warning")
        elif job_id := self._selected_job():
            self.push_screen(ReviewScreen(service, job_id))

    def action_new_job(self) -> None:
        labels = self.main.session_labels
        default = getattr(self.screen, "selected_session", None) or (labels[0] if labels else "")

        def submit(request: NewJobRequest | None) -> None:
            if request is not None:
                args = (request.prompt, request.agent, request.agent_session)
                self._call("Submitting job", "Submitted job {result}", "submit", *args)

        self.push_screen(NewJobScreen(session=default, sessions=labels), submit)

    def _job_row(self, job_id: str) -> JobRow | None:
        """The selected job as the jobs table last saw it (None: not in the table)."""
        return self.main.query_one("#jobs", JobsTable).jobs.get(job_id)

    def _refuse(self, text: str) -> None:
        """An action that cannot apply: said at once, instead of a dialog that fails."""
        self.notify(text, severity="warning")

    def action_cancel_job(self) -> None:
        if not (job_id := self._selected_job()):
            return
        job = self._job_row(job_id)
        if job is not None and job.status in FINAL_STATUSES:
            self._refuse(f"{job_id} is already {job.status}: nothing to cancel")
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._call(f"Cancelling {job_id}", f"Cancelled job {job_id}", "cancel", job_id)

        question = f"Cancel job {job_id}? Its agent stops working on it."
        self.push_screen(ConfirmScreen(question, "Cancel job"), confirmed)

    def action_resume_job(self) -> None:
        if not (job_id := self._selected_job()):
            return
        job = self._job_row(job_id)
        if job is not None and job.status not in RESUMABLE:
            self._refuse(
                f"{job_id} is {job.status}: only an errored or cancelled job can be resumed"
            )
            return
        self._call(f"Resuming {job_id}", f"Resumed job {job_id}", "resume", job_id)

    def action_stop_session(self) -> None:
        label: str | None = getattr(self.screen, "selected_session", None)
        if not label:
            self.notify("Select a job or session first", severity="warning")
            return
        known = self.main.known_sessions
        session = known.get(label) if known is not None else None
        if known is not None and session is None:
            self._refuse(f"session {label} does not exist: nothing to stop")
            return
        if session is not None and session.state == "terminated":
            self._refuse(f"session {label} is already terminated: nothing to stop")
            return

        def chosen(mode: StopMode | None) -> None:
            if mode is None:
                return

            def confirmed(yes: bool | None) -> None:
                if yes:
                    done = f"Stopped session {label} ({mode})"
                    self._call(f"Stopping {label}", done, "stop_session", label, mode)

            question = f"Stop session {label} ({mode})?"
            self.push_screen(ConfirmScreen(question, "Stop session"), confirmed)

        self.push_screen(StopSessionScreen(label), chosen)

    def action_answer(self, yes: bool) -> None:
        if not (job_id := self._selected_job()):
            return
        job = self._job_row(job_id)
        if job is not None and not job.waiting_permission:
            self.notify(f"Job {job_id} is not waiting for an answer", severity="warning")
            return
        answer = "yes" if yes else "no"
        self._call(f"Answering {job_id}", f"Answered {answer} to {job_id}", "answer", job_id, yes)

    def action_toggle_log(self) -> None:
        if isinstance(self.screen, JobDetailScreen):
            self.screen.query_one("#detail-tail").toggle_class("-hidden")
        elif isinstance(self.screen, MainScreen):
            if self.main.log_wanted is not None:
                self.main.hide_log()
            elif (job_id := self._selected_job()) and self.main.want_log(job_id):
                self._find_log(job_id)

    @work(thread=True, exit_on_error=False, description="Finding the pane log")
    def _find_log(self, job_id: str) -> None:
        self.post_message(self.LogPath(job_id, self.source.job_detail(job_id).pane_log_path))

    def on_control_room_app_log_path(self, message: LogPath) -> None:
        # a path found after the cursor moved on, or the split was closed, is dropped
        if message.job_id == self.main.log_wanted:
            self.main.show_log(message.job_id, message.path)

    @on(MainScreen.LogWanted)
    def _follow_log(self, message: MainScreen.LogWanted) -> None:
        self._find_log(message.job_id)

    def action_tmux_split(self) -> None:
        if job_id := self._selected_job():
            done = f"Opened the tmux control-room split for {job_id} (window w:{job_id}); "
            done += "attach with: {result}"
            self._call("Opening tmux split", done, "open_control_room_split", job_id)

    def action_history(self) -> None:
        """One History screen per app, so a rebuild running in it outlives esc."""
        history = HistoryScreen.shared(self)
        if self.screen is history:
            return
        if history in self.screen_stack:
            while self.screen is not history:
                self.pop_screen()
            return
        history.open(self)

    def _to_main(self) -> None:
        while len(self.screen_stack) > 1:
            self.pop_screen()

    def action_filter(self) -> None:
        self._to_main()
        self.main.open_filter()

    def action_command_mode(self) -> None:
        self._to_main()
        self.main.open_command_bar()

    def action_help(self) -> None:
        """The keys of the screen `?` was pressed on, then the commands that work there."""
        screen = self.screen
        own = [
            binding
            for binding in screen.BINDINGS
            if isinstance(binding, Binding) and binding.show and binding.action != "app.back"
        ]
        commands = [
            command
            for command in COMMANDS
            if self.check_action(command.action.split("(")[0], ()) is not False
        ]
        self.push_screen(HelpScreen(own, commands))

    async def action_back(self) -> None:
        if len(self.screen_stack) > 1:
            await self.pop_screen()
        else:
            self.main.back()
