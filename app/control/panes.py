"""An agent's pane: finding it by job, stopping its agent, typing into it, and
putting a person into it (attach, the control-room split)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Mapping

from app.agents import adapter_for
from app.control.context import ControlContext
from app.control.errors import AgentNotStarted, UnknownAgent
from app.supervision import supervisor
from app.tmux.attach import AttachCommand, attach_command
from app.tmux.errors import PaneNotFound, TmuxError
from app.tmux.panes import JOB_OPTION
from registry.errors import RegistryError
from registry.records import Job
from registry.vocabulary import EventType, JobStatus


class PaneControl:
    """The panes of the control room's jobs, on the context's tmux server."""

    def __init__(self, context: ControlContext) -> None:
        self.context = context

    def pane_for_job(self, job_id: str) -> str | None:
        """The job's agent pane, or None (no tmux server, or the pane is gone)."""
        return self.panes_by_job().get(job_id)

    def panes_by_job(self) -> dict[str, str]:
        """Every agent pane on the server by job id, in one tmux call (newest pane wins)."""
        driver = self.context.driver
        if not driver.server_running():
            return {}
        result = driver.server.cmd("list-panes", "-a", "-F", f"#{{pane_id}} #{{{JOB_OPTION}}}")
        panes: dict[str, str] = {}
        for line in result.stdout if result.returncode == 0 else []:
            pane_id, _, job_id = line.partition(" ")
            if job_id:
                panes[job_id] = pane_id
        return panes

    def stop_agent(self, job: Job, *, grace_sec: float) -> bool:
        """Ask the job's agent to stop, then kill its pane; True if a pane was stopped.
        A job never started in a pane (a queue worker's) has nothing to stop."""
        if not self.context.pane_log(job.job_id).exists():
            return False
        pane_id = self.pane_for_job(job.job_id)
        if pane_id is None:
            return False
        driver = self.context.driver
        if driver.pane_alive(pane_id):
            keys = adapter_for(job.agent, self.context.settings.state_dir).keys
            with contextlib.suppress(TmuxError):
                driver.send_key_names(pane_id, (*keys.interrupt, *keys.exit))
            deadline = time.monotonic() + grace_sec
            while time.monotonic() < deadline and driver.pane_alive(pane_id):
                time.sleep(0.1)
        with contextlib.suppress(PaneNotFound):
            driver.kill_pane(pane_id)
        return True

    def send_input(self, job_id: str, text: str, *, by: str = "cli") -> int:
        """Give the job's agent free text, as a bracketed paste then Enter (never
        send-keys of raw text), and record it as an `input` event: who, how much,
        how long it took. Returns the number of characters sent.

        A completed job whose agent is still at its prompt (`--done-when idle` keeps
        the pane for this) runs again first: its follow-up turn is supervised as the
        first was, so what the agent then asks reaches the control room."""
        if not text.strip():
            raise UnknownAgent("nothing to send: the text is empty")
        registry = self.context.registry
        driver = self.context.driver
        job = registry.get(job_id)
        pane_id = self.pane_for_job(job_id)
        if pane_id is None or not driver.pane_alive(pane_id):
            raise AgentNotStarted(f"job {job_id} has no live agent pane to send to")
        if job.status == JobStatus.COMPLETED:
            job = registry.follow_up(job_id, f"follow-up from {by}")
            supervisor.ensure_started(self.context.settings.state_dir, driver.socket_name)
        started = time.monotonic()
        driver.paste_text(pane_id, text)
        took_ms = int((time.monotonic() - started) * 1000)
        if job.status == JobStatus.RUNNING:
            data = {"kind": "message", "by": by, "chars": len(text), "took_ms": took_ms}
            with contextlib.suppress(RegistryError):
                registry.publish(job_id, EventType.INPUT, f"{len(text)} characters from {by}", data)
        return len(text)

    def attach_command(
        self, job_id: str, environ: Mapping[str, str] | None = None
    ) -> AttachCommand:
        """How to put a person into the job's pane from where they are (`environ`:
        their environment, default this process's): attach, switch client inside this
        tmux server, or nest inside another (app/tmux/attach.py); ctrl+q comes back."""
        self.context.registry.get(job_id)
        pane_id = self.pane_for_job(job_id)
        if pane_id is None:
            raise AgentNotStarted(f"job {job_id} has no agent pane to attach to")
        where = os.environ if environ is None else environ
        return attach_command(self.context.driver.socket_name, pane_id, where)

    def control_room_split(self, job_id: str) -> None:
        """Open the seed 003 split for a job: pane log tail (70 %) over its event follow (30 %)."""
        self.context.registry.get(job_id)  # JobNotFound for a typo
        log_path = self.context.pane_log(job_id)
        # Not created here: `tail -F` waits for it, and a pane log is the mark of a job
        # whose agent orchestrate started, so an empty one made a job picked by hand
        # (no pane) look like an agent that had vanished: the next supervision pass
        # failed it (later: marked it interrupted).
        log_path.parent.mkdir(parents=True, exist_ok=True)
        state_dir = str(self.context.settings.state_dir)
        follow = [sys.executable, "-m", "app", "--state-dir", state_dir]
        follow += ["msg", "follow", "--task", job_id]
        self.context.driver.control_room_split(job_id, log_path, follow)
