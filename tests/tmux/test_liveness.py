"""Liveness: the pure classifier, and the sampler against real panes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from app.tmux.driver import TmuxDriver
from app.tmux.liveness import (
    LivenessSampler,
    PaneObservation,
    PaneState,
    classify,
    looks_like_permission_prompt,
)

WaitFor = Callable[..., object]


def seen(
    content: str = "a",
    at: float = 100.0,
    *,
    lines: tuple[str, ...] = ("working...",),
    exists: bool = True,
    dead: bool = False,
    status: int | None = None,
) -> PaneObservation:
    return PaneObservation("%1", exists, dead, status, content, lines, at)


def test_first_sample_and_changes_are_working() -> None:
    first = classify(seen("a", 100.0), None, idle_after=30)
    assert first.state is PaneState.WORKING and first.last_change_at == 100.0
    changed = classify(seen("b", 200.0), first, idle_after=30)
    assert changed.state is PaneState.WORKING and changed.last_change_at == 200.0


def test_unchanged_output_turns_idle_after_the_threshold() -> None:
    first = classify(seen("a", 100.0), None, idle_after=30)
    recent = classify(seen("a", 120.0), first, idle_after=30)
    assert recent.state is PaneState.WORKING and recent.last_change_at == 100.0
    stale = classify(seen("a", 131.0), recent, idle_after=30)
    assert stale.state is PaneState.IDLE and stale.last_change_at == 100.0


def test_prompt_on_screen_is_blocked_and_dead_beats_everything() -> None:
    prompt = ("step 1 done", "Allow edit of src/x.py? [y/n] ")
    blocked = classify(seen("a", 100.0, lines=prompt), None, idle_after=30)
    assert blocked.state is PaneState.BLOCKED
    assert blocked.prompt_line == "Allow edit of src/x.py? [y/n]"
    dead = classify(seen("a", 101.0, lines=prompt, dead=True, status=1), blocked, idle_after=30)
    assert dead.state is PaneState.DEAD and dead.dead_status == 1
    gone = classify(seen("", 102.0, exists=False), dead, idle_after=30)
    assert gone.state is PaneState.DEAD


def test_permission_prompt_shapes() -> None:
    assert looks_like_permission_prompt(["Continue? (Y/n)"])
    assert looks_like_permission_prompt(["Overwrite? [yes/no]:", "", ""])
    assert looks_like_permission_prompt(["Do you want to proceed?", "> 1. Yes", "  2. No"])
    assert looks_like_permission_prompt(["asked [y/n] earlier", "then kept working"]) is None
    assert looks_like_permission_prompt([]) is None


def test_sampler_sees_a_killed_pane_as_dead(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor
) -> None:
    """A pane killed under a running agent is reported dead on the next sample."""
    prompt = tmp_path / "p.txt"
    prompt.write_text("x")
    pane_id = driver.start_agent_pane(
        "live",
        "feed0001",
        ["sh", "-c", "echo ready; sleep 30"],
        {"ORCHESTRATE_HOME": str(tmp_path)},
        prompt,
        tmp_path / "pane.log",
    )
    wait_for(lambda: "ready" in driver.capture(pane_id, 5))
    clock = iter([1000.0, 1001.0, 1100.0, 1101.0]).__next__
    sampler = LivenessSampler(driver, idle_after=30, clock=clock)
    assert sampler.sample([pane_id])[pane_id].state is PaneState.WORKING
    assert sampler.sample([pane_id])[pane_id].state is PaneState.WORKING
    assert sampler.sample([pane_id])[pane_id].state is PaneState.IDLE
    driver.kill_pane(pane_id)
    result = sampler.sample([pane_id])[pane_id]
    assert result.state is PaneState.DEAD
    assert result.last_change_at == 1101.0  # disappearing is the last change


def test_sampler_sees_a_waiting_demo_agent_as_blocked(
    driver: TmuxDriver, tmp_path: Path, wait_for: WaitFor, publish_log: tuple[str, Path]
) -> None:
    prompt = tmp_path / "p.txt"
    prompt.write_text("x")
    argv = [sys.executable, "-m", "app.demo_agent", "--steps", "1", "--delay", "0"]
    argv += ["--ask-permission", "--publish-cmd", publish_log[0]]
    pane_id = driver.start_agent_pane(
        "live", "feed0002", argv, {"ORCHESTRATE_HOME": str(tmp_path)}, prompt, tmp_path / "l"
    )
    sampler = LivenessSampler(driver)
    wait_for(lambda: sampler.sample([pane_id])[pane_id].state is PaneState.BLOCKED)
