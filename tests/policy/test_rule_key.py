"""The policy in the control room, driven with Pilot: the inbox says which rule would
apply to a question left to the person, and `A` (main table and inbox) makes a rule
from a waiting job's question after a dialog that shows its text; confirmed, the
rule is in the policy file and the inbox reads it at once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Button

from app.policy.decide import Question, decide
from app.policy.rules import load_policy
from app.tui.app import ControlRoomApp
from app.tui.screens.inbox import InboxScreen
from app.tui.screens.main import MainScreen
from app.tui.screens.rule_confirm import RuleConfirmScreen
from registry.vocabulary import PolicyDecision
from tests.tui.fake_source import FakeSource, fixed_clock
from tests.tui.test_snapshots import after
from tests.tui.tui_helpers import loaded, notices, select, wait_until

WAITING = "7b0e99a1"  # the demo data's codex job, waiting at startup
SIZE = (120, 40)
RULES = '[[rule]]\nname = "tests"\ntool = "shell"\ncommand = "npm test*"\ndecision = "allow"\n'
Snap = Callable[..., bool]


def asking(fake: FakeSource, command: str, tool: str = "Shell") -> None:
    """The waiting job asks to run ``command`` (as a screen rule reads a dialog)."""
    job = fake.jobs[WAITING]
    fake.jobs[WAITING] = replace(
        job,
        question=f"{tool} `{command}`",
        asked=(("tool", tool), ("command", command), ("seen by", "screen rule")),
    )


def room(fake: FakeSource, state_dir: Path) -> ControlRoomApp:
    app = ControlRoomApp(fake, clock=fixed_clock, poll_interval_s=0.05, age_refresh_s=3600)
    app.use_policy(state_dir, {})
    return app


@pytest.fixture
def fake() -> FakeSource:
    return FakeSource.seeded()


async def test_the_inbox_says_which_rule_would_apply(fake: FakeSource, tmp_path: Path) -> None:
    (tmp_path / "policy.toml").write_text(RULES, encoding="utf-8")
    asking(fake, "npm test && rm -rf build/")
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        assert isinstance(app.screen, InboxScreen)
        box = app.screen.query_one("#asked")
        want = "policy: rule 'tests' would allow `npm test` but `rm -rf build/` asks (no rule"
        await wait_until(pilot, lambda: want in str(box.render()), "the policy line")


async def test_a_on_the_main_table_adds_the_rule_shown(fake: FakeSource, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(RULES, encoding="utf-8")
    asking(fake, "rm -rf build/")
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WAITING)
        await pilot.press("A")
        await wait_until(pilot, lambda: isinstance(app.screen, RuleConfirmScreen), "the dialog")
        shown = str(app.screen.query_one("#question").render())
        assert 'command = "rm -rf build/"' in shown and 'agent = "codex"' in shown
        assert str(policy) in shown
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        assert any("Rule 'allow-rm-rf-build' added" in line for line in notices(app))
        rules = load_policy(policy).policy
        assert rules is not None and [rule.name for rule in rules.rules] == [
            "tests",
            "allow-rm-rf-build",
        ]
        question = Question("codex", "Shell", command="rm -rf build/", workdir=tmp_path)
        assert decide(rules, question).decision is PolicyDecision.ALLOW
        await pilot.press("w")  # the inbox reads the new rule at once
        box = app.screen.query_one("#asked")
        want = "rule 'allow-rm-rf-build' would allow `rm -rf build/`"
        await wait_until(pilot, lambda: want in str(box.render()), "the new rule's line")


async def test_a_in_the_inbox_cancelled_adds_nothing(fake: FakeSource, tmp_path: Path) -> None:
    asking(fake, "make lint")
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w", "A")
        await wait_until(pilot, lambda: isinstance(app.screen, RuleConfirmScreen), "the dialog")
        assert app.screen.focused is app.screen.query_one("#cancel", Button)
        await pilot.press("enter")  # enter on the default focus: Cancel
        await wait_until(pilot, lambda: isinstance(app.screen, InboxScreen), "the inbox")
        assert not (tmp_path / "policy.toml").exists()


async def test_a_leaves_a_broken_policy_file_as_it_is(fake: FakeSource, tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_bytes(b"[[rule]\n")
    asking(fake, "make lint")
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WAITING)
        await pilot.press("A")
        said = f"No rule for job {WAITING}: the policy is broken, so it is left as it is"
        await wait_until(pilot, lambda: any(said in line for line in notices(app)), "refusal")
        assert isinstance(app.screen, MainScreen)
        assert policy.read_bytes() == b"[[rule]\n"


@pytest.mark.parametrize(
    ("command", "said"),
    [("npm test; rm -rf ~", "runs 2 commands"), ("cat $(ls)", "a command substitution")],
)
async def test_a_makes_no_rule_a_rule_cannot_hold(
    fake: FakeSource, tmp_path: Path, command: str, said: str
) -> None:
    asking(fake, command)
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WAITING)
        await pilot.press("A")
        await wait_until(pilot, lambda: any(said in line for line in notices(app)), "refusal")
        assert isinstance(app.screen, MainScreen)
        assert not (tmp_path / "policy.toml").exists()


async def test_a_with_nobody_waiting_refuses(fake: FakeSource, tmp_path: Path) -> None:
    fake.emit(WAITING, "progress", "moving on")
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await wait_until(pilot, lambda: not app.waiting_rows, "nobody waiting")
        await pilot.press("A")
        said = "No job is waiting for an answer"
        await wait_until(pilot, lambda: said in notices(app), "the refusal")


def test_the_rule_dialog(snap_compare: Snap, fake: FakeSource) -> None:
    """`A` on the waiting job: the rule's TOML text and where it goes, Cancel focused."""
    asking(fake, 'pytest -k "not slow" tests/')
    app = room(fake, Path("/srv/orchestrate-state"))
    assert snap_compare(app, terminal_size=SIZE, run_before=after("w", "A"))


@pytest.mark.parametrize(
    "command",
    ["rm -rf '[@click=app.quit]x[/]'", 'echo "[bold red]hi[/] \\" \\\\ done"', "touch ñ€"],
)
async def test_hostile_text_stays_text_and_reads_back(
    fake: FakeSource, tmp_path: Path, command: str
) -> None:
    """A command is the agent's text: the inbox line and the dialog show it as written
    (no markup runs), and the rule written reads back as exactly that command."""
    asking(fake, command)
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        select(app, WAITING)
        await pilot.press("A")
        await wait_until(pilot, lambda: isinstance(app.screen, RuleConfirmScreen), "the dialog")
        await pilot.click("#confirm")
        await wait_until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        assert app.is_running  # a [@click=app.quit] drawn as markup would have quit
        rules = load_policy(tmp_path / "policy.toml").policy
        assert rules is not None
        question = Question("codex", "Shell", command=command, workdir=tmp_path)
        assert decide(rules, question).decision is PolicyDecision.ALLOW
        await pilot.press("w")
        box = app.screen.query_one("#asked")
        await wait_until(pilot, lambda: "would allow" in str(box.render()), "the new rule")


async def test_the_inbox_says_how_folder_trust_is_decided(fake: FakeSource, tmp_path: Path) -> None:
    job = fake.jobs[WAITING]
    question = "Do you trust the files in this folder?"
    fake.jobs[WAITING] = replace(job, question=question, asked=(("question", question),))
    app = room(fake, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("w")
        box = app.screen.query_one("#asked")
        want = 'policy: folder trust: only a tool = "trust" rule answers it'
        await wait_until(pilot, lambda: want in str(box.render()), "the trust line")
