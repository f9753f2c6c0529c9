"""The control room's refusal of a dialog orchestrate does not recognise (issue 27):
one line naming the options seen, as `orchestrate answer` says it, and the pane
offered to answer it there; nothing is shown as being answered."""

from __future__ import annotations

from collections.abc import Callable

from app.tui.app import ControlRoomApp
from app.tui.source import AnswerOutcome
from registry.vocabulary import Answer
from tests.tui.fake_source import FakeSource
from tests.tui.tui_helpers import loaded, notices, wait_until

AppFactory = Callable[[], ControlRoomApp]
WAITING = "7b0e99a1"  # codex, waiting at startup (the demo data)
SIZE = (120, 40)


async def test_a_dialog_it_does_not_recognise_is_said_in_one_line_with_attach(
    make_app: AppFactory, fake: FakeSource
) -> None:
    """Nothing pressed (app/approvals/selection.py): the control room names the options
    seen, as `orchestrate answer` does, and offers the pane to answer it there."""
    seen = "I don't recognise this dialog: options seen: 'Ja', 'Nein' (no meaning for 'Ja')"

    def refuse(job_id: str, reply: Answer) -> AnswerOutcome:
        from app.approvals.errors import UnrecognisedDialog

        raise UnrecognisedDialog(seen)

    fake.answer = refuse  # type: ignore[method-assign]
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await loaded(pilot)
        await pilot.press("y")
        attach = "enter steps into its pane to answer it there"
        want = f"Could not answer: job {WAITING}: {seen} · {attach}"
        await wait_until(pilot, lambda: want in notices(app))
        assert all("\n" not in notice for notice in notices(app))
        assert WAITING not in app.main.answering
