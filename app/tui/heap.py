"""Keeping the garbage collector's full passes short in a long-running control room."""

from __future__ import annotations

import gc


def freeze_startup_heap() -> None:
    """Move everything alive once the first delta is drawn (modules, widgets,
    a thousand rows) out of the garbage collector's sight.

    Those objects live as long as the app, yet every full collection walked
    them all: with events arriving that was a 60-100 ms pause every ~650 ms,
    the slowest 1% of publish->row. Objects created afterwards are collected
    as usual; frozen ones are still freed by reference counting. No collection
    first: it would cost the first frame ~50 ms, and the few cycles it would
    free are a one-off.

    What the full collections still walk afterwards is mostly the widgets'
    render caches, which is why those are sized to a few screenfuls
    (JobsTable, EventStream). Rarer full collections were tried and are
    worse: cyclic garbage piles up between them, and one pass took ~1 s
    after 40 s at 1k ev/s."""
    gc.freeze()
