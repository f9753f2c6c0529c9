"""Keeping the garbage collector's passes off the first paint and short afterwards."""

from __future__ import annotations

import gc

FIRST_DELTA_GRACE_S = 10.0
"""Collection resumes by then even if no delta is ever drawn (a registry that
cannot be read): the pause is for the first screen only."""


def pause_collection() -> None:
    """No collection while the app starts: everything made until its rows are on
    screen (modules, widgets, styles, the first thousand rows) lives as long as the
    app, yet a collection in that time walked it all, and the young ones ran again
    and again over the growing heap (about a tenth of the first paint's CPU, and a
    ~55 ms full pass between the first frame and the rows). ``freeze_startup_heap``
    resumes it; so do ``resume_collection`` and the grace timer."""
    gc.disable()


def resume_collection() -> None:
    """Collect again (the app closes, or the first delta never came)."""
    gc.enable()


def freeze_startup_heap() -> None:
    """Move everything alive once the first delta is drawn (modules, widgets,
    a thousand rows) out of the garbage collector's sight, and collect again.

    Those objects live as long as the app, yet every full collection walked
    them all: with events arriving that was a 60-100 ms pause every ~650 ms,
    the slowest 1% of publish->row. Objects created afterwards are collected
    as usual; frozen ones are still freed by reference counting. No collection
    first: it would cost the first frame ~50 ms, and the few cycles it would
    free are a one-off.

    What the full collections still walk afterwards is mostly the widgets'
    render caches, which is why those are sized to a few screenfuls
    (JobsTable, EventStream), and cells of dropped terminal emulators, which
    is why a preview empties its emulator when it lets it go. Rarer full
    collections were tried and are worse: cyclic garbage (Textual's strips
    cache themselves) piles up between them; a generation-2 threshold of 100
    instead of 10 gave one 332 ms pass in 20 s at 1k ev/s instead of ten of
    55 ms (bench.tui's GC row)."""
    gc.freeze()
    gc.enable()
