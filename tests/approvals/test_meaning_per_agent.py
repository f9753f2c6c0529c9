"""Answers by meaning for each agent that draws selection lists (Claude, Codex,
Gemini), whole path, in real tmux: a job of that kind whose pane draws the agent's
own dialog (tests/approvals/selection_list.py, ``--as``). A list it knows is
answered (marker moved, checked, Enter, the list gone); a list in a language no
adapter knows gets no key at all, and the refusal names the options. Aider asks
inline, not in a list: an invented question of its kind is never typed into."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from app.approvals.dialog import read_dialog
from app.approvals.errors import NotWaitingForPermission, UnrecognisedDialog
from app.control import Orchestrator
from registry.records import Job

SCRIPT = Path(__file__).with_name("selection_list.py")
KNOWN = {
    "claude": (["No, exit", "Yes, I trust this folder"], "Yes, I trust this folder"),
    "codex": (
        [
            "Yes, proceed (y)",
            "Yes, and don't ask again for commands that start with `touch done.txt` (p)",
            "No, and tell Codex what to do differently (esc)",
        ],
        "No, and tell Codex what to do differently (esc)",
    ),
    "gemini": (
        ["Allow once", "Allow for this session", "No, suggest changes (esc)"],
        "No, suggest changes (esc)",
    ),
}
INVENTED = ["Ja, ausführen", "Ja, und nicht mehr fragen", "Nein, abbrechen"]


def waiting(orch: Orchestrator, job_id: str, timeout: float = 20.0) -> Job:
    """Supervision passes until the job waits (the screen rule saw the question)."""
    deadline = time.monotonic() + timeout
    while not (job := orch.registry.get(job_id)).waiting:
        assert time.monotonic() < deadline, "the dialog was never seen as a question"
        orch.reconcile()
        time.sleep(0.1)
    return job


def screen(orch: Orchestrator, job_id: str) -> list[str]:
    pane = orch.pane_for_job(job_id)
    assert pane is not None
    return orch.driver.capture(pane, 40)


@pytest.mark.parametrize("agent", sorted(KNOWN))
def test_a_list_in_a_language_no_adapter_knows_gets_no_key(
    agent: str, orch: Orchestrator, workdir: Path
) -> None:
    argv = [sys.executable, str(SCRIPT), "--as", agent, *INVENTED]
    job = orch.submit("hallo", agent, f"invented-{agent}", agent_cmd=argv, workdir=workdir)
    waiting(orch, job.job_id)
    with pytest.raises(UnrecognisedDialog) as refused:
        orch.answer(job.job_id, "yes")
    assert str(refused.value).startswith(
        "I don't recognise this dialog: options seen: "
        "'Ja, ausführen', 'Ja, und nicht mehr fragen', 'Nein, abbrechen'"
    )
    assert "\n" not in str(refused.value)
    time.sleep(0.3)  # a key sent would have been drawn by now
    dialog = read_dialog(screen(orch, job.job_id))
    assert dialog is not None and dialog.marked.text == "Ja, ausführen"
    assert orch.registry.get(job.job_id).waiting
    orch.cancel(job.job_id, grace_sec=1)


@pytest.mark.parametrize("agent", sorted(KNOWN))
def test_a_known_list_is_answered_by_meaning(agent: str, orch: Orchestrator, workdir: Path) -> None:
    options, chosen = KNOWN[agent]
    reply = "no" if agent != "claude" else "yes"
    argv = [sys.executable, str(SCRIPT), "--as", agent, *options]
    job = orch.submit("go", agent, f"known-{agent}", agent_cmd=argv, workdir=workdir)
    waiting(orch, job.job_id)
    answered = orch.answer(job.job_id, reply)
    assert answered.how.startswith("meaning: ") and answered.how.endswith(f"({chosen})")
    assert "Enter" in answered.how
    deadline = time.monotonic() + 5
    while f"chosen: {chosen}" not in "\n".join(screen(orch, job.job_id)):
        assert time.monotonic() < deadline, screen(orch, job.job_id)
        time.sleep(0.05)
    orch.cancel(job.job_id, grace_sec=1)


AIDER_INVENTED = (
    "import sys, time\n"
    "print('touch done.txt')\n"
    "print('Befehl ausführen? (J)a/(N)ein [Ja]: ', end='', flush=True)\n"
    "time.sleep(60)\n"
)


def test_an_aider_question_in_another_language_is_never_typed_into(
    orch: Orchestrator, workdir: Path
) -> None:
    """Aider's questions are read by its screen rules: one it cannot read is no
    question, so `answer` refuses and types nothing (its pane would take a bare
    Enter as yes)."""
    argv = [sys.executable, "-c", AIDER_INVENTED, "--"]
    job = orch.submit("hallo", "aider", "invented-aider", agent_cmd=argv, workdir=workdir)
    deadline = time.monotonic() + 10
    while "Befehl" not in "\n".join(screen(orch, job.job_id)):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    for _ in range(3):
        orch.reconcile()
        time.sleep(0.2)
    before = screen(orch, job.job_id)
    with pytest.raises(NotWaitingForPermission):
        orch.answer(job.job_id, "yes")
    time.sleep(0.3)
    assert screen(orch, job.job_id) == before
    orch.cancel(job.job_id, grace_sec=1)


def test_orchestrate_answer_refuses_in_one_line_and_offers_attach(
    orch: Orchestrator,
    workdir: Path,
    cli,
    tmux_socket: str,  # type: ignore[no-untyped-def]
) -> None:
    argv = [sys.executable, str(SCRIPT), "--as", "codex", *INVENTED]
    job = orch.submit("hallo", "codex", "invented-cli", agent_cmd=argv, workdir=workdir)
    waiting(orch, job.job_id)
    result = cli("answer", "--job", job.job_id, "yes", env={"ORCHESTRATE_TMUX_SOCKET": tmux_socket})
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "I don't recognise this dialog: options seen: 'Ja, ausführen'" in lines[0]
    assert lines[0].endswith(f"answer it yourself: orchestrate attach --job {job.job_id}")
    dialog = read_dialog(screen(orch, job.job_id))
    assert dialog is not None and dialog.marked.text == "Ja, ausführen"
    orch.cancel(job.job_id, grace_sec=1)
