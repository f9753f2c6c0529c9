"""The issue's new user: a session named like markup or `#(reboot)`, a detail that is an
action link, an agent whose pane prints every query its CLI sends (and one that prints
every sequence xterm knows), watched in a real terminal (tmux)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from pathlib import Path

import pytest

from registry.jobs import Registry
from registry.sessions import SessionStore
from tests.conftest import run_cli
from tests.plugin.tmux import NewTmuxServer
from tests.polling import poll_until
from tests.tui.live import xterm_everything
from tests.tui.live.test_end_to_end import DEADLINE_S, TuiPane, watch_env
from tests.tui.live.xterm_everything import LAST_LINE

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "agents"  # raw pane streams


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


@pytest.fixture
def agents_socket(tmux_socket: str, private_tmux: NewTmuxServer) -> str:
    """The agents' own tmux server (orchestrate's `-L orchestrate`), apart from the
    operator's terminal (the `tmux_socket` server that runs `watch`); reaped after."""
    return private_tmux(f"{tmux_socket}-agents")


def click_at(pane: TuiPane, screen: str, text: str) -> None:
    """Click (SGR mouse press and release, as the terminal reports them) on ``text``."""
    row = next(y for y, line in enumerate(screen.splitlines()) if text in line)
    column = screen.splitlines()[row].index(text) + 2  # 1-based, on its second character
    for final in "Mm":
        report = f"\x1b[<0;{column};{row + 1}{final}".encode()
        pane.keys("-H", *(f"{byte:02x}" for byte in report))


def test_done_means_a_hostile_label_agent_and_detail_change_nothing(
    state_dir: Path, tmux_socket: str, agents_socket: str, tmp_path: Path
) -> None:
    """The issue's new user, in a real terminal (the outer tmux pane): a session named
    `#(reboot)` is refused in one line and nothing runs; an agent that prints every
    sequence xterm knows, and an event detail `[@click=app.quit]`, show literally in
    `watch` (main screen, log split, job detail); clicking the detail runs no action; the
    terminal's title stays; no key is pressed by itself; `watch` keeps running."""
    marker = tmp_path / "REBOOTED"
    fake_bin = tmp_path / "bin"  # `reboot` here only records that something ran it
    fake_bin.mkdir()
    (fake_bin / "reboot").write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\n")
    (fake_bin / "reboot").chmod(0o755)
    path = f"{fake_bin}{os.pathsep}{os.environ['PATH']}"
    env = watch_env(state_dir, agents_socket) | {"PATH": path}
    for args in (
        ["session", "create", "#(reboot)"],
        ["submit", "--prompt", "x", "--agent", "custom", "--agent-session", "#(reboot)",
         "--agent-cmd", "true", "--no-wait"],
    ):  # fmt: skip
        refused = run_cli(*args, state_dir=state_dir, env=env)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused
        assert "cannot name a tmux session" in refused.stderr
    quiet = run_cli("job", "register", "--prompt", "p", "--agent", "custom",
                    "--agent-session", "#(reboot)", state_dir=state_dir, env=env)  # fmt: skip
    assert quiet.returncode == 0, quiet  # a label of the registry's: shown, never to tmux

    pane = WidePane(tmux_socket)
    pane.start([sys.executable, "-m", "app", "watch"], env)
    pane.wait_for(lambda s: "#(reboot)" in s, "the job labelled #(reboot), as written")
    title = pane.tmux("display-message", "-p", "-t", pane.name, "#{pane_title}").stdout

    agent = shlex.join([sys.executable, str(Path(xterm_everything.__file__))])
    submitted = run_cli(
        "submit", "--prompt", "print every sequence", "--agent", "custom",
        "--agent-session", "xterm", "--agent-cmd", f"{agent} {{prompt_file}}", "--no-wait",
        state_dir=state_dir, env=env,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted
    job_id = submitted.stdout.strip()
    log = state_dir / "logs" / job_id / "pane.log"
    poll_until(lambda: log.is_file() and LAST_LINE.encode() in log.read_bytes(), DEADLINE_S,
               "the agent's whole output in its pane log")  # fmt: skip
    detail = "[@click=app.quit]click me[/] [link=https://evil.example]x[/link] ev[/]"
    published = run_cli("publish", "--job", job_id, "--event", "progress", "--detail", detail,
                        state_dir=state_dir, env=env)  # fmt: skip
    assert published.returncode == 0, published
    screen = pane.wait_for(lambda s: detail in s, "the detail in the events, as written")
    click_at(pane, screen, "[@click=app.quit]click me")

    pane.keys("/")
    pane.wait_for(lambda s: "esc: close" in s, "the filter bar")
    pane.keys("-l", job_id)
    pane.keys("Enter")  # keeps the filter: the agent's job is the one row, selected
    pane.wait_for(lambda s: "esc: close" not in s and "#(reboot)" not in s.split("events")[0],
                  "the filtered jobs")  # fmt: skip
    pane.keys("l")
    pane.wait_for(lambda s: f"pane log · {job_id}" in s and LAST_LINE in s, "the log split")
    pane.wait_for(lambda s: f"red {xterm_everything.MARKUP}" in s, "the agent's markup as text")
    pane.keys("Enter")
    screen = pane.wait_for(
        lambda s: f"job {job_id}" in s and detail in s and LAST_LINE in s, "the job detail"
    )
    assert xterm_everything.TITLE not in screen  # its titles are nowhere, as text or title
    pane.keys("Escape")
    pane.wait_for(lambda s: f"pane log · {job_id}" in s, "back on the main screen")

    pane.keys("Escape")  # clears the filter
    pane.wait_for(lambda s: "filter:" not in s and "#(reboot)" in s, "all jobs again")
    # An answer tmux gave to a leaked query would be queued as input before these keys: a
    # phantom "?" would open help, a "c" the cancel dialog, a "q" quit.
    pane.keys("/")
    pane.wait_for(lambda s: "esc: close" in s, "the filter bar")
    pane.keys("-l", "zz")
    screen = pane.wait_for(lambda s: "filter: zz" in s, "the filter, typed after it all")
    assert "Keys" not in screen and "Cancel job" not in screen and not pane.exited()
    now = pane.tmux("display-message", "-p", "-t", pane.name, "#{pane_title}").stdout
    assert now == title and xterm_everything.TITLE not in now
    assert Registry.open(state_dir).get(job_id).status == "running"  # not cancelled
    assert not marker.exists()
    pane.keys("Escape")  # closes the filter bar
    pane.keys("Escape")  # clears the filter (a second key: ESC and q in one write is alt+q)
    pane.wait_for(lambda s: "filter:" not in s, "the filter cleared")
    pane.keys("q")
    poll_until(pane.exited, DEADLINE_S, "q to quit")
