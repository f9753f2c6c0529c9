"""ControlRoomApp: the `orchestrate watch` application."""

from __future__ import annotations

import gc
import subprocess
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import App, SuspendNotSupported, SystemCommand
from textual.binding import Binding
from textual.command import CommandPalette
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.worker import Worker, WorkerState, get_current_worker

from app.tmux.attach import RETURN_KEY_LABEL
from app.tui.commands import BINDINGS, COMMANDS, ControlRoomCommands
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
from app.tui.poller import MAX_BACKOFF_S, RECONCILE_INTERVAL_S, Poller
from app.tui.screens.attach_hint import AttachHintScreen
from app.tui.screens.confirm import ConfirmScreen
from app.tui.screens.help import HelpScreen
from app.tui.screens.history import HistoryScreen
from app.tui.screens.inbox import InboxScreen
from app.tui.screens.job_detail import JobDetailScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.new_job import NewJobRequest, NewJobScreen
from app.tui.screens.review import ReviewScreen
from app.tui.screens.sort import SortScreen
from app.tui.screens.stop_session import StopSessionScreen
from app.tui.screens.talk import TalkScreen
from app.tui.source import SOURCE_ERRORS, ControlRoomSource, JobRow, StopMode
from app.tui.widgets.jobs_table import JobsTable
from registry import states
from registry.jobstore import FINAL_STATUSES
from registry.wording import counted

COMMAND_ACTIONS = {command.action.split("(")[0] for command in COMMANDS}
# The commands that act on the selected job or its session.
JOB_ACTIONS = frozenset(
    {"open_job", "cancel_job", "resume_job", "stop_session", "answer", "toggle_log"}
    | {"tmux_split", "review_job", "attach_job", "talk", "sort"}
)
# Textual's own palette entries that one of COMMANDS already offers (q, ?).
SYSTEM_COMMANDS_SHADOWED = frozenset({"Quit", "Keys"})
RESUMABLE = states.JOB.transition("resume").sources
HISTORY_READ_AHEAD_S = 3.0  # after the first delta: read the History screen's data
HISTORY_RECHECK_S = 10.0  # and look again this often (a build from the CLI, a resize)
DEMO_START_WAIT_S = 60.0  # quitting while demo agents start: wait for them, to stop them


class ControlRoomApp(InboxActions):
    """Live jobs, sessions and events; every source call runs in a thread worker."""

    CSS_PATH = Path(__file__).parent / "control_room.tcss"  # absolute: subclasses live elsewhere
    TITLE = "orchestrate"
    BINDINGS = BINDINGS
    COMMANDS = App.COMMANDS | {ControlRoomCommands}

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
        self.demo_agents = demo_agents
        self.demo_job_ids: list[str] = []
        self.demo_stopped = False  # set once they are (quitting stops them)
        self._demo_started = threading.Event()  # the start worker is past start_demo
        # Set when the app unmounts: the bridge and every worker loop stop (a loop left
        # running would keep the process, or a test's event loop, from closing).
        self._stopping = threading.Event()
        self.main = MainScreen()
        self.polls_applied = 0  # deltas drawn so far; tests wait on it
        self._mailbox = DeltaMailbox()
        self.poller = Poller(
            source, self.post_message, mailbox=self._mailbox, stopping=self._stopping
        )
        self.take_terminal = take_terminal or self._suspended
        self.attach_hint_shown = False  # the first attach of a run explains the return key
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
        """Textual's palette entries, less those a control-room command offers too: the
        palette listed Quit and Keys/Help twice, in other words."""
        for command in super().get_system_commands(screen):
            if command.title not in SYSTEM_COMMANDS_SHADOWED:
                yield command

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

    def on_mount(self) -> None:
        # The first poll reads a screenful of jobs and events: started after the
        # first frame, so its Python work does not contend with that frame for the GIL.
        self.call_after_refresh(self._poll)
        self.signals.opened()
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
        try:
            if self.demo_agents:
                count = self.demo_agents
                self.post_message(Notice(f"Starting {counted(count, 'demo agent')} in tmux…"))
                self.demo_job_ids = self.source.start_demo(count)
                started = counted(len(self.demo_job_ids), "demo agent")
                self.post_message(Notice(f"Started {started}"))
        finally:
            self._demo_started.set()

    async def action_quit(self) -> None:
        """Leave; with demo agents of this app's own, stop them first (and only them)."""
        if not self.demo_agents or self.demo_stopped:
            self.exit()
        elif not self._busy("demo-stop"):  # a second q waits for the first
            self.notify(f"Stopping the {counted(self.demo_agents, 'demo agent')}…")
            self._stop_demo()

    def _busy(self, group: str) -> bool:
        """Whether a worker of ``group`` is still at work."""
        return any(worker.group == group for worker in self.workers)

    @work(thread=True, exit_on_error=False, group="demo-stop", description="Stopping demo agents")
    def _stop_demo(self) -> None:
        """Stop the demo agents this app started, then exit (whatever happened)."""
        try:
            self._demo_started.wait(DEMO_START_WAIT_S)  # q pressed while they were starting
            self.source.stop_demo(list(self.demo_job_ids))
            self.demo_stopped = True
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
        self.signals.observe(delta.jobs, delta.removed_job_ids, self.main.waiting_jobs)
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
            self.post_message(Notice(done.replace("{result}", str(result))))

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
        nobody_waits = isinstance(self.screen, InboxScreen) and not self.screen.rows
        if nobody_waits and action in JOB_ACTIONS | {"next_waiting"}:
            return False  # an empty inbox: esc, ? and q are all its footer offers
        if action == "sort" and not isinstance(self.screen, MainScreen):
            return False  # sorting: the jobs table only
        if action == "open_job" and not isinstance(self.screen, MainScreen | InboxScreen):
            return False  # a job's page: from a list of jobs
        if action in {"inbox", "new_job", "filter"} and isinstance(self.screen, InboxScreen):
            return False  # the inbox is for answering: its footer keeps to that (80 columns)
        if action == "next_waiting":  # tab moves focus as usual on the other screens
            return isinstance(self.screen, MainScreen | InboxScreen)
        return selects_jobs or action not in JOB_ACTIONS

    def _selected_job(self) -> str | None:
        job_id: str | None = getattr(self.screen, "selected_job_id", None)
        if job_id is None:
            self.notify("Select a job first", severity="warning")
        return job_id

    def action_open_job(self) -> None:
        if isinstance(self.screen, MainScreen | InboxScreen) and (job_id := self._selected_job()):
            self.push_screen(JobDetailScreen(self.source, job_id))

    # -- stepping into an agent, talking to it ------------------------------------
    # A completed job may still have its agent at its prompt (`--done-when idle` keeps
    # the pane for review and follow-up): stepping in and talking ask the source for
    # its pane instead of judging by the status.
    NO_PANE_STATUSES = frozenset({"pending", "error", "cancelled"})

    def _no_pane_yet(self, job_id: str) -> bool:
        """Refuse at once (True) for a job that has no agent to act on."""
        job = self._job_row(job_id)
        if job is None or job.status not in self.NO_PANE_STATUSES:
            return False
        why = "has not started yet" if job.status == "pending" else "has stopped"
        self._refuse(f"{job_id} is {job.status}: its agent {why} (d: its page)")
        return True

    def action_attach_job(self) -> None:
        """Put the person into the agent's pane (the first time, after a word on how
        to come back); the control room is as they left it when they return."""
        if (job_id := self._selected_job()) and not self._no_pane_yet(job_id):
            job = self._job_row(job_id)
            self._find_pane(job_id, "attach", job.status if job is not None else "")

    @work(thread=True, exit_on_error=False, group="attach", description="Finding the agent's pane")
    def _find_pane(self, job_id: str, then: str, status: str) -> None:
        """The job's pane first (a finished job's may be gone), then ``then``: attach
        or talk. ``status``: the job's, as the table showed it."""
        try:
            command = self.source.attach_command(job_id)
        except SOURCE_ERRORS as error:
            if status not in ("running", ""):
                doing = "nothing to step into" if then == "attach" else "nobody to talk to"
                raise self.ActionFailed(
                    f"{job_id} is {status} and its agent's pane is gone: {doing}"
                ) from error
            verb = "attach to" if then == "attach" else "talk to"
            raise self.ActionFailed(f"Could not {verb} {job_id}: {error}") from error
        self.post_message(AttachReady(job_id, command, then))

    def on_attach_ready(self, message: AttachReady) -> None:
        if message.then == "talk":
            self._talk_box(message.job_id)
            return
        if self.attach_hint_shown:
            self._step_into(message)
            return

        def chosen(go: bool | None) -> None:
            self.attach_hint_shown = True
            if go:
                self._step_into(message)

        self.push_screen(AttachHintScreen(message.job_id, RETURN_KEY_LABEL), chosen)

    def _step_into(self, message: AttachReady) -> None:
        command = message.command
        if command.switches_client:  # inside orchestrate's own tmux: this app keeps running
            self._switch_client(command.argv)
            return
        try:
            status = self.take_terminal(command.argv)
        except SuspendNotSupported:
            self.notify(
                "This terminal cannot hand itself over: run orchestrate attach", severity="error"
            )
            return
        if status != 0:
            self.notify(
                f"tmux exited with status {status}: {message.job_id}'s pane may be gone",
                severity="warning",
            )

    def _suspended(self, argv: list[str]) -> int:
        """Run `argv` with the terminal to itself, this app suspended meanwhile (a tmux
        client, attached until the person comes back); the app is redrawn as it was."""
        with self.suspend():
            return subprocess.run(argv, check=False).returncode

    @work(thread=True, exit_on_error=False, group="attach", description="Switching tmux client")
    def _switch_client(self, argv: list[str]) -> None:
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise self.ActionFailed(f"Could not switch to the pane: {done.stderr.strip()}")

    def action_returned(self) -> None:
        self.notify(
            f"You are in the control room: {RETURN_KEY_LABEL} comes back from an agent's "
            "pane, q quits"
        )

    def action_talk(self) -> None:
        """A prompt box whose text goes to the agent as a paste (`orchestrate send`); a
        completed job's, once its pane is known to be there."""
        if not (job_id := self._selected_job()) or self._no_pane_yet(job_id):
            return
        job = self._job_row(job_id)
        if job is not None and job.status == "completed":
            self._find_pane(job_id, "talk", job.status)
        else:
            self._talk_box(job_id)

    def _talk_box(self, job_id: str) -> None:
        job = self._job_row(job_id)
        reopens = job is not None and job.status == "completed"

        def send(text: str | None) -> None:
            if text:
                done = f"Sent {{result}} characters to {job_id}"
                if reopens:
                    done += ": its job runs again until the agent is done"
                self._call(f"Sending to {job_id}", done, "send_input", job_id, text)

        agent = job.agent if job is not None else ""
        self.push_screen(TalkScreen(job_id, agent, reopens=reopens), send)

    def action_sort(self) -> None:
        if isinstance(self.screen, MainScreen):
            table = self.main.query_one("#jobs", JobsTable)
            self.push_screen(SortScreen(table.sort_column, table.sort_reverse), table.sort_by)

    def action_review_job(self) -> None:
        """The Review screen of the selected job (work-tree jobs: the others are told so)."""
        service = getattr(self.source, "review_service", None)
        if service is None:
            self.notify("This control room has no reviews", severity="warning")
        elif job_id := self._selected_job():
            self.push_screen(ReviewScreen(service, job_id))

    def action_new_job(self) -> None:
        """The New-job dialog, its agent defaulting to one installed here: looked up
        (PATH, the adapters) in a worker the first time, not at start, where its
        imports slowed the first paint; the open dialog is told when they are known."""
        if self.installed_agents is None:
            self._find_agents()
        self._new_job_dialog()

    @work(thread=True, exclusive=True, group="agents", description="Finding installed agents")
    def _find_agents(self) -> None:
        self.post_message(AgentsFound(self.source.installed_agents()))

    def on_agents_found(self, message: AgentsFound) -> None:
        self.installed_agents = message.kinds
        if isinstance(self.screen, NewJobScreen):  # opened before they were known
            self.screen.show_installed(message.kinds)

    def _new_job_dialog(self) -> None:
        labels = self.main.session_labels
        default = getattr(self.screen, "selected_session", None) or (labels[0] if labels else "")

        def submit(request: NewJobRequest | None) -> None:
            if request is not None:
                args = (request.prompt, request.agent, request.agent_session)
                self._call("Submitting job", "Submitted job {result}", "submit", *args)

        installed = self.installed_agents
        screen = NewJobScreen(session=default, sessions=labels, installed=installed)
        self.push_screen(screen, submit)

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
        interrupted = job is not None and job.activity == "interrupted"
        if job is not None and job.status not in RESUMABLE and not interrupted:
            self._refuse(
                f"{job_id} is {job.status}: only an errored, cancelled or interrupted job "
                "can be resumed"
            )
            return
        self._call(f"Resuming {job_id}", f"Resumed job {job_id}", "resume", job_id)

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
            raise self.ActionFailed(f"Could not resume the interrupted jobs: {error}") from error
        if resumed.job_ids:
            back = counted(len(resumed.job_ids), "interrupted job")
            self.post_message(Notice(f"Resumed {back}: {', '.join(resumed.job_ids)}"))
        for job_id, why in resumed.failed.items():
            self.post_message(Notice(f"Could not resume {job_id}: {why}", "error"))
        if not resumed.job_ids and not resumed.failed:
            self.post_message(Notice("No interrupted job to resume"))

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

    def action_toggle_log(self) -> None:
        if isinstance(self.screen, JobDetailScreen):
            self.screen.query_one("#detail-tail").toggle_class("-hidden")
        elif isinstance(self.screen, InboxScreen):
            self.screen.toggle_screen()
        elif isinstance(self.screen, MainScreen):
            if self.main.log_wanted is not None:
                self.main.hide_log()
            elif (job_id := self._selected_job()) and self.main.want_log(job_id):
                self._find_log(job_id)

    @work(
        thread=True,
        exclusive=True,
        exit_on_error=False,
        group="find-log",
        description="Finding the pane log",
    )
    def _find_log(self, job_id: str) -> None:
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
            # app.* ones (esc, the inbox's y/n/a) are commands: listed once, below
            if isinstance(binding, Binding)
            and binding.show
            and not binding.action.startswith("app.")
        ]
        commands = [
            command
            for command in COMMANDS
            if self.check_action(command.action.split("(")[0], ()) is not False
        ]
        self.push_screen(HelpScreen(own, commands, navigation=isinstance(screen, MainScreen)))

    async def action_back(self) -> None:
        if len(self.screen_stack) > 1:
            await self.pop_screen()
        else:
            self.main.back()
