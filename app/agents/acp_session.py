"""orchestrate as the ACP client of one job's agent: what `orchestrate acp-run` runs in
the job's pane (app/commands/acp_run.py starts it).

It spawns the agent over stdio (the `agent-client-protocol` package:
``spawn_agent_process``), ``initialize``, opens the session in the job's work tree
(``session/new``, or ``session/load`` on resume where the agent advertises
``loadSession``), sends the prompt and shows the session as a transcript
(app/agents/acp_view.py). The job's activity comes straight from the protocol
(app/agents/acp_protocol.py) and is recorded as signed activity events, as hooks are
(``Registry.observe``). A ``session/request_permission`` is recorded as the job's
wait with its command; the policy seam is asked first, then the answer given with
`orchestrate answer`, the control room's inbox, or y/n/a typed in the pane (all a
``job.decision``, app/approvals/decision.py's protocol) goes back as the request's
option. No key is ever typed into the agent: it has no terminal.

Lines typed in the pane are the next prompts (queued while the agent works);
``/cancel`` sends ``session/cancel``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from acp import PROTOCOL_VERSION, Client, RequestError, spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    Implementation,
    PermissionOption,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
)

from app.agents import acp_protocol as protocol
from app.agents.acp_view import AGENT, THOUGHT, Transcript, agent_text
from app.agents.base import CONTINUE_PROMPT
from app.agents.hook import BUSY_TIMEOUT_MS
from registry.activity import Observation
from registry.decisions import DecisionReader, post_decision
from registry.vocabulary import Activity, Answer, JobStatus

log = logging.getLogger(__name__)

POLL_SEC = 0.05
"""How often a held permission request looks for its decision (a local SQLite read)."""
REPEAT_SEC = 1.0
"""A repeated working sighting is sent to the registry at most this often (each is a
write transaction, and message chunks come many a second)."""
CANCEL_COMMAND = "/cancel"
REPLAYED_CHARS = 160
"""How much of a replayed message of the person's the transcript shows (one line)."""
CLIENT_INFO = Implementation(name="orchestrate", title="orchestrate", version="1")


@dataclass(frozen=True)
class RunOptions:
    """One session's start: whose job, which agent, where, with what."""

    state_dir: Path
    job_id: str
    agent: str
    """The job's agent kind (``acp``, ``gemini-acp``): the sources' middle word."""
    argv: list[str]
    workdir: Path
    prompt: str
    load_session: str | None = None
    agent_log: Path | None = None


def policy_answer(
    recorder: JobRecorder,
    agent: str,
    tool_call: ToolCallUpdate,
    workdir: Path,
    env: Mapping[str, str],
) -> Answer | None:
    """The approval policy's answer to a permission request before a person is asked
    (app/policy/, as Claude's hook and Codex's app-server get it), recorded with the
    rule that decided; None: no policy, no rule, or a rule that says ask: the inbox.
    A broken policy never costs the agent its question: it is logged and a person asked."""
    from app.policy.hook import answer_by_policy, has_policy

    state_dir = recorder.state_dir
    try:
        if not has_policy(state_dir, env):
            return None
        from app.policy.decide import Question

        tool, command, path = protocol.policy_subject(tool_call)
        question = Question(agent=agent, tool=tool, command=command, path=path, workdir=workdir)
        verdict = answer_by_policy(recorder.registry, state_dir, recorder.job_id, question, env)
    except Exception as exc:
        log.info("job %s: approval policy not applied: %s", recorder.job_id, exc)
        return None
    return verdict.answer if verdict is not None else None


class JobRecorder:
    """The job's record, as the session changes it. Never fails the session: a job
    ended meanwhile or a busy database is logged and passed over."""

    def __init__(self, state_dir: Path, job_id: str) -> None:
        from registry.jobs import Registry

        self.registry = Registry.open(state_dir, busy_timeout_ms=BUSY_TIMEOUT_MS)
        self.state_dir = state_dir
        self.job_id = job_id
        self._last: tuple[str, float] = ("", 0.0)

    def observe(self, seen: Observation) -> Any:
        """Record ``seen``; a working sighting repeated within REPEAT_SEC is skipped."""
        now = time.monotonic()
        if seen.activity == Activity.WORKING == self._last[0] and now - self._last[1] < REPEAT_SEC:
            return None
        self._last = (seen.activity, now)
        try:
            return self.registry.observe(self.job_id, seen)
        except Exception as exc:
            log.info("job %s: activity not recorded: %s", self.job_id, exc)
            return None

    def session_id(self, session_id: str) -> None:
        with contextlib.suppress(Exception):
            self.registry.set_agent_session_id(self.job_id, session_id)

    def follow_up(self) -> None:
        """A prompt typed after the job completed: it runs again, supervised."""
        with contextlib.suppress(Exception):
            if self.registry.get(self.job_id).status == JobStatus.COMPLETED:
                self.registry.follow_up(self.job_id, "follow-up typed in the ACP pane")

    def latest_seq(self) -> int:
        return self.registry.bus.latest_seq()

    def decide(self, answer: Answer) -> None:
        post_decision(self.registry.bus, self.job_id, answer, by="pane")

    def close(self) -> None:
        self.registry.db.close()


class OrchestrateClient:
    """The ACP client side: the agent's updates and permission requests."""

    def __init__(
        self,
        agent: str,
        job_id: str,
        view: Transcript,
        recorder: JobRecorder,
        workdir: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.agent = agent
        self.job_id = job_id
        self.view = view
        self.recorder = recorder
        self.workdir = workdir or Path.cwd()
        """The job's work tree: where the policy's path rules are relative to."""
        self.env: Mapping[str, str] = env if env is not None else {}
        """The pane's environment: the state dir and a policy named for the job."""
        self.asking = False
        """A permission request waits for its answer (typed y/n/a answer it)."""

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.show(update)
        seen = protocol.activity_of_update(self.agent, update)
        if seen is not None and not self.asking:
            self.recorder.observe(seen)

    def show(self, update: Any) -> None:
        kind = protocol.update_kind(update)
        if kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
            text = getattr(update.content, "text", None)
            if not isinstance(text, str):
                return
            if kind == "user_message_chunk":  # replayed by session/load: a reminder only
                self.view.note(f"> {agent_text(' '.join(text.split()))[:REPLAYED_CHARS]}")
            else:
                self.view.stream(AGENT if kind == "agent_message_chunk" else THOUGHT, text)
        elif kind in ("tool_call", "tool_call_update"):
            tool, command = protocol.tool_and_command(update)
            if kind == "tool_call" or update.status or update.title:
                self.view.tool("⚙", tool, update.title or command, update.status or "")
            for item in update.content or []:
                if getattr(item, "type", "") == "diff":
                    self.view.diff(item.path, item.old_text, item.new_text)
        elif kind == "plan":
            self.view.plan(update.entries)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        wait = protocol.permission_wait(self.agent, tool_call)
        offered = protocol.answers_offered(options)
        self.view.note(f"? {wait.question}")
        self.view.options([option.name for option in options])
        answer = policy_answer(self.recorder, self.agent, tool_call, self.workdir, self.env)
        if answer is not None:
            self.view.note(f"   answered {answer} by the approval policy")
        else:
            words = "/".join(offered)
            self.view.note(f"   answer in the inbox, with `orchestrate answer --job {self.job_id} "
                           f"{words}`, or type {words} (or its first letter) here")  # fmt: skip
            recorded = self.recorder.observe(wait)
            after = recorded.bus_seq if recorded is not None else self.recorder.latest_seq()
            answer = await self.wait_for_answer(after, options)
        option = protocol.option_for(answer, options)
        self.view.note(f"   answered {answer}")
        self.recorder.observe(
            Observation(Activity.WORKING, protocol.source(self.agent, f"answered {answer}"))
        )
        if option is None:  # the policy chose what the agent does not offer
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option)
        )

    async def wait_for_answer(self, after_seq: int, options: Sequence[PermissionOption]) -> Answer:
        """The first decision posted after ``after_seq`` that one of ``options`` carries."""
        reader = DecisionReader(self.recorder.registry.bus, self.job_id, after_seq)
        seen_seq = after_seq
        self.asking = True
        try:
            while True:
                decision = reader.latest()
                if decision is not None and decision.seq > seen_seq:
                    seen_seq = decision.seq
                    if decision.answer is not None and protocol.option_for(
                        decision.answer, options
                    ):
                        return decision.answer
                    word = decision.answer or "an unreadable answer"
                    self.view.note(f"   {word}: not an option here; still waiting")
                await asyncio.sleep(POLL_SEC)
        finally:
            self.asking = False


class PaneInput:
    """Lines typed in the pane, read by a thread (the pane is a terminal in cooked
    mode: a line arrives when Enter is pressed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()

    def start(self, stream: Any = None) -> None:
        source = stream or sys.stdin

        def read() -> None:
            try:
                for line in source:
                    self.loop.call_soon_threadsafe(self.lines.put_nowait, line.rstrip("\n"))
            except (OSError, ValueError):
                pass
            self.loop.call_soon_threadsafe(self.lines.put_nowait, None)

        threading.Thread(target=read, name="acp-pane-input", daemon=True).start()


class Session:
    """One ACP session of the job: open it, run turns, take typed lines."""

    def __init__(
        self,
        options: RunOptions,
        view: Transcript,
        recorder: JobRecorder,
        env: Mapping[str, str],
    ) -> None:
        self.options = options
        self.env = env
        self.view = view
        self.recorder = recorder
        self.client = OrchestrateClient(
            options.agent, options.job_id, view, recorder, options.workdir, env
        )
        self.prompts: asyncio.Queue[str | None] = asyncio.Queue()
        self.turn_running = False
        self.conn: Any = None
        self.session_id = ""

    async def run(self, typed: asyncio.Queue[str | None] | None = None) -> int:
        """Until the typed input ends or the agent goes; the agent's exit status (1 when
        the session failed though the agent exited 0)."""
        opts = self.options
        failed = False
        with (opts.agent_log or Path("/dev/null")).open("ab") as log_file:
            # Only the requests it advertises are implemented (no fs, no terminal): the
            # package's router answers any other with "method not found".
            async with spawn_agent_process(
                cast(Client, self.client),
                opts.argv[0],
                *opts.argv[1:],
                env=dict(self.env),
                cwd=opts.workdir,
                transport_kwargs={"stderr": log_file.fileno()},
            ) as (conn, process):
                self.conn = conn
                reader = asyncio.create_task(self.take_lines(typed)) if typed else None
                try:
                    await self.converse(process)
                except (RequestError, ConnectionError, asyncio.IncompleteReadError) as exc:
                    failed = True
                    self.view.note(f"orchestrate: the ACP session ended: {exc or 'agent gone'}")
                finally:
                    if reader is not None:
                        reader.cancel()
        status = process.returncode
        if status is None or status < 0:
            return 128 - (status or 0) if status else 1
        return 1 if failed and status == 0 else status

    async def converse(self, process: Any) -> None:
        """Turns until the typed input ends; a ConnectionError once the agent is gone."""
        prompt: str | None = await self.open()
        while prompt is not None:
            await self.turn(prompt)
            prompt = await self.next_prompt(process)
            if prompt is not None:
                self.recorder.follow_up()

    async def next_prompt(self, process: Any) -> str | None:
        """The next typed prompt, or None at the input's end; the agent exiting while
        it waits for one ends the session."""
        wanted = asyncio.ensure_future(self.prompts.get())
        exited = asyncio.ensure_future(process.wait())
        done, _ = await asyncio.wait({wanted, exited}, return_when=asyncio.FIRST_COMPLETED)
        if wanted in done:
            exited.cancel()
            return wanted.result()
        wanted.cancel()
        raise ConnectionError(f"the agent exited with status {process.returncode}")

    async def open(self) -> str:
        """Initialize and open the session; the first prompt to send."""
        opts = self.options
        init = await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(),
            client_info=CLIENT_INFO,
        )
        who = init.agent_info.title or init.agent_info.name if init.agent_info else "agent"
        self.view.note(f"orchestrate: ACP session with {who} in {opts.workdir}")
        can_load = bool(init.agent_capabilities and init.agent_capabilities.load_session)
        if opts.load_session and can_load:
            try:
                await self.conn.load_session(
                    cwd=str(opts.workdir), session_id=opts.load_session, mcp_servers=[]
                )
            except RequestError as exc:
                self.view.note(f"orchestrate: session/load failed ({exc}): starting afresh")
            else:
                self.session_id = opts.load_session
                self.view.note(f"orchestrate: resumed session {opts.load_session}")
                return CONTINUE_PROMPT
        elif opts.load_session:
            self.view.note(
                "orchestrate: this agent does not advertise session/load: "
                "starting afresh with the original prompt"
            )
        created = await self.conn.new_session(cwd=str(opts.workdir), mcp_servers=[])
        self.session_id = created.session_id
        self.recorder.session_id(created.session_id)
        return opts.prompt

    async def turn(self, prompt: str) -> None:
        """One ``session/prompt``: working until it returns, then idle."""
        for line in prompt.splitlines() or [""]:
            self.view.note(f"> {line}")
        self.recorder.observe(Observation(Activity.WORKING, protocol.source(self.options.agent,
                                                                            "prompt")))  # fmt: skip
        self.turn_running = True
        try:
            response = await self.conn.prompt(
                session_id=self.session_id, prompt=[TextContentBlock(type="text", text=prompt)]
            )
        finally:
            self.turn_running = False
        reason = str(response.stop_reason)
        self.recorder.observe(protocol.end_of_turn(self.options.agent, reason))
        self.view.your_turn(reason)

    async def take_lines(self, typed: asyncio.Queue[str | None]) -> None:
        while True:
            line = await typed.get()
            if line is None:
                await self.prompts.put(None)
                return
            await self.take(line.strip())

    async def take(self, line: str) -> None:
        """One typed line: an answer, /cancel, or the next prompt."""
        if not line:
            return
        if self.client.asking:
            try:
                self.recorder.decide(protocol.answer_of(line))
            except ValueError as exc:
                self.view.note(f"   {exc}")
            return
        if line == CANCEL_COMMAND:
            if self.turn_running:
                await self.conn.cancel(session_id=self.session_id)
            return
        if self.turn_running:
            self.view.note("   (sent when the agent's turn ends)")
        await self.prompts.put(line)


def run(options: RunOptions, env: Mapping[str, str]) -> int:
    """Run the session with the pane's typed lines; the exit status for the pane.
    ``env``: the pane's whole environment, which the agent gets (its keys, its config)."""
    view = Transcript()
    recorder = JobRecorder(options.state_dir, options.job_id)

    async def main() -> int:
        typed = PaneInput(asyncio.get_running_loop())
        typed.start()
        return await Session(options, view, recorder, env).run(typed.lines)

    try:
        return asyncio.run(main())
    except FileNotFoundError:
        view.note(f"orchestrate: command not found: {options.argv[0]}")
        return 127
    finally:
        recorder.close()
