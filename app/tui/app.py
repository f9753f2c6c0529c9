"""ControlRoomApp: the `orchestrate watch` application."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.command import CommandPalette
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.reactive import reactive
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState, get_current_worker

from app.tui import heap
from app.tui.commands import BINDINGS, COMMANDS, ControlRoomCommands, unshadowed
from app.tui.demo_agents import DemoAgents
from app.tui.handover import ActionFailed, Handover
from app.tui.inbox_actions import InboxActions
from app.tui.mailbox import DeltaMailbox
from app.tui.messages import (
    AgentsFound,
    AttachReady,
    DeltaReady,
    DemoStopped,
    LogPath,
    Notice,
    SourceFailed,
)
from app.tui.needs_you import SignalSettings, TerminalSignals
from app.tui.notices import toast
from app.tui.policy_actions import PolicyActions
from app.tui.poller import MAX_BACKOFF_S, RECONCILE_INTERVAL_S, Poller
from app.tui.screens.help import HelpScreen
from app.tui.screens.history import HistoryScreen
from app.tui.screens.inbox import InboxScreen
from app.tui.screens.job_commands import (
    JOB_COMMANDS,
    JobCommands,
    hands_job_commands_to_the_screen,
    screen_offers,
)
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.new_job import NewJobRequest, NewJobScreen
from app.tui.source import SOURCE_ERRORS, ControlRoomSource, JobRow, waiting_after
from app.tui.widgets.jobs_table import JobsTable
from registry.vocabulary import JobStatus
from registry.wording import counted

COMMAND_ACTIONS = {command.action.split("(")[0] for command in COMMANDS}
NEEDS_A_JOB_LIST = frozenset({"answer", "next_waiting", "make_rule"})
"""Off on a screen that lists no jobs (History, Review): nothing there to answer, and
tab moves focus as usual."""
HISTORY_READ_AHEAD_S = 3.0  # after the first delta: read the History screen's data
HISTORY_RECHECK_S = 10.0  # and look again this often (a build from the CLI, a resize)


@hands_job_commands_to_the_screen
class ControlRoomApp(PolicyActions, InboxActions):
    """Live jobs, sessions and events; every source call runs in a thread worker."""

    CSS_PATH = Path(__file__).parent / "control_room.tcss"  # absolute: subclasses live elsewhere
    TITLE = "orchestrate"
    BINDINGS = BINDINGS
    COMMANDS = App.COMMANDS | {ControlRoomCommands}

    waiting_rows: reactive[tuple[JobRow, ...]] = reactive(())
    """The jobs waiting on a person, in table order; the screens read it (bound down)."""

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
        take_terminal: Callable[[list[str]], int] | None = None,
        signals: SignalSettings | None = None,
    ) -> None:
        """`reconcile_interval_s=None` leaves liveness to others (snapshots, benches);
        `history_read_ahead_s` after the first delta the History screen's data is
        read (None: when `h` asks), and then every `history_recheck_s` it is read
        again if its files changed; `demo_agents` starts that many real demo agents
        once the app is up; `take_terminal` runs a command that needs the terminal
        (an attach) and returns its exit status (default: the app suspends itself);
        `signals`: bell, terminal title and notify command when a job starts waiting
        on a person (all but the notify command on by default)."""
        super().__init__()
        self.source = source
        self.clock = clock or (lambda: datetime.now(UTC))
        self.poll_interval_s = poll_interval_s
        self.age_refresh_s = age_refresh_s
        self.reconcile_interval_s = reconcile_interval_s
        self.history_read_ahead_s = history_read_ahead_s
        self.history_recheck_s = history_recheck_s
        self.demo = DemoAgents(source, demo_agents, self.post_message)
        # Set when the app unmounts: the bridge and every worker loop stop (a loop left
        # running would keep the process, or a test's event loop, from closing).
        self._stopping = threading.Event()
        self.main = MainScreen()
        self.polls_applied = 0  # deltas drawn so far; tests wait on it
        self._waiting: dict[str, JobRow] = {}  # the jobs of waiting_rows, by id
        self._mailbox = DeltaMailbox()
        self.poller = Poller(
            source, self.post_message, mailbox=self._mailbox, stopping=self._stopping
        )
        self.handover = Handover(self, take_terminal)
        self.installed_agents: list[str] | None = None  # agent kinds on PATH (read once)
        self.signals = TerminalSignals(
            self,
            signals or SignalSettings(),
            claim=source.claim_signal,
            report=self._report_signal_problem,
        )

    def _report_signal_problem(self, line: str) -> None:
        """A notify command that failed (from its thread): one notice per problem."""
        self.post_message(Notice(line, "warning"))

    def get_default_screen(self) -> Screen[Any]:
        return self.main

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's palette entries, less those a control-room command offers too."""
        return unshadowed(super().get_system_commands(screen))

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
        toast(self, message, title=title, severity=severity, timeout=timeout)

    def on_load(self) -> None:
        heap.pause_collection()  # until the first rows are drawn (app/tui/heap.py)

    def on_mount(self) -> None:
        self.set_timer(heap.FIRST_DELTA_GRACE_S, heap.resume_collection)
        # The first poll reads a screenful of jobs and events: started after the
        # first frame, so its Python work does not contend with that frame for the GIL.
        self.call_after_refresh(self._poll)
        self.signals.opened()
        self.main.data_bind(ControlRoomApp.waiting_rows)
        self.set_interval(self.age_refresh_s, lambda: self.main.refresh_ages(self.clock()))
        self._start()
        self._bridge()
        if self.reconcile_interval_s is not None:
            self._reconcile()

    @work(thread=True, exit_on_error=False, group="bridge", description="MQTT ingest bridge")
    def _bridge(self) -> None:
        """Run the MQTT ingest bridge (if a broker is configured) until the app exits."""
        self.poller.bridge()

    def on_unmount(self) -> None:
        heap.resume_collection()
        self._stopping.set()
        self.signals.closed()
        self.source.close()

    # -- start, demo and reconcile ------------------------------------------
    @work(thread=True, exit_on_error=False, group="start", description="Opening the registry")
    def _start(self) -> None:
        """Mark the start on the bus, start demo agents if asked, then reconcile."""
        try:
            notice = self.source.start()
        except SOURCE_ERRORS as error:  # the poller reports the same failure
            self.post_message(SourceFailed(error))
        else:
            if notice:  # another control room on this state dir
                self.post_message(Notice(notice, "warning"))
        self.demo.start()

    @property
    def demo_job_ids(self) -> list[str]:
        """The jobs of the demo agents this app started."""
        return self.demo.job_ids

    @property
    def demo_stopped(self) -> bool:
        return self.demo.stopped

    @property
    def attach_hint_shown(self) -> bool:
        """Whether this run has said how to come back from an agent's pane."""
        return self.handover.hint_shown

    @attach_hint_shown.setter
    def attach_hint_shown(self, shown: bool) -> None:
        self.handover.hint_shown = shown

    async def action_quit(self) -> None:
        """Leave; with demo agents of this app's own, stop them first (and only them)."""
        if not self.demo.running:
            self.exit()
        elif not self._busy("demo-stop"):  # a second q waits for the first
            self.notify(f"Stopping the {counted(self.demo.count, 'demo agent')}…")
            self._stop_demo()

    def _busy(self, group: str) -> bool:
        """Whether a worker of ``group`` is still at work."""
        return any(worker.group == group for worker in self.workers)

    @work(thread=True, exit_on_error=False, group="demo-stop", description="Stopping demo agents")
    def _stop_demo(self) -> None:
        """Stop the demo agents this app started, then exit (whatever happened)."""
        try:
            self.demo.stop()
        finally:
            self.post_message(DemoStopped())

    def on_demo_stopped(self) -> None:
        self.exit()

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
        interval = self.reconcile_interval_s or RECONCILE_INTERVAL_S
        self.poller.reconcile(lambda: worker.is_cancelled, interval)

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="poll",
        description="Polling the registry",
    )
    def _poll(self) -> None:
        worker = get_current_worker()
        self.poller.poll(lambda: worker.is_cancelled, self.poll_interval_s)

    def on_delta_ready(self) -> None:
        if self.main.is_mounted and not self.is_running:
            return  # the app is closing: its screens' widgets are being removed
        if not self.main.is_mounted:  # not mounted yet (or torn down): ring again soon
            # Composed is not enough: a widget whose message loop has not started
            # yet drops the idle prompts that its refreshes and a DataTable's
            # measuring rely on. A mounted screen's children are all mounted.
            self.set_timer(0.02, lambda: self.post_message(DeltaReady()))
            return
        delta = self._mailbox.take()
        if delta is None:
            return
        try:
            applied = self.main.apply_delta(delta, self.clock())
        except NoMatches:  # the app is closing: its screen's widgets are being removed
            return
        if not applied:
            return
        self._waiting, self.waiting_rows = waiting_after(self._waiting, delta)
        self.signals.observe(delta.jobs, delta.removed_job_ids, self.main.needs_you_jobs)
        self.polls_applied += 1
        if self.polls_applied == 1:  # once its rows are on screen
            self.call_after_refresh(heap.freeze_startup_heap)
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

    def on_notice(self, message: Notice) -> None:
        self.notify(message.text, severity=message.severity)

    def on_source_failed(self, message: SourceFailed) -> None:
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
        if isinstance(worker.error, ActionFailed):
            self.notify(str(worker.error), severity="error")
        else:
            self.notify(f"{worker.description or worker.name}: {worker.error}", severity="error")
        if worker.group == "poll":  # never leave the control room without live data
            self.set_timer(MAX_BACKOFF_S, self._poll)

    # -- source calls in workers ---------------------------------------------

    def call_source(
        self,
        description: str,
        done: str,
        verb: str,
        call: Callable[..., object],
        *args: object,
    ) -> None:
        """Run ``call(*args)`` (a source method) in a thread worker; notify ``done`` on
        success, with ``{result}`` replaced by what it returned.

        A refusal reads "Could not cancel: job b113a06c: cannot cancel from
        completed …", the job named once (the registry's error names it)."""
        subject = str(args[0]) if args else ""

        def run() -> None:
            try:
                result = call(*args)
            except SOURCE_ERRORS as error:
                named = subject and subject in str(error)
                what = f"Could not {verb}" if named else f"Could not {verb} {subject}".rstrip()
                raise ActionFailed(f"{what}: {error}") from error
            # replace, not str.format: `done` holds labels and ids, and a label such as
            # "{result.__class__}" must stay text, not reach into objects
            self.post_message(Notice(done.replace("{result}", str(result))))

        self.run_worker(run, thread=True, exit_on_error=False, description=description)

    # -- which keys apply where -------------------------------------------------
    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Keys of the main screens never fire from under a dialog or the palette; a
        job's command is the screen's own (off where it has none); the others are as
        the screen on top says (app/tui/screens/job_commands.py)."""
        screen = self.screen
        if action in COMMAND_ACTIONS and isinstance(screen, ModalScreen | CommandPalette):
            return False
        if action in JOB_COMMANDS:
            return screen_offers(screen, action)
        if isinstance(screen, JobCommands):
            return screen.offers(action)
        if action == "history" and isinstance(screen, HistoryScreen):
            return False  # h on the History screen itself: nothing to do, not in its footer
        return action not in NEEDS_A_JOB_LIST

    # -- what the screens ask of the app -----------------------------------------
    def job_row(self, job_id: str) -> JobRow | None:
        """A job as the jobs table last saw it (None: not in the table)."""
        return self.main.query_one("#jobs", JobsTable).jobs.get(job_id)

    def open_job_page(self, job_id: str) -> None:
        self.push_screen(JobDetailScreen(self.source, job_id))

    @work(thread=True, exit_on_error=False, group="attach", description="Finding the agent's pane")
    def find_pane(self, job_id: str, then: str, status: str) -> None:
        """The job's pane first (a finished job's may be gone), then ``then``: attach
        or talk. ``status``: the job's, as the table showed it."""
        try:
            command = self.source.attach_command(job_id)
        except SOURCE_ERRORS as error:
            if status not in (JobStatus.RUNNING, ""):
                doing = "nothing to step into" if then == "attach" else "nobody to talk to"
                raise ActionFailed(
                    f"{job_id} is {status} and its agent's pane is gone: {doing}"
                ) from error
            verb = "attach to" if then == "attach" else "talk to"
            raise ActionFailed(f"Could not {verb} {job_id}: {error}") from error
        self.post_message(AttachReady(job_id, command, then))

    def on_attach_ready(self, message: AttachReady) -> None:
        if message.then == "talk":
            self.main.talk_box(message.job_id)  # any job's: the dialog is the same
        else:
            self.handover.attach(message.job_id, message.command)

    def action_returned(self) -> None:
        self.handover.welcome_back()

    def action_new_job(self) -> None:
        """The New-job dialog; it looks up the agents installed here itself, the first
        time (not at start, where their imports slowed the first paint)."""
        labels = self.main.session_labels
        default = getattr(self.screen, "selected_session", None) or (labels[0] if labels else "")

        def submit(request: NewJobRequest | None) -> None:
            if request is not None:
                args = (request.prompt, request.agent, request.agent_session)
                done = "Submitted job {result}"
                self.call_source("Submitting job", done, "submit", self.source.submit, *args)

        screen = NewJobScreen(
            session=default,
            sessions=labels,
            installed=self.installed_agents,
            find_installed=self.source.installed_agents,
        )
        self.push_screen(screen, submit)

    def on_agents_found(self, message: AgentsFound) -> None:
        """The dialog found the installed agents: the next one knows them at once."""
        self.installed_agents = message.kinds

    def action_resume_interrupted(self) -> None:
        """Every interrupted job back in a new pane: `job resume --all-interrupted`."""
        if self._busy("resume-interrupted"):  # a second R would resume them twice
            self.notify("Still resuming the interrupted jobs…")
            return
        self.notify("Resuming every interrupted job…")
        self._resume_interrupted()

    @work(
        thread=True,
        exit_on_error=False,
        group="resume-interrupted",
        description="Resuming interrupted jobs",
    )
    def _resume_interrupted(self) -> None:
        try:
            resumed = self.source.resume_interrupted()
        except SOURCE_ERRORS as error:
            raise ActionFailed(f"Could not resume the interrupted jobs: {error}") from error
        for text, severity in resumed.notices():
            self.post_message(Notice(text, severity))

    @work(thread=True, exclusive=True, exit_on_error=False, group="find-log")
    def find_log(self, job_id: str) -> None:
        """Where ``job_id``'s pane log is, for the main screen's split or the inbox."""
        self.post_message(LogPath(job_id, self.source.job_detail(job_id).pane_log_path))

    def on_log_path(self, message: LogPath) -> None:
        # a path found after the cursor moved on, or the split was closed, is dropped
        if message.job_id == self.main.log_wanted:
            self.main.show_log(message.job_id, message.path)
        for screen in self.screen_stack:
            if isinstance(screen, InboxScreen):
                screen.show_screen(message.job_id, message.path)

    @on(MainScreen.LogWanted)
    @on(InboxScreen.ScreenWanted)
    def _follow_log(self, message: MainScreen.LogWanted | InboxScreen.ScreenWanted) -> None:
        self.find_log(message.job_id)

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
        commands = [
            command
            for command in COMMANDS
            if self.check_action(command.action.split("(")[0], ()) is not False
        ]
        self.push_screen(HelpScreen.of(self.screen, commands, navigation=self.screen is self.main))

    async def action_back(self) -> None:
        if len(self.screen_stack) > 1:
            await self.pop_screen()
        else:
            self.main.back()
