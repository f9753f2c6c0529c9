"""Answers by meaning in a real tmux pane: a small program draws a selection list
whose marker the arrow keys move (like Claude Code 2.1.332's trust dialog). The
driver moves the marker, sees it arrive, confirms, and sees the list go; for a
list it cannot read, or a marker that does not move, it confirms nothing."""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.approvals.dialog import read_dialog
from app.approvals.errors import UnrecognisedDialog
from app.approvals.selection import answer_by_meaning
from app.control import Orchestrator
from app.tmux.driver import TmuxDriver
from registry.vocabulary import Answer

SCRIPT = Path(__file__).with_name("selection_list.py")
TRUST = ["No, exit", "Yes, I trust this folder"]


def wait_for(what: str, holds: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not holds():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def show_list(tmux_socket: str) -> Iterator[Callable[..., tuple[TmuxDriver, str]]]:
    driver = TmuxDriver(tmux_socket)

    def show(*argv: str) -> tuple[TmuxDriver, str]:
        command = " ".join([sys.executable, str(SCRIPT), *(f"'{word}'" for word in argv)])
        session = driver.server.new_session(
            session_name=f"list_{uuid.uuid4().hex[:6]}", window_command=command, x=100, y=30
        )
        pane = session.active_pane
        assert pane is not None and pane.pane_id is not None
        pane_id = pane.pane_id
        wait_for("the list", lambda: read_dialog(driver.capture(pane_id, 40)) is not None)
        return driver, pane_id

    yield show


def test_yes_moves_the_marker_checks_it_and_confirms(
    show_list: Callable[..., tuple[TmuxDriver, str]],
) -> None:
    driver, pane = show_list(*TRUST)
    how = answer_by_meaning(
        lambda: driver.capture(pane, 40), lambda keys: driver.send_key_names(pane, keys), Answer.YES
    )
    assert how == "meaning: Down Enter (Yes, I trust this folder)"
    wait_for("the list to go", lambda: read_dialog(driver.capture(pane, 40)) is None)
    assert "chosen: Yes, I trust this folder" in "\n".join(driver.capture(pane, 40))


def test_an_unknown_list_is_left_as_it_is(
    show_list: Callable[..., tuple[TmuxDriver, str]],
) -> None:
    driver, pane = show_list("Ja, ich vertraue diesem Ordner", "Nein, beenden")
    sent: list[str] = []
    with pytest.raises(UnrecognisedDialog, match="options seen: 'Ja, ich vertraue diesem Ordner'"):
        answer_by_meaning(lambda: driver.capture(pane, 40), sent.extend, Answer.YES)
    assert sent == []
    time.sleep(0.3)
    dialog = read_dialog(driver.capture(pane, 40))
    assert dialog is not None and dialog.selected == 0


def test_a_marker_that_does_not_move_is_never_confirmed(
    show_list: Callable[..., tuple[TmuxDriver, str]],
) -> None:
    driver, pane = show_list("--stuck", *TRUST)
    with pytest.raises(UnrecognisedDialog, match="the marker did not move"):
        answer_by_meaning(
            lambda: driver.capture(pane, 40),
            lambda keys: driver.send_key_names(pane, keys),
            Answer.YES,
            marker_sec=0.5,
        )
    time.sleep(0.3)
    screen = "\n".join(driver.capture(pane, 40))
    assert "chosen:" not in screen
    dialog = read_dialog(driver.capture(pane, 40))
    assert dialog is not None and dialog.marked.text == "No, exit"


def test_orchestrate_answer_presses_nothing_on_a_dialog_it_does_not_recognise(
    orch: Orchestrator, workdir: Path
) -> None:
    """The whole path: a Claude job whose screen rule sees its trust question over
    options in German. `answer yes` refuses in one line naming them; the list keeps
    its marker where it was."""
    argv = [sys.executable, str(SCRIPT), "Ja, ich vertraue diesem Ordner", "Nein, beenden"]
    job = orch.submit("hallo", "claude", "german", agent_cmd=argv, workdir=workdir)
    deadline = time.monotonic() + 20
    while not orch.registry.get(job.job_id).waiting:
        assert time.monotonic() < deadline, "the dialog was never seen as a question"
        orch.reconcile()
        time.sleep(0.1)
    with pytest.raises(
        UnrecognisedDialog,
        match=r"^I don't recognise this dialog: options seen: "
        r"'Ja, ich vertraue diesem Ordner', 'Nein, beenden'",
    ):
        orch.answer(job.job_id, "yes")
    pane = orch.pane_for_job(job.job_id)
    assert pane is not None
    time.sleep(0.3)
    dialog = read_dialog(orch.driver.capture(pane, 40))
    assert dialog is not None and dialog.marked.text == "Ja, ich vertraue diesem Ordner"
    assert orch.registry.get(job.job_id).waiting
    orch.cancel(job.job_id, grace_sec=1)
