"""Integration proofs with the real agent CLIs, offline against the scripted fake models,
in real tmux on a private socket, for features the rest of the suite proved only with
recordings or stand-ins:

* usage and cost synced from the transcript a real CLI has just written, priced as
  the history prices it;
* Aider resumed after a reboot with its own chat history (``--restore-chat-history``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from app.control import Orchestrator
from app.selftest.models.script import Reply, Script, Usage
from app.usage.sync import sync_usage
from registry.history.aggregate_py import aggregate_facts
from registry.history.facts import Fact
from registry.history.prices import PriceTable, parse_prices, price_usage
from registry.history.reader import UsageRow
from registry.history.schema import HistoryPaths
from registry.history.segments import export_segments, list_segments
from registry.jobs import Registry
from registry.vocabulary import Activity, MessageType
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import require
from tests.agents.test_orchestrated_agents import supervise_until
from tests.plugin.models import ServeModel
from tests.polling import poll_until

pytestmark = pytest.mark.agents

TURN_USAGE = Usage(
    input_tokens=1111, output_tokens=22, cached_input_tokens=333, cache_creation_input_tokens=44
)
"""What the fake model reports for the job's one turn: values no side request reports."""


PRICES = {"price": [{"agent": agent, "model": "*", "input": 15, "output": 75, "cache_read": 1.5,
                     "cache_write": 18.75} for agent in ("claude", "codex", "gemini")]}  # fmt: skip
"""Dollars per million tokens, the same for each agent's model."""

# What each CLI writes down for TURN_USAGE, by the API's meaning (app/selftest/models/script.py):
# Anthropic's input excludes the cached read and reports the cache write; OpenAI's and
# Gemini's input includes the cached part, and they report no cache write.
RECORDED = {
    "claude": (1111, 22, 333, 44),
    "codex": (1111 - 333, 22, 333, 0),
    "gemini": (1111 - 333, 22, 333, 0),
}
# ... priced at PRICES, worked out by hand:
# Claude: (1111 * 15 + 22 * 75 + 333 * 1.5 + 44 * 18.75) / 1e6 = 19639.5 / 1e6
# others: (778 * 15 + 22 * 75 + 333 * 1.5) / 1e6 = 13819.5 / 1e6
HAND_USD = {"claude": 0.0196395, "codex": 0.0138195, "gemini": 0.0138195}
SOURCE = {"claude": "Claude Code transcript", "codex": "Codex rollout",
          "gemini": "Gemini CLI chat"}  # fmt: skip


def priced_usd(state_dir: Path) -> float:
    """What the history would show as the cost of the usage recorded so far: exported
    to segments, summed per hour and agent, and priced from PRICES."""
    import pyarrow.parquet as pq

    paths = HistoryPaths(state_dir)
    export_segments(Registry.open(state_dir).bus, paths)
    facts = [Fact(*row.values()) for s in list_segments(paths)
             for row in pq.read_table(s.path).to_pylist()]  # fmt: skip
    rows = [UsageRow(**row) for row in aggregate_facts(facts).usage]
    return price_usage(rows, PriceTable(parse_prices(PRICES))).usd


def wait_for_turns(orch: Orchestrator, model: object, job_id: str, more_than: int) -> None:
    """Wait (deadline) until the model has been asked for more than ``more_than`` turns."""
    deadline = time.monotonic() + 60
    while len(model.requests_of("turn")) <= more_than:  # type: ignore[attr-defined]
        pane = orch.pane_for_job(job_id)
        screen = "\n".join(orch.driver.capture(pane, 40)) if pane else "(no pane)"
        assert time.monotonic() < deadline, f"the agent never asked its model:\n{screen}"
        time.sleep(0.2)


@pytest.mark.slow  # 13-30 s each at load ~16 on 2 cores (the turn, then the idle grace)
@pytest.mark.parametrize("name", sorted(RECORDED))
def test_usage_is_synced_from_the_transcript_a_real_cli_just_wrote(
    name: str, orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """The CLI answers one turn from a model that reports TURN_USAGE; `history build`'s
    sync then finds the transcript it wrote (by the session id it told) and records
    that turn's tokens once, which the history prices to a hand-worked figure."""
    agent = AGENTS[name]
    require(name)
    workdir = tmp_path / "work-usage"
    workdir.mkdir()
    model = serve_model(agent.api(), Script([Reply("Counted.", usage=TURN_USAGE)]))
    run = agent.sandbox(tmp_path / name, workdir, model.base_url)
    job = orch.submit("say counted", name, f"{name}-usage", agent_cmd=run.argv,
                      env=run.env, workdir=workdir)  # fmt: skip
    supervise_until(orch, job.job_id, lambda j: j.activity == Activity.IDLE and
                    j.agent_session_id and orch.registry.has_worked(j.job_id),
                    "its turn to end, and its session id")  # fmt: skip
    assert len(model.requests_of("turn")) == 1

    state_dir = orch.settings.state_dir
    # a CLI may write the turn into its transcript after its screen goes idle (seen
    # with Claude: a sync at once found the transcript without it): sync until it is
    found = poll_until(lambda: sync_usage(orch.registry, state_dir, run.env).recorded, 30,
                       "the turn in the transcript")  # fmt: skip
    assert found == 1
    recorded = [m.payload for m in orch.registry.bus.read_after(0)
                if m.type == MessageType.JOB_USAGE]  # fmt: skip
    assert all(p["job_id"] == job.job_id and p["measured"] for p in recorded), recorded
    assert {p["source"] for p in recorded} == {SOURCE[name]}
    # the turn's message, once (no side request is written into a transcript)
    assert [(p["input_tokens"], p["output_tokens"], p["cache_read_tokens"],
             p["cache_write_tokens"]) for p in recorded] == [RECORDED[name]]  # fmt: skip
    assert priced_usd(state_dir) == pytest.approx(HAND_USD[name])
    (state_dir / "history" / "usage-sync.json").unlink()  # read again: nothing new
    assert sync_usage(orch.registry, state_dir, run.env).recorded == 0
    orch.cancel(job.job_id, grace_sec=2)


@pytest.mark.slow  # Aider starts in 4-11 s, twice here
def test_after_tmux_is_killed_aider_resumes_with_its_chat_history(
    orch: Orchestrator, serve_model: ServeModel, tmp_path: Path
) -> None:
    """A reboot, simulated by killing the tmux server under an idle Aider: resuming
    starts Aider with --restore-chat-history on the job's own history file, and its
    next request carries the earlier conversation (the task) plus the follow-up."""
    agent = AGENTS["aider"]
    require("aider")
    workdir = tmp_path / "work-aider-resume"
    workdir.mkdir()
    model = serve_model(agent.api(), Script([Reply("First part done.")]))
    run = agent.sandbox(tmp_path / "aider", workdir, model.base_url)
    import subprocess

    subprocess.run(["git", "init", "-q", str(workdir)], env=run.env, check=True)
    job = orch.submit("remember the word PELICAN", "aider", "aider-r", agent_cmd=run.argv,
                      env=run.env, workdir=workdir)  # fmt: skip
    supervise_until(orch, job.job_id, lambda j: j.activity == Activity.IDLE and
                    orch.registry.has_worked(j.job_id), "its first turn to end")  # fmt: skip
    history = orch.job_dir(job.job_id) / "aider.chat.history.md"
    assert "PELICAN" in history.read_text(encoding="utf-8")
    turns_before = len(model.requests_of("turn"))
    orch.driver.server.cmd("kill-server")
    supervise_until(orch, job.job_id, lambda j: j.activity == Activity.INTERRUPTED,
                    "interrupted")  # fmt: skip
    resumed = orch.resume_interrupted(env=run.env)
    assert [j.job_id for j in resumed] == [job.job_id]
    wait_for_turns(orch, model, job.job_id, turns_before)
    latest = json.dumps(model.requests_of("turn")[-1].body)
    # the task and the model's own reply come from the restored history alone: the
    # follow-up pasted at the resume names neither
    assert "PELICAN" in latest and "First part done." in latest, latest
    assert "Continue the task" in latest
    orch.cancel(job.job_id, grace_sec=2)
