"""Task counts of the Spark stages a build is running, as progress lines.

The build's own lines name its phases ("writing facts", "aggregating"); on a big
input or a cluster a phase can run for tens of seconds, and this says it moves:
``spark stage 3: 12/40 tasks done``. Spark's console progress bar is off (it draws with
carriage returns, which a log or the TUI's build panel cannot show), so this polls
Spark's status tracker from a thread of its own instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

STAGE_POLL_S = 1.0  # a stage shorter than this prints nothing


@contextmanager
def stage_progress(
    spark: Any, progress: Callable[[str], None], poll_s: float = STAGE_POLL_S
) -> Iterator[None]:
    """While the block runs, print each running stage's task count when it changed."""
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()
    shown: dict[int, tuple[int, int]] = {}

    def poll() -> None:
        while not stop.wait(poll_s):
            try:
                stages = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            except Exception:  # the JVM is going away (a stopped build): nothing to say
                return
            for stage in stages:
                if stage is None or stage.numTasks <= 0 or stop.is_set():
                    continue
                counts = (stage.numCompletedTasks, stage.numTasks)
                if shown.get(stage.stageId) != counts:
                    shown[stage.stageId] = counts
                    progress(f"spark stage {stage.stageId}: {counts[0]}/{counts[1]} tasks done")

    thread = threading.Thread(target=poll, name="stage-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=poll_s + 5)  # at most one poll of a JVM still answering
