"""The Orchestrator is a thin facade: its callers (CLI, TUI, review, bench) keep
the names they had, and its parts act through one registry and one tmux driver."""

from __future__ import annotations

from pathlib import Path

from app.control import Orchestrator
from app.settings import Settings

PUBLIC = {
    "submit",
    "cancel",
    "stop_agent",
    "resume_job",
    "interrupted_jobs",
    "resume_interrupted",
    "pane_for_job",
    "panes_by_job",
    "check_job_pane",
    "answer",
    "send_input",
    "attach_argv",
    "attach_command",
    "create_session",
    "list_sessions",
    "reconcile_sessions",
    "stop_session",
    "resume_session",
    "tmux_running",
    "reconcile_output",
    "reconcile",
    "control_room_split",
    "job_dir",
    "pane_log",
}


def test_the_facade_keeps_every_public_method_its_callers_use() -> None:
    """Splitting the orchestrator into rooms must not rename what callers call."""
    missing = {name for name in PUBLIC if not callable(getattr(Orchestrator, name, None))}
    assert missing == set()


def test_jobs_sessions_and_panes_share_one_registry_and_one_driver(state_dir: Path) -> None:
    """A driver made for a submit is the driver a later cancel or session stop uses:
    the parts hold the orchestrator's one context, not copies of it."""
    orch = Orchestrator(Settings(state_dir=state_dir), tmux_socket="orch_facade_unused")
    parts = (orch.job_control, orch.session_control, orch.pane_control)
    assert all(part.context is orch.context for part in parts)
    assert orch.registry is orch.context.registry and orch.sessions is orch.context.sessions
    assert orch.driver is orch.job_control.context.driver is orch.pane_control.context.driver
    assert orch.pane_log("ab12cd34") == state_dir / "logs" / "ab12cd34" / "pane.log"
