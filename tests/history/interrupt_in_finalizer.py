"""`python tests/history/interrupt_in_finalizer.py ARGS...` runs `orchestrate ARGS...`
with one Ctrl-C delivered inside a py4j finalizer, once the build has begun.

That is where a real Ctrl-C often lands: py4j releases each dropped Java object
with a blocking round trip to the JVM from a weakref callback, and Python drops an
exception raised while such a callback runs. Sending the signal from inside one
makes that race happen every time, with the real CLI, Spark and JVM."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import py4j.java_gateway as gateway

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from app.commands import history

_release = gateway._garbage_collect_object
_fired = threading.Event()


def _release_then_interrupt(client: Any, target_id: str) -> None:
    """py4j's release, with SIGINT raised in the middle of it the first time it runs
    as a finalizer (its weakref callback is a lambda; ``_detach`` calls it directly)
    on the main thread after the build's own handler is in place."""
    in_build = signal.getsignal(signal.SIGINT) is history._interrupt
    finalizing = sys._getframe(1).f_code.co_name == "<lambda>"
    on_main = threading.current_thread() is threading.main_thread()
    if in_build and finalizing and on_main and not _fired.is_set():
        _fired.set()
        os.kill(os.getpid(), signal.SIGINT)  # its handler runs within this callback
    _release(client, target_id)


gateway._garbage_collect_object = _release_then_interrupt

if __name__ == "__main__":
    from app.entry import main

    main()
