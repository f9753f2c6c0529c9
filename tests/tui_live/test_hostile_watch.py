"""The issue's new user: a session named like markup, a detail that is an action link, an
agent whose pane prints every query its CLI sends, watched in a real terminal (tmux)."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from registry.jobs import Registry
from registry.sessions import SessionStore
from tests.tui_live.test_end_to_end import DEADLINE_S, TuiPane, watch_env

FIXTURES = Path("/work/shared/agents/fixtures")


class WidePane(TuiPane):
    """A 200x50 pane (room for the details), told its size: the panes here otherwise get
    COLUMNS=80 and LINES=24 from somewhere in their environment and draw at 80x24."""

    def start(self, argv: list[str], env: dict[str, str]) -> None:
        command = ["env", *(f"{k}={v}" for k, v in env.items()), "COLUMNS=200", "LINES=50"]
        result = self.tmux(
            "new-session", "-d", "-s", self.name, "-x", "200", "-y", "50",
            shlex.join([*command, *argv]),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        self.tmux("set-option", "-t", self.name, "remain-on-exit", "on")


def test_watch_survives_hostile_labels_details_and_pane_output(
    state_dir: Path, tmux_socket: str
) -> None:
    """`watch` starts, shows the text literally, runs no action; the raw pane streams in
    the log split change no terminal title and press no key by themselves (the terminal,
    tmux here, answers every query that reaches it: the answers would be read as keys)."""
    registry = Registry.open(state_dir)
    job = registry.register("[@click=app.quit]prompt[/]", "claude", "ev[/]")
    SessionStore(registry.bus).create("ev[/]", "claude", tmux_session="ev[/]")
    registry.publish(job.job_id, "started", "[@click=app.quit]click me[/]")
    registry.publish(job.job_id, "progress", "[link=https://evil.example]x[/link] [/]")
    log = state_dir / "logs" / job.job_id / "pane.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"".join(path.read_bytes() for path in sorted(FIXTURES.glob("*/raw*.bin"))))
    pane = WidePane(tmux_socket)
    pane.start([sys.executable, "-m", "app", "watch"], watch_env(state_dir, tmux_socket))
    pane.wait_for(lambda s: s.count("ev[/]") == 2, "the job and the session, labelled as written")
    pane.wait_for(lambda s: "started             [@click=app.quit]click me[/]" in s, "an event")
    pane.wait_for(lambda s: "[link=https://evil.example]x[/link] [/]" in s, "the other")
    title = pane.tmux("display-message", "-p", "-t", pane.name, "#{pane_title}").stdout
    pane.keys("l")
    pane.wait_for(lambda s: "Type your message or @path/to/file" in s, "the pane log in the split")
    # Any answer tmux gave to a query is queued as input before these keys: a phantom
    # "?" would open help, a "c" the cancel dialog.
    pane.keys("/")
    pane.wait_for(lambda s: "esc: close" in s, "the filter bar")
    pane.keys("-l", "zz")
    screen = pane.wait_for(lambda s: "filter: zz" in s, "the filter, typed after the log")
    assert "Keys" not in screen and "Cancel job" not in screen
    assert pane.tmux("display-message", "-p", "-t", pane.name, "#{pane_title}").stdout == title
    pane.keys("Escape")  # closes the filter bar
    pane.wait_for(lambda s: "esc: close" not in s, "the filter bar closed")
    pane.keys("Escape")  # clears the filter
    pane.wait_for(lambda s: "filter: zz" not in s, "the filter cleared")
    assert not pane.exited()
    pane.keys("q")
    deadline = time.monotonic() + DEADLINE_S
    while not pane.exited():
        assert time.monotonic() < deadline, "q did not quit"
        time.sleep(0.1)
