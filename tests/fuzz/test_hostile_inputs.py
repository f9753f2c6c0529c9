"""Generated hostile input through every parser, renderer and the tmux-name function.

Event JSON, msg payloads, labels, details full of markup, control characters and escape
sequences, raw pane bytes: each either comes out safe or raises the documented error
(InvalidEvent, InvalidJobInput, InvalidLabel); nothing is executed, no markup is parsed
from data, and no escape sequence other than SGR reaches a terminal.

About 11,700 inputs by default, derandomized (the same inputs every run);
ORCHESTRATE_FUZZ=ci runs ten times as many, randomly.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import event as note
from hypothesis import strategies as st
from rich.console import Console
from rich.text import Text
from textual.content import Content

from app.commands.json_argument import read_json_argument
from app.terminal.emulator import TerminalEmulator
from app.terminal.output import cell, dumps, shown
from app.tmux.errors import InvalidLabel
from app.tmux.format_safe import format_literal
from app.tmux.names import SAFE_LABEL, label_for, session_name_for
from app.tui.safe_text import as_text, visible
from bus.blobs import encode_payload
from bus.errors import InvalidPayload
from registry.detail import check_detail, scrub_detail, unsafe_detail_reason
from registry.errors import InvalidEvent, InvalidJobInput
from registry.events import EVENT_TYPES, parse_event
from registry.records import check_label
from tests.plugin.tmux import reap_tmux_server
from tests.tui.live import xterm_everything

CI = os.environ.get("ORCHESTRATE_FUZZ") == "ci"


def fuzz(examples: int) -> settings:
    """`examples` inputs, the same ones every run (ten times as many, random, in CI)."""
    return settings(
        max_examples=examples * (10 if CI else 1),
        derandomize=not CI,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


MARKUP = [
    "[@click=app.quit]",
    "[@click=app.bell]",
    "[@click=screen.dismiss()]",
    "[link=https://evil.example]",
    "[link='x]",
    "[/link]",
    "[/]",
    "[/@click]",
    "[b]",
    "[/b]",
    "[bold red on blue]",
    "[on red]",
    "[red",
    "[",
    "]",
    "\\[",
    "ev[/]",
    "{result.__class__}",
    "#(touch pwned)",
    "#{session_name}",
    "#[fg=red]",
]
ESCAPES = [
    "\x1b[c",
    "\x1b[>0q",
    "\x1b[6n",
    "\x1b[?2026$p",
    "\x1b[?u",
    "\x1b[>1u",
    "\x1b[<u",
    "\x1b[>4;2m",
    "\x1b]0;title\x07",
    "\x1b]2;title\x1b\\",
    "\x1b]11;?\x1b\\",
    "\x1b]52;c;cm0gLXJmIH4=\x07",
    "\x1b]8;;https://evil.example\x1b\\",
    "\x1b]7501;state=idle:app=codex\x1b\\",
    "\x1bP$qm\x1b\\",
    "\x1bPtmux;\x1b\x1b]0;x\x07\x1b\\",
    "\x1b[?1049h",
    "\x1b[?1049l",
    "\x1b[?2004h",
    "\x1b[2J",
    "\x1b[31m",
    "\x1b[38;2;1;2;3m",
    "\x1b[38:2::1:2:3m",
    "\x1b[0m",
    "\x1bc",
    "\x1b",
    "\x9b6n",
    "\x9d0;t\x9c",
    "\x07",
    "\x08",
    "\r",
    "\n",
    "\t",
    "\x00",
    "\x7f",
    "\u202e",
    "\u2066",
    "\u2028",
    "\u200b",
    "\ufeff",
    "\ud800",
    "e\u0301",
    "🧑‍💻",
    "表",
]
# Characters that must never reach a widget or a terminal as such.
HIDDEN = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ud800-\udfff]"
)
SGR = re.compile(r"\x1b\[[0-9;]*m")

WORDS = ["ok", "tests pass", "é", "表", " ", "x" * 40, "/", "-", "%Y", "0", "\\", '"']
# Cheap to draw (generation, not the code under test, dominated the run): tokens only,
# with arbitrary text mixed in by the strategies that need it.
hostile_text = st.lists(st.sampled_from(MARKUP + ESCAPES + WORDS), max_size=10).map("".join)
json_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), hostile_text
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(hostile_text, inner, max_size=3)
    ),
    max_leaves=5,
)
printable_text = st.lists(st.sampled_from(MARKUP + WORDS), max_size=10).map("".join)
VALID_EVENT = {
    "schema_version": 1,
    "seq": 1,
    "job_id": "0badc0de",
    "event": "progress",
    "timestamp": "2026-11-25T04:16:00Z",
    "detail": "",
    "data": {},
}
HOSTILE_FIELDS = {
    "schema_version": json_scalar,
    "seq": st.one_of(st.integers(), json_scalar),
    "job_id": st.one_of(st.sampled_from(["0BADC0DE", "0badc0d", "", "../x"]), hostile_text),
    "event": st.one_of(st.sampled_from(sorted(EVENT_TYPES)), hostile_text),
    "timestamp": st.one_of(st.sampled_from(["2026-13-45T99:00:00Z", ""]), hostile_text),
    "data": st.one_of(st.dictionaries(hostile_text, json_value, max_size=3), json_scalar),
}


@st.composite
def event_dict(draw: st.DrawFn) -> dict[str, Any]:
    """A valid event whose detail is markup soup (accepted) or escape soup (refused),
    with up to two other fields made hostile, dropped or added."""
    event = dict(VALID_EVENT, detail=draw(st.one_of(printable_text, hostile_text)))
    for name in draw(st.sets(st.sampled_from(sorted(HOSTILE_FIELDS)), max_size=2)):
        event[name] = draw(HOSTILE_FIELDS[name])
    if draw(st.booleans()) and draw(st.booleans()):
        event.pop(draw(st.sampled_from(sorted(event))))
        event[draw(hostile_text)] = draw(json_scalar)
    return event


csi = st.builds(
    lambda params, final: b"\x1b[" + params.encode() + bytes([final]),
    st.text(alphabet="0123456789;:?<=>$ !", max_size=12),
    st.integers(0x40, 0x7E),
)
XTERM = [seq if isinstance(seq, bytes) else seq.encode() for _, seq in xterm_everything.SEQUENCES]
pane_bytes = st.lists(
    st.one_of(
        st.sampled_from([e.encode("utf-8", "surrogatepass") for e in ESCAPES + MARKUP] + XTERM),
        st.binary(max_size=12),
        st.text(max_size=8).map(lambda t: t.encode("utf-8", "surrogatepass")),
        csi,
    ),
    max_size=30,
).map(b"".join)


CONSOLE = Console(file=io.StringIO(), force_terminal=True, color_system="truecolor", width=300)


def to_terminal(text: Text | list[Text]) -> str:
    """The bytes a real terminal would receive for ``text`` (Rich, truecolor)."""
    with CONSOLE.capture() as capture:
        for line in text if isinstance(text, list) else [text]:
            CONSOLE.print(line, soft_wrap=True, end="")
    return capture.get()


def assert_terminal_safe(output: str) -> None:
    """Only SGR sequences, and no other control character (the layout's own newlines
    aside), in what reaches the terminal."""
    rest = SGR.sub("", output)
    assert "\x1b" not in rest
    assert not HIDDEN.search(rest.replace("\n", ""))


def assert_renders_as_written(text: str, one_line: bool = True) -> None:
    """``text`` as a widget gets it: no markup parsed, nothing hidden, no action."""
    shown = as_text(text, one_line=one_line)
    assert shown.plain == visible(text, one_line=one_line)
    assert not HIDDEN.search(shown.plain.replace("\n", "" if not one_line else "\n"))
    assert not shown.spans
    content = Content.from_rich_text(shown)
    assert content.plain == shown.plain
    assert all("@click" not in str(span.style) for span in content.spans)
    assert_terminal_safe(to_terminal(shown))


@fuzz(1500)
@given(st.binary(max_size=300))
def test_raw_bytes_as_an_event(raw: bytes) -> None:
    try:
        event = parse_event(raw)
    except InvalidEvent as error:
        assert "\n" not in str(error)
    else:
        assert unsafe_detail_reason(event.detail) is None


@fuzz(2000)
@given(event_dict(), st.booleans())
def test_event_json_through_the_parser_and_the_renderer(
    event: dict[str, Any], ascii_: bool
) -> None:
    """Whatever the fields hold, an event is refused in one line, or its detail is safe
    and shows exactly as written."""
    raw = json.dumps(event, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")
    try:
        parsed = parse_event(raw)
    except InvalidEvent as error:
        assert "\n" not in str(error) and not HIDDEN.search(str(error))
        note("refused")
        return
    note("accepted")  # --hypothesis-show-statistics: both kinds are exercised
    check_detail(parsed.detail)
    assert_renders_as_written(parsed.detail)
    assert visible(parsed.detail) == parsed.detail.replace("\t", " ").replace("\n", "⏎")


@fuzz(1500)
@given(st.one_of(hostile_text, st.builds(json.dumps, json_value)))
def test_msg_payloads(text: str) -> None:
    """A `msg send` payload argument as `msg send` takes it: read (one InvalidEvent line,
    or a value), then serialised for the bus (one InvalidPayload line, e.g. for NaN,
    which Python's JSON reader lets through, or JSON text that reads back the same)."""
    if text.startswith("@"):
        text = text[1:] or "{}"  # not a file name here
    try:
        value = read_json_argument(text, "payload")
    except InvalidEvent as error:
        assert "\n" not in str(error)
        return
    try:
        stored = encode_payload(value)
    except InvalidPayload as error:
        assert "\n" not in str(error)
    else:
        assert json.loads(stored) == value


@fuzz(1500)
@given(st.one_of(hostile_text, st.from_regex(SAFE_LABEL, fullmatch=True), st.text()))
def test_labels(label: str) -> None:
    """The registry takes a label or says why in one line; the tmux name function takes
    only SAFE_LABEL words, whose names round-trip and hold no format character."""
    try:
        check_label("agent_session", label)
    except InvalidJobInput as error:
        assert "\n" not in str(error)
    try:
        name = session_name_for(label)
    except InvalidLabel as error:
        assert not SAFE_LABEL.fullmatch(label)
        assert not HIDDEN.search(str(error))
    else:
        assert SAFE_LABEL.fullmatch(label)
        assert "#" not in name and "." not in name and ":" not in name
        assert label_for(name) == label
    assert_renders_as_written(label)


@fuzz(1500)
@given(hostile_text)
def test_details(detail: str) -> None:
    """A detail is refused, or safe; scrubbing always makes one safe; either shows as
    written in one line."""
    reason = unsafe_detail_reason(detail)
    if reason is None:
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", detail)
    else:
        with pytest.raises(InvalidEvent):
            check_detail(detail)
    assert unsafe_detail_reason(scrub_detail(detail)) is None
    assert_renders_as_written(detail)
    assert "\n" not in visible(detail)


@fuzz(1500)
@given(hostile_text)
def test_screen_text(text: str) -> None:
    """Multi-line data (a job record, an error in a notice) as the widgets get it."""
    assert_renders_as_written(text, one_line=False)
    once = visible(text, one_line=False)
    assert visible(once, one_line=False) == once


@fuzz(1000)
@given(st.one_of(hostile_text, st.builds(json.dumps, json_value)))
def test_command_line_output(text: str) -> None:
    """What the CLI prints: an error or log line (`shown`), a JSON value (`dumps`) and a
    table cell (`cell`) hold no character a terminal acts on; the JSON reads back."""
    for line in (shown(text), cell(text)):
        assert not HIDDEN.search(line.replace("\n", "").replace("\t", ""))
    printed = dumps({"text": text})
    assert not HIDDEN.search(printed)
    assert json.loads(printed) == {"text": text}


@fuzz(1000)
@given(pane_bytes, st.integers(1, 17))
def test_pane_bytes_through_the_emulator(data: bytes, chunk: int) -> None:
    """Any byte stream, in any chunks: text and SGR come out, nothing else."""
    terminal = TerminalEmulator(columns=30, lines=6, history=20)
    for start in range(0, len(data), chunk):
        terminal.feed(data[start : start + chunk])
    lines = terminal.tail()
    assert all(not HIDDEN.search(line.plain) for line in lines)
    assert not HIDDEN.search(terminal.title)
    assert_terminal_safe(to_terminal(lines))
    assert len(terminal.screen()) == 6


@pytest.fixture(scope="module")
def tmux_server() -> Iterator[list[str]]:
    """A private tmux server (one session) for the window-name round trips."""
    socket = f"orch_fuzz_{uuid.uuid4().hex[:10]}"
    tmux = ["tmux", "-L", socket, "-f", "/dev/null"]
    subprocess.run([*tmux, "new-session", "-d", "-s", "fuzz", "sleep 600"], check=True)
    try:
        yield tmux
    finally:
        reap_tmux_server(socket)


NAME_CHARS = st.characters(
    min_codepoint=0x20,
    max_codepoint=0x2FFF,
    exclude_categories=("Cc", "Cs", "Cf", "Zl", "Zp", "Mn", "Me"),
)
printable_line = st.lists(
    st.one_of(
        st.sampled_from([m for m in MARKUP if "pwned" not in m] + ["#(touch MARKER)", ";", "%Y"]),
        st.text(NAME_CHARS, max_size=6),
    ),
    min_size=1,
    max_size=8,
).map("".join)


@fuzz(200)
@given(printable_line)
def test_format_literal_round_trips_through_real_tmux(
    tmux_server: list[str], tmp_path_factory: pytest.TempPathFactory, name: str
) -> None:
    """A window name (tmux expands `-n` as a format) comes back exactly as written, and
    `#(touch MARKER)` in it creates nothing."""
    marker = tmp_path_factory.getbasetemp() / "fuzz-pwned"
    name = name.replace("MARKER", str(marker))
    result = subprocess.run(
        [*tmux_server, "new-window", "-d", "-P", "-F", "#{window_id}\t#{window_name}",
         "-n", format_literal(name), "sleep 600"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    window_id, shown = result.stdout.rstrip("\n").split("\t", 1)
    subprocess.run([*tmux_server, "kill-window", "-t", window_id], check=True)
    assert shown == name
    assert not marker.exists()
