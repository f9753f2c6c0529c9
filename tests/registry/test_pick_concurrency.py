"""pick under contention: separate processes, one SQLite file, two session labels."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from pathlib import Path
from typing import Any

from registry.errors import NoPendingJob
from registry.jobs import Registry

JOBS = 1000
LABELS = ("tmux:claude-a", "tmux:claude-b")
WORKERS = 4


def pick_until_empty(state_dir: str, label: str, start: Any, results: Any) -> None:
    """Worker: pick jobs of ``label`` until none is left; report what each pick returned."""
    registry = Registry.open(state_dir, busy_timeout_ms=30_000, audited=False)
    start.wait(30)
    picked = []
    while True:
        try:
            job = registry.pick(label, claimer=f"{label}#{multiprocessing.current_process().pid}")
        except NoPendingJob:
            break
        picked.append((job.job_id, label, job.agent_session, job.status))
    results.put(picked)


def test_each_job_is_picked_once_and_only_by_its_label(tmp_path: Path) -> None:
    """4 processes (2 per label) drain 1,000 jobs: no job twice, none across labels."""
    state_dir = tmp_path / "state"
    registry = Registry.open(state_dir, audited=False)
    expected: dict[str, str] = {}
    with registry.db.transaction():  # one commit for the whole setup
        for n in range(JOBS):
            label = LABELS[n % 2]
            expected[registry.register(f"job {n}", "claude-code", label).job_id] = label
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    workers = [
        context.Process(
            target=pick_until_empty, args=(str(state_dir), LABELS[i % 2], start, results)
        )
        for i in range(WORKERS)
    ]
    for worker in workers:
        worker.start()
    start.set()
    batches = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(30)
        assert worker.exitcode == 0
    picks = [row for batch in batches for row in batch]

    counts = Counter(job_id for job_id, *_ in picks)
    assert len(counts) == JOBS and set(counts) == set(expected)
    assert max(counts.values()) == 1
    assert all(expected[job_id] == label == session for job_id, label, session, _ in picks)
    assert {status for *_, status in picks} == {"running"}
    assert {job.status for job in registry.list()} == {"running"}
    assert sum(len(batch) for batch in batches) == JOBS
