"""Codex's approvals answered from orchestrate, through an app-server the job owns.

Under ``submit --approvals control-room`` a Codex job's pane runs three things,
all in the pane's process group (so killing the pane, or tmux, ends them all):

* ``codex app-server --listen unix://<job>/codex-app-server.sock``, started by the
  pane runner, where the turns run;
* the Codex TUI, joined to it with ``--remote unix://…`` (the person still sees,
  and may answer, its dialogs);
* this bridge, a thread of the pane runner: a second client that ``thread/resume``s
  the job's threads. It records each ``item/commandExecution/requestApproval`` (and
  file-change approval) as the job's wait, with its command; the decision given
  with `orchestrate answer` or the control room's y/N (a ``job.decision`` on the
  bus, as Claude's waiting hook reads them: app/approvals/decision.py) goes back
  as the request's result: yes → ``accept``, always → ``acceptForSession``, no →
  ``decline``. The TUI's dialog closes by itself, and the thread's status
  (``thread/status/changed``) says the agent moved on.

Measured with codex 0.169.0: ``thread/started`` and ``thread/status/changed`` reach
every client; a thread can be resumed only once its rollout is written (its first
status change), and resuming a thread replays its pending approval; the hidden
title thread is ephemeral (never resumed). ``acceptForSession`` and ``decline``
are taken though not listed in ``availableDecisions``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.agents.appserver import AppServerClient, AppServerUnavailable
from app.agents.hook import BUSY_TIMEOUT_MS
from registry.activity import Observation
from registry.decisions import DecisionReader
from registry.vocabulary import Activity, Answer

log = logging.getLogger(__name__)

SOURCE = "appserver:codex"
APPROVAL_SOURCE = f"{SOURCE}:requestApproval"
DECISIONS: dict[str, str] = {
    Answer.YES: "accept",
    Answer.ALWAYS: "acceptForSession",
    Answer.NO: "decline",
}
APPROVALS = {
    "item/commandExecution/requestApproval": "Shell",
    "item/fileChange/requestApproval": "Edit",
}
POLL_SEC = 0.1
CONNECT_SEC = 20.0
CLIENT_INFO = {"name": "orchestrate", "title": "orchestrate", "version": "1"}


@dataclass
class Pending:
    """An approval request waiting for a decision posted after it was recorded."""

    thread_id: str
    decisions: DecisionReader


def approval_observation(method: str, params: Mapping[str, Any]) -> Observation:
    """The wait an approval request means: its reason, tool, and command."""
    actions = params.get("commandActions")
    commands = [
        action["command"]
        for action in (actions if isinstance(actions, list) else [])
        if isinstance(action, Mapping) and isinstance(action.get("command"), str)
    ]
    raw = params.get("command")
    command = " && ".join(commands) or (raw if isinstance(raw, str) else "")
    reason = params.get("reason")
    tool = APPROVALS.get(method, "")
    question = reason if isinstance(reason, str) and reason else f"Allow {tool}?"
    return Observation(
        Activity.WAITING, APPROVAL_SOURCE, question=question, tool=tool, command=command
    )


def status_observation(status: Any) -> Observation | None:
    """A thread's status as an activity (None while it waits: its request says more)."""
    if not isinstance(status, Mapping):
        return None
    kind = status.get("type")
    if kind == "idle":
        return Observation(Activity.IDLE, f"{SOURCE}:status")
    flags = status.get("activeFlags")
    if kind == "active" and not (isinstance(flags, list) and "waitingOnApproval" in flags):
        return Observation(Activity.WORKING, f"{SOURCE}:status")
    return None


class ApprovalBridge:
    """The second client; ``run`` until the app-server goes or ``stop`` is set."""

    def __init__(self, socket_path: Path, state_dir: str, job_id: str) -> None:
        self.socket_path = socket_path
        self.state_dir = state_dir
        self.job_id = job_id
        self.stop = threading.Event()
        self.subscribed: set[str] = set()
        self.candidates: set[str] = set()
        self.resuming: dict[int, str] = {}
        self.pending: dict[Any, Pending] = {}
        self.decided: dict[Any, Answer] = {}
        self.registry: Any = None

    def run(self) -> None:
        from registry.jobs import Registry

        self.registry = Registry.open(self.state_dir, busy_timeout_ms=BUSY_TIMEOUT_MS)
        try:
            client = AppServerClient.connect(self.socket_path, time.monotonic() + CONNECT_SEC)
            try:
                self.serve(client)
            finally:
                client.close()
        except AppServerUnavailable as exc:
            log.info("codex app-server bridge ends: %s", exc)
        finally:
            self.registry.db.close()

    def serve(self, client: AppServerClient) -> None:
        init = client.request("initialize", {"clientInfo": CLIENT_INFO})
        while not self.stop.is_set():
            message = client.receive(POLL_SEC)
            if message is not None:
                if message.get("id") == init and "method" not in message:
                    client.notify("initialized")
                    client.request("thread/loaded/list", {})
                else:
                    self.handle(client, message)
            self.decide(client)

    # -- what the server says -------------------------------------------------

    def handle(self, client: AppServerClient, message: Mapping[str, Any]) -> None:
        method = message.get("method")
        params = message.get("params")
        params = params if isinstance(params, Mapping) else {}
        if method is None:
            self.answered(client, message)
        elif "id" in message and method in APPROVALS:
            self.asked(message["id"], str(method), params)
        elif method == "thread/started":
            thread = params.get("thread")
            if isinstance(thread, Mapping) and not thread.get("ephemeral"):
                self.candidates.add(str(thread.get("id")))
        elif method == "thread/status/changed":
            thread_id = str(params.get("threadId"))
            if thread_id in self.subscribed:
                seen = status_observation(params.get("status"))
                if seen is not None:
                    self.observe(seen)
            elif thread_id in self.candidates:
                self.resume(client, thread_id)
        elif method == "serverRequest/resolved":
            self.pending.pop(params.get("requestId"), None)

    def answered(self, client: AppServerClient, message: Mapping[str, Any]) -> None:
        """A response to one of our requests: the loaded threads, or a resume."""
        result = message.get("result")
        result = result if isinstance(result, Mapping) else {}
        data = result.get("data")
        if isinstance(data, list):  # thread/loaded/list: the threads that run already
            for thread_id in data:
                self.candidates.add(str(thread_id))
                self.resume(client, str(thread_id))
            return
        thread_id = self.resuming.pop(message.get("id"), None)  # type: ignore[arg-type]
        if thread_id is None or "error" in message:
            return  # not written yet (or the title thread): its next status change retries
        self.subscribed.add(thread_id)
        self.candidates.discard(thread_id)
        with contextlib.suppress(Exception):  # the thread id is what `codex resume` needs
            self.registry.set_agent_session_id(self.job_id, thread_id)

    def resume(self, client: AppServerClient, thread_id: str) -> None:
        if thread_id in self.subscribed or thread_id in self.resuming.values():
            return
        request = client.request("thread/resume", {"threadId": thread_id, "excludeTurns": True})
        self.resuming[request] = thread_id

    def asked(self, request_id: Any, method: str, params: Mapping[str, Any]) -> None:
        """An approval request: the job waits, with its command, for a decision (unless
        the approval policy answers it first: then it never shows waiting)."""
        seen = approval_observation(method, params)
        by_policy = self.policy_answer(seen.tool, params)
        if by_policy is not None:
            self.decided[request_id] = by_policy
            return
        recorded = self.observe(seen)
        after = recorded.bus_seq if recorded is not None else self.registry.bus.latest_seq()
        reader = DecisionReader(self.registry.bus, self.job_id, after)
        self.pending[request_id] = Pending(str(params.get("threadId")), reader)

    # -- what the control room decided ---------------------------------------------

    def policy_answer(self, tool: str, params: Mapping[str, Any]) -> Answer | None:
        """The approval policy's answer (app/policy/hook.py), or None: a person decides."""
        from app.policy.hook import app_server_answer

        try:
            state_dir = Path(self.state_dir)
            return app_server_answer(
                self.registry, state_dir, self.job_id, tool, params, os.environ
            )
        except Exception as exc:  # the policy never costs the agent its question
            log.info("job %s: approval policy not applied: %s", self.job_id, exc)
            return None

    def decide(self, client: AppServerClient) -> None:
        for request_id, answer in list(self.decided.items()):
            client.respond(request_id, {"decision": DECISIONS[answer]})
            del self.decided[request_id]
        for request_id, pending in list(self.pending.items()):
            decision = pending.decisions.latest()
            if decision is None or decision.answer is None:
                continue
            client.respond(request_id, {"decision": DECISIONS[decision.answer]})
            del self.pending[request_id]

    def observe(self, seen: Observation) -> Any:
        try:
            return self.registry.observe(self.job_id, seen)
        except Exception as exc:  # the job ended meanwhile, or the database is busy
            log.info("job %s: activity not recorded: %s", self.job_id, exc)
            return None


class AppServerCompanion:
    """The job's own `codex app-server` and its bridge, started before the TUI and
    ended after it. The server stays in the pane's process group: a killed pane or
    tmux server takes it along (the TUI holds the terminal in raw mode, so a C-c
    typed in the pane reaches the TUI, not the server)."""

    def __init__(
        self,
        server_argv: list[str],
        socket_path: Path,
        env: Mapping[str, str],
        *,
        state_dir: str,
        job_id: str,
        log_path: Path,
    ) -> None:
        self.server_argv = server_argv
        self.socket_path = socket_path
        self.env = dict(env)
        self.log_path = log_path
        self.bridge = ApprovalBridge(socket_path, state_dir, job_id)
        self.thread: threading.Thread | None = None
        self.process: Any = None

    def start(self, wait_sec: float = CONNECT_SEC) -> str | None:
        """Start the server and the bridge; None once it listens, else why not."""
        import subprocess

        self.socket_path.unlink(missing_ok=True)
        try:
            with self.log_path.open("ab") as out:
                self.process = subprocess.Popen(
                    self.server_argv,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=out,
                )
        except OSError as exc:
            return f"cannot start {self.server_argv[0]} app-server: {exc.strerror or exc}"
        deadline = time.monotonic() + wait_sec
        while not self.socket_path.exists():  # a symlink counts once its socket is there
            status = self.process.poll()
            if status is not None:
                return f"codex app-server exited with status {status} (see {self.log_path})"
            if time.monotonic() >= deadline:
                self.stop()
                return f"codex app-server did not listen within {wait_sec:.0f} s"
            time.sleep(POLL_SEC)
        self.thread = threading.Thread(target=self.bridge.run, name="codex-approvals", daemon=True)
        self.thread.start()
        return None

    def stop(self, grace_sec: float = 5.0) -> None:
        """End the bridge and the server with its children (SIGTERM, then SIGKILL).

        The whole tree: npm's `codex` is a node wrapper around the native binary, and
        after a hangup the wrapper died of our SIGTERM while the binary lived on."""
        self.bridge.stop.set()
        process = self.process
        if process is not None:
            tree = process_tree(process.pid)
            signal_all(tree, signal.SIGTERM)
            deadline = time.monotonic() + grace_sec
            while any(alive(pid) for pid in tree) and time.monotonic() < deadline:
                process.poll()  # reap our own child
                time.sleep(POLL_SEC / 2)
            signal_all([pid for pid in tree if alive(pid)], signal.SIGKILL)
            with contextlib.suppress(Exception):
                process.wait(grace_sec)
        if self.thread is not None:
            self.thread.join(grace_sec)


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process under it (Linux /proc), parents first."""
    found: list[int] = []
    stack = [pid]
    while stack:
        current = stack.pop()
        found.append(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            with contextlib.suppress(OSError, ValueError):
                stack.extend(int(child) for child in (task / "children").read_text().split())
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent does not count)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)
