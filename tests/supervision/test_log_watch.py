"""Pane logs' changes from the kernel: the output reader wakes when a running job's
log is written, for that job, and not otherwise."""

from __future__ import annotations

import time
from pathlib import Path

from app.supervision.log_watch import LogWatch


def test_a_written_pane_log_wakes_the_watch_for_its_job(tmp_path: Path) -> None:
    def pane_log(job_id: str) -> Path:
        return tmp_path / job_id / "pane.log"

    for job_id in ("a", "b"):
        pane_log(job_id).parent.mkdir()
    watch = LogWatch(pane_log)
    assert watch.working
    watch.follow(["a", "b", "not-started"])  # a job with no log dir yet is tried again later
    started = time.monotonic()
    assert watch.wait(0.2) == set()  # nothing written: a quiet wait, to its timeout
    assert time.monotonic() - started >= 0.15
    pane_log("a").write_text("hello\x1b]7501;state=working\x1b\\")
    (tmp_path / "b" / "hook-errors.log").write_text("not the pane's output")
    assert watch.wait(2) == {"a"}
    watch.follow(["b"])  # a stopped: no longer watched
    with pane_log("a").open("a") as log:
        log.write("more")
    with pane_log("b").open("a") as log:
        log.write("b's first words")
    assert watch.wait(2) == {"b"}
    watch.close()
