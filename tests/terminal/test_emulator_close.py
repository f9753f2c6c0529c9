"""A closed emulator leaves (almost) nothing for the garbage collector: its cells go
by reference counting, not in the next full collection (whose pause they lengthen)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from app.terminal.emulator import TerminalEmulator

OUTPUT = b"".join(b"\x1b[32mline %d\x1b[0m of an agent's pane\r\n" % n for n in range(200))


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def left_for_the_collector(close: bool) -> int:
    terminal = TerminalEmulator()
    terminal.feed(OUTPUT)
    assert terminal.tail(3)[-1].plain.startswith("line 199")
    if close:
        terminal.close()
    del terminal
    return gc.collect()


def test_closing_frees_the_cells_without_a_collection(collector_off: None) -> None:
    dropped = left_for_the_collector(close=False)
    closed = left_for_the_collector(close=True)
    assert dropped > 1000  # pyte's cycles hold every cell of the screen
    assert closed < 100


def test_reset_starts_from_an_empty_screen() -> None:
    terminal = TerminalEmulator()
    terminal.feed(OUTPUT)
    terminal.reset()
    assert terminal.tail() == []
    terminal.feed(b"again\r\n")
    assert [line.plain for line in terminal.tail()] == ["again"]
