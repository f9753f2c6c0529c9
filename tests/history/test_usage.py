"""Tokens and cost: each agent's transcript read as the CLI writes it (fixtures from the
real CLIs), found only where the CLI writes it, recorded once, summed per hour and
priced from the user's table, against sums worked out by hand."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from app.usage.locate import find_transcript
from app.usage.sync import sync_usage
from app.usage.transcripts import aider_usage, claude_usage, codex_usage, gemini_usage
from registry.history.aggregate_py import aggregate_facts
from registry.history.facts import Fact
from registry.history.prices import (
    BadPrices,
    PriceTable,
    load_prices,
    parse_prices,
    price_usage,
    prices_path,
)
from registry.history.reader import UsageRow
from registry.history.schema import HistoryPaths
from registry.history.segments import export_segments, list_segments
from registry.jobs import Registry
from registry.usage import ModelUsage, record_usage

FIXTURES = Path(__file__).parents[1] / "fixtures"
AGENTS = FIXTURES / "agents"
CACHED = FIXTURES / "usage" / "claude-cached-transcript.jsonl"
SESSION = "50108bfd-7946-40a9-a478-290301a8eb9d"  # the fixture's own session id
# Worked out by hand from the fixture (three messages, the first on two lines):
# input 1200 + 1300 + 900, output 35 + 5 + 6, cache read 0 + 3248 + 4096,
# cache write 2048 + 0 + 100; at $15 / $75 / $1.50 / $18.75 per million tokens:
# (3400*15 + 46*75 + 7344*1.5 + 2148*18.75) / 1e6 = 105741 / 1e6 dollars.
HAND_TOKENS = {"input": 3400, "output": 46, "cache_read": 7344, "cache_write": 2148}
HAND_USD = 0.105741
OPUS = {"price": [{"agent": "claude", "model": "claude-opus-*", "input": 15, "output": 75,
                   "cache_read": 1.5, "cache_write": 18.75}]}  # fmt: skip


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


def totals(usages: list[ModelUsage]) -> dict[str, int]:
    return {
        "input": sum(u.input_tokens for u in usages),
        "output": sum(u.output_tokens for u in usages),
        "cache_read": sum(u.cache_read_tokens for u in usages),
        "cache_write": sum(u.cache_write_tokens for u in usages),
    }


def test_claude_counts_each_message_once() -> None:
    """The real transcript writes its first message twice (same id, same usage)."""
    usages = claude_usage(lines(AGENTS / "claude" / "transcript-sample.jsonl"))
    assert len(usages) == 3 and {u.model for u in usages} == {"claude-opus-4-8"}
    assert totals(usages) == {"input": 3400, "output": 46, "cache_read": 0, "cache_write": 0}
    assert all(u.measured and u.at_ms for u in usages)
    assert totals(claude_usage(lines(CACHED))) == HAND_TOKENS


def test_codex_gemini_and_aider_transcripts() -> None:
    """Codex by response id; Gemini once per message id though its chat file rewrites
    them; Aider's own rounded counts and cost estimates, marked estimated."""
    codex = codex_usage(lines(AGENTS / "codex" / "rollout_token_count_sample.jsonl"))
    assert [(u.input_tokens, u.output_tokens) for u in codex] == [(1200, 30)]
    gemini = gemini_usage(lines(AGENTS / "gemini" / "chat_session_sample.jsonl"))
    assert totals(gemini) == {"input": 2400, "output": 50, "cache_read": 0, "cache_write": 0}
    assert {u.model for u in gemini} == {"gemini-3.1-pro-preview"}
    aider = aider_usage(lines(AGENTS / "aider" / "sample.aider.chat.history.md"))
    assert [(u.input_tokens, u.output_tokens, u.cost_micro_usd) for u in aider] == [
        (777, 11, 800),
        (798, 3, 800),
        (825, 5, 840),
    ]
    assert not any(u.measured for u in aider) and aider[0].model == "openai/fake-model"


def test_aider_rounded_counts_and_a_cost_on_its_own_line() -> None:
    text = [
        "> Model: anthropic/claude-sonnet-4 with diff edit format\n",
        "> Tokens: 12k sent, 2.5k cache write, 1.1k cache hit, 245 received.\n",
        "> Cost: $0.05 message, $0.10 session.\n",
        "> Tokens: 3.0k sent, 12 received.\n",
    ]
    first, second = aider_usage(text)
    assert (first.input_tokens, first.cache_write_tokens, first.cache_read_tokens) == (
        12_000,
        2_500,
        1_100,
    )
    assert (first.output_tokens, first.cost_micro_usd) == (245, 50_000)
    assert (second.input_tokens, second.cost_micro_usd) == (3_000, None)


def test_costs_from_the_table_equal_the_hand_computed_sum() -> None:
    table = PriceTable(parse_prices(OPUS))
    usages = claude_usage(lines(CACHED))
    rows = [
        UsageRow(None, "claude", u.model, True, 1, u.input_tokens, u.output_tokens,  # type: ignore[arg-type]
                 u.cache_read_tokens, u.cache_write_tokens, None)
        for u in usages
    ]  # fmt: skip
    cost = price_usage(rows, table)
    assert cost.usd_from_table == pytest.approx(HAND_USD, abs=1e-12)
    assert (cost.tokens_measured, cost.tokens_estimated, cost.usd_from_agents) == (12938, 0, 0)
    unpriced = price_usage(rows, PriceTable(()))
    assert unpriced.usd == 0 and unpriced.unpriced_tokens == 12938
    assert unpriced.unpriced_models == {"claude/claude-opus-4-8"}


def test_the_price_table_is_written_on_first_use_and_checked(tmp_path: Path) -> None:
    """The documented default lands in the state dir once; an edit is read as is; a
    broken edit is one line naming the file."""
    table = load_prices(tmp_path)
    assert table.price_of("claude", "claude-opus-4-8") is not None
    text = prices_path(tmp_path).read_text()
    assert "ESTIMATE" in text and "[[price]]" in text
    prices_path(tmp_path).write_text('[[price]]\nmodel = "x"\ninput = 2\n')
    assert load_prices(tmp_path).price_of("any", "x") is not None
    for broken in ('[[price]]\ninput = "free"\n', "[[price]\n", '[[price]]\ncolour = "red"\n'):
        prices_path(tmp_path).write_text(broken)
        with pytest.raises(BadPrices) as failed:
            load_prices(tmp_path)
        assert str(prices_path(tmp_path)) in str(failed.value)
        assert "\n" not in str(failed.value)


@pytest.fixture
def claude_job(tmp_path: Path) -> tuple[Registry, str, dict[str, str]]:
    """A claude job that ran in a pane, its transcript where Claude Code writes it."""
    state_dir = tmp_path / "state"
    registry = Registry.open(state_dir)
    job = registry.register(prompt="p", agent="claude", agent_session="c1")
    registry.set_agent_session_id(job.job_id, SESSION)
    (state_dir / "logs" / job.job_id).mkdir(parents=True, exist_ok=True)
    config = tmp_path / "claude-config"
    target = config / "projects" / "-home-dev-lab-claude-work" / f"{SESSION}.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(CACHED, target)
    return registry, job.job_id, {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(config)}


def test_sync_records_each_message_once(claude_job: tuple[Registry, str, dict[str, str]]) -> None:
    """From the registry's own job to hourly usage rows: found under the CLI's config
    dir, recorded once (a second sync, and one that lost its cache, add nothing),
    exported to segments, summed and priced to the hand-computed figures."""
    registry, _job_id, env = claude_job
    state_dir = registry.db.state_dir
    first = sync_usage(registry, state_dir, env)
    assert (first.transcripts, first.recorded) == (1, 3)
    assert sync_usage(registry, state_dir, env).transcripts == 0  # unchanged: not read
    (state_dir / "history" / "usage-sync.json").unlink()
    assert sync_usage(registry, state_dir, env).recorded == 0  # read again, nothing new
    paths = HistoryPaths(state_dir)
    export_segments(registry.bus, paths)
    import pyarrow.parquet as pq

    facts = [Fact(*row.values()) for s in list_segments(paths)
             for row in pq.read_table(s.path).to_pylist()]  # fmt: skip
    (row,) = aggregate_facts(facts).usage
    assert (row["agent"], row["model"], row["measured"], row["messages"]) == (
        "claude",
        "claude-opus-4-8",
        True,
        3,
    )
    assert {k: row[f"{k}_tokens"] for k in HAND_TOKENS} == HAND_TOKENS
    usage_row = UsageRow(**{**row, "hour": row["hour"]})
    assert price_usage([usage_row], PriceTable(parse_prices(OPUS))).usd == pytest.approx(HAND_USD)


def test_usage_times_stay_within_the_jobs_life(
    claude_job: tuple[Registry, str, dict[str, str]],
) -> None:
    """A transcript time before the job existed or in the future is moved to the
    nearest moment the job lived."""
    registry, job_id, _env = claude_job
    job = registry.get(job_id)
    usages = [
        ModelUsage("early", 0, "m", input_tokens=1),
        ModelUsage("late", 10**13, "m", input_tokens=1),
        ModelUsage("unknown", None, "m", input_tokens=1),
    ]
    assert record_usage(registry, job_id, usages, "test") == 3
    times = [
        json.loads(row[0])["at_ms"]
        for row in registry.db.conn.execute(
            "SELECT payload FROM messages WHERE type = 'job.usage' ORDER BY seq"
        )
    ]
    assert times[0] == job.created_at_ms and job.created_at_ms < times[1] == times[2]


def test_transcripts_are_found_only_where_the_cli_writes_them(
    claude_job: tuple[Registry, str, dict[str, str]], tmp_path: Path
) -> None:
    """Not by a session id that is not one, not through a symlink leading out of the
    CLI's directory, not for an agent kind that keeps none."""
    registry, job_id, env = claude_job
    job_dir = registry.db.state_dir / "logs" / job_id
    found = find_transcript("claude-code", SESSION, job_dir, env)
    assert found is not None and found.path.name == f"{SESSION}.jsonl"
    assert find_transcript("claude", "../../*", job_dir, env) is None
    assert find_transcript("demo", SESSION, job_dir, env) is None
    assert find_transcript("my-own-agent", SESSION, job_dir, env) is None
    outside = tmp_path / "elsewhere.jsonl"
    shutil.copy(CACHED, outside)
    other = "0b0b0b0b-7946-40a9-a478-290301a8eb9d"
    link = Path(env["CLAUDE_CONFIG_DIR"]) / "projects" / "-x" / f"{other}.jsonl"
    link.parent.mkdir()
    os.symlink(outside, link)
    assert find_transcript("claude", other, job_dir, env) is None


def test_an_aider_job_is_priced_by_aider(tmp_path: Path) -> None:
    """Aider's chat history in the job's dir: its counts estimated, its cost its own."""
    state_dir = tmp_path / "state"
    registry = Registry.open(state_dir)
    job = registry.register(prompt="p", agent="aider", agent_session="a1")
    job_dir = state_dir / "logs" / job.job_id  # made by the audit log
    shutil.copy(
        AGENTS / "aider" / "sample.aider.chat.history.md", job_dir / "aider.chat.history.md"
    )
    assert sync_usage(registry, state_dir, {"HOME": str(tmp_path)}).recorded == 3
    paths = HistoryPaths(state_dir)
    export_segments(registry.bus, paths)
    import pyarrow.parquet as pq

    facts = [Fact(*row.values()) for s in list_segments(paths)
             for row in pq.read_table(s.path).to_pylist()]  # fmt: skip
    (row,) = aggregate_facts(facts).usage
    cost = price_usage([UsageRow(**row)], load_prices(state_dir))
    assert (cost.tokens_estimated, cost.tokens_measured) == (777 + 11 + 798 + 3 + 825 + 5, 0)
    assert cost.usd_from_agents == pytest.approx(0.00244) and cost.usd_from_table == 0


@pytest.mark.spark
@pytest.mark.slow  # a cold JVM in a child process: ~45 s here
def test_a_day_of_claude_from_the_registry_to_history_show(
    claude_job: tuple[Registry, str, dict[str, str]],
) -> None:
    """As a user: a Claude Code job ran (its activity and its transcript where Claude
    writes it), `orchestrate history build` alone syncs the tokens, exports the bus
    and builds; `history show` then says how long it waited and what it cost."""
    import subprocess
    import sys

    from registry.activity import Observation

    registry, job_id, env = claude_job
    state_dir = registry.db.state_dir
    registry.pick("c1")
    registry.observe(job_id, Observation("working", "hook:claude:UserPromptSubmit"))
    registry.observe(job_id, Observation("waiting", "hook:claude:PermissionRequest"))
    registry.observe(job_id, Observation("working", "hook:claude:PostToolUse"))
    registry.set_status(job_id, "completed")
    registry.db.close()
    run_env = {**os.environ, **env}
    base = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history"]
    small = ["--master", "local[1]", "--driver-memory", "512m", "--no-class-archive"]
    built = subprocess.run([*base, "build", *small], env=run_env, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    assert "history: usage: 3 new model messages from 1 agent transcript" in built.stderr
    shown = subprocess.run([*base, "show", "--json"], env=run_env, capture_output=True, text=True)
    snapshot = json.loads(shown.stdout)
    (row,) = snapshot["rows"]
    assert (row["agent"], row["jobs_completed"], row["asks"], row["answered"]) == (
        "claude",
        1,
        1,
        1,
    )
    (usage,) = snapshot["usage"]
    assert {k: usage[f"{k}_tokens"] for k in HAND_TOKENS} == HAND_TOKENS
    table = subprocess.run([*base, "show"], env=run_env, capture_output=True, text=True)
    assert "≈$0.11" in table.stdout  # the hand-computed $0.105741, at the default prices
