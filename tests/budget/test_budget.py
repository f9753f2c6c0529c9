"""Budgets: the arithmetic and parsing (dollars in, micro-dollars kept, the lines that
say them), the table on a real state.db (an older one gains it), the watch reading a
real Claude Code transcript against a budget, the pause and the resume on screens
each agent really shows, and the CLI's bad inputs."""

from __future__ import annotations

import math
import shutil
import sqlite3
import tomllib
from pathlib import Path

import pytest

from app.usage.budget import (
    BudgetFileError,
    BudgetWatch,
    load_day_budgets,
    parse_day_budgets,
    pause,
    raise_budget,
    spend_of,
)
from app.usage.budget_resume import budget_why
from app.usage.transcripts import claude_usage
from registry.activity import Observation
from registry.budget import (
    MAX_BUDGET_USD,
    BudgetStore,
    JobBudget,
    Spend,
    check_budget_usd,
    day_start_ms,
    reached_line,
    usd,
)
from registry.errors import InvalidJobInput
from registry.history.prices import PriceTable, parse_prices
from registry.jobs import Registry
from registry.needs_you import Signal, watched
from registry.records import Job
from registry.usage import ModelUsage
from registry.waiting_count import read_waiting_count
from tests.conftest import run_cli

FIXTURES = Path(__file__).parents[1] / "fixtures"
CACHED = FIXTURES / "usage" / "claude-cached-transcript.jsonl"
SESSION = "50108bfd-7946-40a9-a478-290301a8eb9d"  # the fixture's own session id
HAND_MICRO = 105_741  # tests/history/test_usage.py works it out by hand at Opus prices
OPUS = PriceTable(parse_prices({"price": [{"model": "*opus*", "input": 15, "output": 75,
                                          "cache_read": 1.5, "cache_write": 18.75}]}))  # fmt: skip
WORKING = ["", "✻ Thinking… (3s · esc to interrupt)", "", "> "]
DIALOG = ["Bash command", "  touch x", "Do you want to proceed?", "\u276f 1. Yes", "  2. No"]
IDLE = ["", "> ", "  ? for shortcuts"]


@pytest.mark.parametrize(
    ("given", "micro"),
    [("0.5", 500_000), ("$2", 2_000_000), (" 1.25 ", 1_250_000), (3, 3_000_000),
     (MAX_BUDGET_USD, 10_000_000_000), ("0.000001", 1)],
)  # fmt: skip
def test_a_budget_is_kept_in_micro_dollars(given: object, micro: int) -> None:
    assert check_budget_usd(given) == micro


@pytest.mark.parametrize(
    "given",
    ["", "abc", "-1", "0", "nan", "inf", "-inf", "1e9", "10000.01", "0.0000001", True, None,
     math.nan, [1]],
)  # fmt: skip
def test_a_budget_that_is_not_a_sane_amount_is_one_line(given: object) -> None:
    with pytest.raises(InvalidJobInput) as caught:
        check_budget_usd(given)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("--budget-usd ")


def test_amounts_read_as_dollars_and_cents() -> None:
    assert [usd(0), usd(500_000), usd(530_001), usd(1_234_560_000), usd(42)] == [
        "$0.00", "$0.50", "$0.53", "$1,234.56", "$0.0000",
    ]  # fmt: skip
    assert reached_line(500_000, 530_000) == "budget $0.50 reached ($0.53 spent)"
    assert reached_line(5_000_000, 5_020_000, day_of="claude") == (
        "claude's day budget $5.00 reached ($5.02 spent today)"
    )


def test_a_budget_is_crossed_at_its_edge_not_before() -> None:
    def budget(spent: int | None, cap: int | None = 500_000) -> JobBudget:
        return JobBudget("j", cap, False, None if spent is None else Spend(spent), None)

    assert not budget(None).crossed() and not budget(499_999).crossed()
    assert budget(500_000).crossed() and budget(500_001).crossed()
    assert not budget(9_000_000, None).crossed()  # no budget of its own
    assert budget(120_000).line() == "$0.12 spent (estimated) of $0.50"
    assert budget(None).line() == "nothing read yet of $0.50"
    measured = JobBudget("j", 500_000, False, Spend(120_000, measured=True), None)
    assert measured.line() == "$0.12 spent of $0.50"


def test_a_day_is_the_utc_day() -> None:
    noon = 1_764_331_200_000  # 2025-11-28 12:00:00 UTC
    assert day_start_ms(noon) == noon - 12 * 3_600_000
    assert day_start_ms(noon - 12 * 3_600_000) == noon - 12 * 3_600_000


def test_the_spend_is_the_transcripts_own_cost_when_it_has_one() -> None:
    usages = claude_usage(CACHED.read_text(encoding="utf-8").splitlines())
    assert spend_of("claude", usages, OPUS) == Spend(HAND_MICRO, measured=False)
    own = [ModelUsage("a", None, "claude-opus-4", output_tokens=10**6, cost_micro_usd=12_345)]
    assert spend_of("claude", own, OPUS) == Spend(12_345, measured=True)  # not $75
    unknown = [ModelUsage("b", None, "mystery", input_tokens=70)]
    assert spend_of("claude", unknown, OPUS) == Spend(0, measured=False, unpriced_tokens=70)


def test_claude_lines_with_a_cost_figure_carry_it() -> None:
    line = ('{"type":"assistant","costUSD":0.0123,"message":{"id":"m1","model":"x",'
            '"usage":{"input_tokens":5,"output_tokens":7}}}')  # fmt: skip
    assert claude_usage([line])[0].cost_micro_usd == 12_300
    for bad in ('"costUSD":-1,', '"costUSD":"0.5",', '"costUSD":true,', '"costUSD":1e300,'):
        assert claude_usage([line.replace('"costUSD":0.0123,', bad)])[0].cost_micro_usd is None


def test_day_budgets_from_the_policy_file(state_dir: Path) -> None:
    assert parse_day_budgets({"budget": {"claude": 5, "codex": 0.25}}) == {
        "claude": 5_000_000, "codex": 250_000,
    }  # fmt: skip
    assert parse_day_budgets({"rule": []}) == {}
    for bad in ({"budget": 5}, {"budget": {"nobody": 1}}, {"budget": {"claude": "5"}},
                {"budget": {"claude": 0}}, {"budget": {"claude": -2}},
                {"budget": {"claude": math.inf}}, {"budget": {"claude": True}},
                {"budget": {"claude": 10**6}}):  # fmt: skip
        with pytest.raises(BudgetFileError):
            parse_day_budgets(bad)
    assert load_day_budgets(state_dir, {}) == {}  # no policy file: no day budget
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "policy.toml").write_text("[budget]\nclaude = 5.0\n")
    assert load_day_budgets(state_dir, {}) == {"claude": 5_000_000}
    (state_dir / "policy.toml").write_text("[budget\n")
    with pytest.raises(BudgetFileError, match="not TOML"):
        load_day_budgets(state_dir, {})


def test_an_older_state_db_gains_the_table_and_keeps_its_jobs(state_dir: Path) -> None:
    registry = Registry.open(state_dir)
    job = registry.register("p", "claude", "s")
    registry.db.conn.execute("DROP TABLE IF EXISTS job_budgets")
    registry.db.conn.execute("DELETE FROM meta WHERE key = 'budgets_schema_version'")
    store = BudgetStore(registry.bus)  # an older release's state.db: migrated on first use
    assert store.get(job.job_id) is None
    store.set_budget(job.job_id, 500_000)
    store.record_spend(job.job_id, Spend(120_000))
    store.set_budget(job.job_id, 900_000, waive_day=True)
    store.set_budget(job.job_id, 950_000)  # a waiver stays
    got = store.get(job.job_id)
    assert got == JobBudget(
        job.job_id, 950_000, True, Spend(120_000), got.spent_at_ms if got else 0
    )
    assert registry.get(job.job_id).prompt == "p"
    with pytest.raises(InvalidJobInput):
        store.set_budget("no-such-job", 1)
    with pytest.raises(InvalidJobInput):
        store.set_budget(job.job_id, 0)
    version = sqlite3.connect(state_dir / "state.db").execute(
        "SELECT value FROM meta WHERE key = 'budgets_schema_version'"
    )
    assert version.fetchone() == ("1",)


def running_claude(registry: Registry, config: Path) -> Job:
    """A running Claude job whose transcript is the fixture, where Claude writes it."""
    job = registry.register("p", "claude", "s")
    registry.set_agent_session_id(job.job_id, SESSION)
    registry.set_status(job.job_id, "running", "test")
    target = config / "projects" / "-work" / f"{SESSION}.jsonl"
    target.parent.mkdir(parents=True)
    shutil.copy(CACHED, target)
    return registry.get(job.job_id)


def opus_prices(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "prices.toml").write_text(
        '[[price]]\nmodel = "*opus*"\ninput = 15\noutput = 75\ncache_read = 1.5\n'
        "cache_write = 18.75\n"
    )


def test_the_watch_reads_the_transcript_and_finds_the_job_past_its_budget(
    state_dir: Path, tmp_path: Path
) -> None:
    opus_prices(state_dir)
    registry = Registry.open(state_dir)
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    job = running_claude(registry, tmp_path / "claude")
    other = registry.register("q", "claude", "s2")  # no budget: never read
    watch = BudgetWatch(registry, state_dir, env)
    assert watch.check([job, registry.get(other.job_id)]) == []  # no budget at all
    store = BudgetStore(registry.bus)
    store.set_budget(job.job_id, 200_000)
    assert watch.check([job]) == []  # $0.105741 of $0.20
    assert store.get(job.job_id).spent == Spend(HAND_MICRO)  # type: ignore[union-attr]
    assert budget_why(registry, job.job_id) == "budget: $0.11 spent (estimated) of $0.20"
    store.set_budget(job.job_id, 100_000)
    crossed = watch.check([job])
    assert [(c.job.job_id, c.why) for c in crossed] == [
        (job.job_id, "budget $0.10 reached ($0.11 spent)")
    ]
    recorded = [m for m in registry.bus.read_after(0) if m.type == "job.usage"]
    assert len(recorded) == 3  # the three model messages, recorded once for the history


def test_a_day_budget_sums_the_agents_jobs_of_the_day(state_dir: Path, tmp_path: Path) -> None:
    opus_prices(state_dir)
    (state_dir / "policy.toml").write_text("[budget]\nclaude = 0.15\n")
    registry = Registry.open(state_dir)
    job = running_claude(registry, tmp_path / "claude")
    store = BudgetStore(registry.bus)
    earlier = registry.register("q", "claude", "s2")
    store.record_spend(earlier.job_id, Spend(50_000))  # its spend, read before
    watch = BudgetWatch(registry, state_dir, {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")})
    crossed = watch.check([job])
    assert [c.why for c in crossed] == ["claude's day budget $0.15 reached ($0.16 spent today)"]
    store.set_budget(job.job_id, 1_000_000, waive_day=True)  # a person raised it past the day's
    assert watch.check([registry.get(job.job_id)]) == []
    (state_dir / "policy.toml").write_text("[budget]\nclaude = 'lots'\n")
    assert watch.check([registry.get(job.job_id)]) == []
    assert watch.problem is not None and "claude" in watch.problem


def paused_job(state_dir: Path, screen: list[str]) -> tuple[Registry, Job, list[tuple[str, ...]]]:
    registry = Registry.open(state_dir)
    job = registry.register("p", "claude", "s")
    registry.set_status(job.job_id, "running", "test")
    registry.observe(job.job_id, Observation("working", "hook:claude:PreToolUse"))
    sent: list[tuple[str, ...]] = []
    said = pause(registry, state_dir, registry.get(job.job_id), "budget $0.50 reached ($0.53 "
                 "spent)", lambda: screen, sent.append)  # fmt: skip
    assert said.startswith("paused (budget $0.50 reached")
    return registry, registry.get(job.job_id), sent


def test_a_pause_interrupts_only_a_turn_its_screen_shows_working(state_dir: Path) -> None:
    registry, job, sent = paused_job(state_dir, WORKING)
    assert sent == [("Escape",)]  # Claude Code's interrupt, read on a working screen
    assert (job.activity, job.activity_source) == ("paused", "budget:claude")
    assert job.needs_person and not job.waiting
    assert read_waiting_count(registry.db.conn) == 1
    # the idle prompt the interrupt leaves, a hook, a screen: none lifts the pause
    for seen in (Observation("idle", "hook:claude:Stop"), Observation("idle", "screen:claude.idle"),
                 Observation("working", "osc:claude")):  # fmt: skip
        registry.observe(job.job_id, seen)
        assert registry.get(job.job_id).activity == "paused"
    registry.observe(job.job_id, Observation("exited", "process"))  # its agent gone: that counts
    assert registry.get(job.job_id).activity == "exited"


@pytest.mark.parametrize("screen", [DIALOG, IDLE, []], ids=["dialog", "idle", "blank"])
def test_a_pause_sends_no_key_on_any_other_screen(state_dir: Path, screen: list[str]) -> None:
    _registry, job, sent = paused_job(state_dir, screen)
    assert sent == [] and job.activity == "paused"


def test_resume_needs_more_than_the_spend_and_tells_an_idle_agent_to_go_on(
    state_dir: Path,
) -> None:
    registry, job, _sent = paused_job(state_dir, WORKING)
    BudgetStore(registry.bus).record_spend(job.job_id, Spend(530_000))
    told: list[str] = []
    with pytest.raises(InvalidJobInput, match=r"\$0.53 job .* already spent"):
        raise_budget(registry, state_dir, job.job_id, 530_000, lambda: IDLE, told.append)
    assert registry.get(job.job_id).activity == "paused" and told == []
    said = raise_budget(registry, state_dir, job.job_id, 1_000_000, lambda: DIALOG, told.append)
    assert "asks a question" in said and told == []  # Enter on a dialog would answer it
    assert registry.get(job.job_id).activity == "waiting"


def test_resume_lifts_the_pause_at_the_prompt(state_dir: Path) -> None:
    registry, job, _sent = paused_job(state_dir, WORKING)
    told: list[str] = []
    said = raise_budget(registry, state_dir, job.job_id, 1_000_000, lambda: IDLE, told.append)
    assert said.endswith("told to go on") and len(told) == 1
    assert registry.get(job.job_id).activity == "working"
    assert BudgetStore(registry.bus).get(job.job_id).day_waived  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["-1", "0", "nan", "1e9", "abc"])
def test_the_cli_refuses_a_bad_budget_in_one_line(state_dir: Path, bad: str) -> None:
    for args in (["submit", "--no-wait", "--agent", "demo", "--agent-session", "s",
                  "--prompt", "hi", "--budget-usd", bad],
                 ["job", "resume", "--job", "x", "--budget-usd", bad]):  # fmt: skip
        result = run_cli(*args, state_dir=state_dir)
        assert result.returncode != 0
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "--budget-usd" in result.stderr
    assert not (state_dir / "state.db").exists() or not Registry.open(state_dir).list()


def test_resume_with_a_budget_needs_one_job(state_dir: Path) -> None:
    result = run_cli("job", "resume", "--all-interrupted", "--budget-usd", "2", state_dir=state_dir)
    assert result.returncode != 0 and "--job ID" in result.stderr


def test_a_paused_job_signals_that_it_needs_you(state_dir: Path) -> None:
    _registry, job, _sent = paused_job(state_dir, WORKING)
    signal = Signal("needs_you", watched(job))
    assert signal.text.endswith("needs you: budget $0.50 reached ($0.53 spent)"), signal.text


def test_the_readmes_budget_table_is_what_it_says() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("#### Budgets", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    assert parse_day_budgets(tomllib.loads(block)) == {"claude": 5_000_000, "codex": 2_500_000}
    assert '"paused: budget $0.50 reached ($0.53 spent)"' in section
    assert reached_line(500_000, 530_000) in section


def test_submit_says_when_the_day_budgets_are_not_applied(state_dir: Path) -> None:
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "policy.toml").write_text('[budget]\nclaude = "lots"\n')
    # an agent with no command: refused after the warnings, before any tmux
    result = run_cli("submit", "--no-wait", "--agent", "nope", "--agent-session", "s",
                     "--prompt", "hi", state_dir=state_dir)  # fmt: skip
    assert result.returncode != 0
    assert "day budgets not applied: [budget]: claude must be a number" in result.stderr


def test_one_pass_reads_every_job_under_a_budget(state_dir: Path, tmp_path: Path) -> None:
    opus_prices(state_dir)
    registry = Registry.open(state_dir)
    config = tmp_path / "claude"
    first = running_claude(registry, config)
    second = registry.register("p", "claude", "s2")
    other_session = "60108bfd-7946-40a9-a478-290301a8eb9d"
    registry.set_agent_session_id(second.job_id, other_session)
    registry.set_status(second.job_id, "running", "test")
    shutil.copy(CACHED, config / "projects" / "-work" / f"{other_session}.jsonl")
    store = BudgetStore(registry.bus)
    for job in (first, second):
        store.set_budget(job.job_id, 100_000)
    watch = BudgetWatch(registry, state_dir, {"CLAUDE_CONFIG_DIR": str(config)})
    crossed = watch.check([first, registry.get(second.job_id)])
    assert sorted(c.job.job_id for c in crossed) == sorted([first.job_id, second.job_id])


def test_a_second_pass_that_finds_it_past_its_budget_sends_no_second_key(
    state_dir: Path,
) -> None:
    registry, job, sent = paused_job(state_dir, WORKING)
    again: list[tuple[str, ...]] = []
    said = pause(registry, state_dir, job, "budget $0.50 reached ($0.61 spent)",
                 lambda: WORKING, again.append)  # fmt: skip
    assert again == [] and said.startswith("not paused again")  # Escape twice opens a menu
    assert sent == [("Escape",)]
    assert (registry.get(job.job_id).activity_data or {})["question"].endswith("($0.53 spent)")
