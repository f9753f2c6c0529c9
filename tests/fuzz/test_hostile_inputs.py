"""Generated hostile input through every parser, renderer and the tmux-name function.

Event JSON, msg payloads, labels, details full of markup, control characters and escape
sequences, raw pane bytes: each either comes out safe or raises the documented error
(InvalidEvent, InvalidJobInput, InvalidLabel); nothing is executed, no markup is parsed
from data, and no escape sequence other than SGR reaches a terminal.

The characters are generated, not picked from a list: every control, format (bidi
controls among them), separator and surrogate code point, and any other code point at
all, mixed with escape sequences and markup. They are judged by an oracle that owes
nothing to the product: Unicode's general categories (``unicodedata.category``) and
bidi classes (``unicodedata.bidirectional``). Each test that accepts some inputs and
refuses others asserts that both branches ran on a share of its inputs.

About 11,700 inputs by default, derandomized (the same inputs every run);
ORCHESTRATE_FUZZ=ci (which scripts/test sets when CI is set) runs ten times as many,
randomly.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import uuid
from collections import Counter
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
from tests.fuzz.oracle import assert_both_ran, hidden, hostile_char, shown_char
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
    "e\u0301",
    "🧑‍💻",
    "表",
]
SGR = re.compile(r"\x1b\[[0-9;]*m")

WORDS = ["ok", "tests pass", " ", "x" * 40, "/", "-", "%Y", "0", "\\", '"']
# Generated code points mixed with escape sequences and markup (which random code
# points would almost never spell).
hostile_text = st.lists(
    st.one_of(hostile_char, hostile_char, st.sampled_from(MARKUP + ESCAPES + WORDS)), max_size=10
).map("".join)
printable_text = st.lists(st.one_of(shown_char, st.sampled_from(MARKUP + WORDS)), max_size=10).map(
    "".join
)


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
    """A valid event whose detail is markup and shown characters (accepted) or hostile
    text (mostly refused),
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
    assert hidden(rest, keep="\n") == []


def assert_renders_as_written(text: str, one_line: bool = True) -> None:
    """``text`` as a widget gets it: no markup parsed, nothing hidden, no action."""
    shown = as_text(text, one_line=one_line)
    assert shown.plain == visible(text, one_line=one_line)
    assert hidden(shown.plain, keep="" if one_line else "\n") == []
    if one_line and "\r\n" not in text:  # stand-ins only for what Unicode calls hidden
        kept = [(a, b) for a, b in zip(text, shown.plain, strict=True) if not hidden(a)]
        assert all(a == b for a, b in kept), kept
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


def test_event_json_through_the_parser_and_the_renderer() -> None:
    """Whatever the fields hold, an event is refused in one line, or its detail is safe
    and shows exactly as written; a tenth of the events at least go each way."""
    outcomes: Counter[str] = Counter()

    @fuzz(2000)
    @given(event_dict(), st.booleans())
    def one(event: dict[str, Any], ascii_: bool) -> None:
        raw = json.dumps(event, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")
        try:
            parsed = parse_event(raw)
        except InvalidEvent as error:
            assert "\n" not in str(error) and hidden(str(error)) == []
            outcomes["refused"] += 1
            note("refused")
            return
        outcomes["accepted"] += 1
        note("accepted")
        assert hidden(parsed.detail, keep="\t\n") == []
        check_detail(parsed.detail)
        assert_renders_as_written(parsed.detail)
        assert visible(parsed.detail) == parsed.detail.replace("\t", " ").replace("\n", "⏎")

    one()
    assert_both_ran(outcomes, "accepted", "refused")


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


def test_labels() -> None:
    """The registry takes a label, one word Unicode calls neither space nor hidden, or
    says why in one line; the tmux name function takes only SAFE_LABEL words, whose
    names round-trip and hold no format character. Both ways, for a tenth at least."""
    outcomes: Counter[str] = Counter()

    @fuzz(1500)
    @given(
        st.one_of(
            hostile_text,
            st.from_regex(SAFE_LABEL, fullmatch=True),
            st.text(shown_char, min_size=1).filter(lambda t: not any(c.isspace() for c in t)),
            st.text(),
        )
    )
    def one(label: str) -> None:
        word = bool(label) and len(label) <= 200 and not any(c.isspace() for c in label)
        try:
            check_label("agent_session", label)
        except InvalidJobInput as error:
            assert "\n" not in str(error)
            assert not word or hidden(label) != []
            outcomes["refused"] += 1
        else:
            assert word and hidden(label) == []
            outcomes["accepted"] += 1
        try:
            name = session_name_for(label)
        except InvalidLabel as error:
            assert not SAFE_LABEL.fullmatch(label)
            assert hidden(str(error)) == []
        else:
            assert SAFE_LABEL.fullmatch(label)
            assert "#" not in name and "." not in name and ":" not in name
            assert label_for(name) == label
        assert_renders_as_written(label)

    one()
    assert_both_ran(outcomes, "accepted", "refused")


def test_details() -> None:
    """A detail holding what Unicode calls hidden (tab and newline aside) is refused, one
    without may be accepted; scrubbing always makes one safe; either shows as written in
    one line. Both ways, for a tenth of the details at least."""
    outcomes: Counter[str] = Counter()

    @fuzz(1500)
    @given(st.one_of(hostile_text, printable_text))
    def one(detail: str) -> None:
        reason = unsafe_detail_reason(detail)
        if reason is None:
            assert hidden(detail, keep="\t\n") == []
            outcomes["accepted"] += 1
        else:
            with pytest.raises(InvalidEvent):
                check_detail(detail)
            outcomes["refused"] += 1
        if hidden(detail, keep="\t\n"):
            assert reason is not None
        scrubbed = scrub_detail(detail)
        assert unsafe_detail_reason(scrubbed) is None
        assert hidden(scrubbed, keep="\t\n") == []
        assert_renders_as_written(detail)
        assert "\n" not in visible(detail)

    one()
    assert_both_ran(outcomes, "accepted", "refused")


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
        assert hidden(line, keep="\n\t") == []
    printed = dumps({"text": text})
    assert hidden(printed) == []
    # The same JSON as json.dumps writes, only spelled safely. (Not always ``text``
    # itself: JSON reads a lone high surrogate escape then a lone low one as one pair.)
    assert json.loads(printed) == json.loads(json.dumps({"text": text}))


@fuzz(1000)
@given(pane_bytes, st.integers(1, 17))
def test_pane_bytes_through_the_emulator(data: bytes, chunk: int) -> None:
    """Any byte stream, in any chunks: text and SGR come out, nothing else."""
    terminal = TerminalEmulator(columns=30, lines=6, history=20)
    for start in range(0, len(data), chunk):
        terminal.feed(data[start : start + chunk])
    lines = terminal.tail()
    assert all(hidden(line.plain) == [] for line in lines)
    assert hidden(terminal.title) == []
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
