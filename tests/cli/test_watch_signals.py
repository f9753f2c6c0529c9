"""`watch`'s needs-you settings are checked before the control room opens: a bad one
is one line on stderr, exit 1, and no state dir made."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (("--notify-cmd", "no-such-notifier --x"), {}, "--notify-cmd: 'no-such-notifier' is not"),
        (("--notify-cmd", "notify-send 'open"), {}, "cannot split"),
        ((), {"ORCHESTRATE_NOTIFY_CMD": "no-such-notifier"}, "ORCHESTRATE_NOTIFY_CMD: "),
        ((), {"ORCHESTRATE_BELL": "loud"}, "ORCHESTRATE_BELL must be on or off"),
        ((), {"ORCHESTRATE_TITLE": "2"}, "ORCHESTRATE_TITLE must be on or off"),
    ],
)
def test_bad_signal_settings_stop_watch_in_one_line(
    tmp_path: Path, args: tuple[str, ...], env: dict[str, str], says: str
) -> None:
    state = tmp_path / "state"
    result = run_cli("--state-dir", str(state), "watch", *args, env=env)
    assert result.returncode == 1 and result.stdout == ""
    assert says in result.stderr and result.stderr.count("\n") == 1
    assert not state.exists()
