"""Bus exports and build outputs shared by the history tests, and the one CLI build
they share (see ``start_cluster_build``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from registry.history.aggregate_py import aggregate_lines
from registry.history.synthetic import generate_lines

MALFORMED = [
    "this is not json\n",
    '{"seq": "seven", "ts_ms": 1, "type": "job.event"}\n',  # wrong type for seq
    '{"seq": 999999, "ts_ms": 1767225600000, "type": "job.event", "correlation_id": "aa",'
    ' "payload": {"event": "exploded"}}\n',  # not a v1 event kind
    '{"seq": 999998, "ts_ms": 1767225600000, "type": "job.registered", "payload": null}\n',
    "[1, 2, 3]\n",
    '{"seq": 999997, "ts_ms": 17672256\n',  # torn line
]


# A master `history build` lets through and Spark's own code refuses at once: the
# JVM started, in ~2 s, with no cluster. Spark refuses it only while neither
# HADOOP_CONF_DIR nor YARN_CONF_DIR is set, so `without_hadoop_conf` clears them.
REFUSED_MASTER = "yarn"
SPARK_REFUSED = "When running with master 'yarn' either HADOOP_CONF_DIR or YARN_CONF_DIR"


def without_hadoop_conf(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without the variables that would let Spark try a real YARN cluster."""
    return {k: v for k, v in env.items() if k not in ("HADOOP_CONF_DIR", "YARN_CONF_DIR")}


def suite_events() -> list[str]:
    """The history suite's bus traffic: a few hours, ~2,000 jobs' worth of lines."""
    return generate_lines(6000, seed=11, jobs_per_hour=150)


def with_malformed(lines: Sequence[str]) -> list[str]:
    """``lines`` with every kind of MALFORMED line spread through them."""
    mixed = list(lines)
    for index, bad in enumerate(MALFORMED):
        mixed.insert(500 * (index + 1), bad)
    return mixed


def write_export(state_dir: Path, lines: Sequence[str], *, append: bool = False) -> Path:
    """Write (or append) raw JSONL lines where `orchestrate export` puts them."""
    path = state_dir / "export" / "bus.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as handle:
        handle.write("".join(lines))
    return path


Outputs = tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], list[str]]


def outputs(state_dir: Path) -> Outputs:
    """What a build wrote: hourly aggregates, usage and restart markers as row dicts
    (read with pyarrow), and the jobs it found running at its cut-off."""
    history = state_dir / "history"
    state = json.loads((history / "state.json").read_text())
    return (
        pq.read_table(history / "agg_hourly.parquet").to_pylist(),
        pq.read_table(history / "usage_hourly.parquet").to_pylist(),
        pq.read_table(history / "markers.parquet").to_pylist(),
        state["open_jobs"],
    )


def expected(lines: Sequence[str], state_dir: Path) -> Outputs:
    """The plain-Python reference's answer for ``lines``, at the cut-off the build of
    ``state_dir`` used."""
    state = json.loads((state_dir / "history" / "state.json").read_text())
    result = aggregate_lines(lines, state["cutoff_ms"])
    return result.hourly, result.usage, result.markers, result.open_jobs


def copy_state(source: Path, target: Path) -> Path:
    """A copy of a built state dir whose watermark names the copy's own export."""
    shutil.copytree(source, target)
    state_file = target / "history" / "state.json"
    state_file.write_text(state_file.read_text().replace(str(source), str(target)))
    return target


@dataclass(frozen=True)
class ClusterBuild:
    """One `orchestrate history build` run through the CLI (see ``start_cluster_build``)."""

    state_dir: Path
    cache: Path  # its ORCHESTRATE_CACHE_DIR, where its JVM recorded the class archive
    proc: subprocess.CompletedProcess[str]


@dataclass
class PendingClusterBuild:
    """``start_cluster_build``'s process, started and not yet waited for."""

    state_dir: Path
    cache: Path
    process: subprocess.Popen[str]

    def finish(self) -> ClusterBuild:
        code = self.process.wait(timeout=CLUSTER_BUILD_TIMEOUT_S)
        stdout, stderr = (self.output(name) for name in ("stdout", "stderr"))
        assert code == 0, stderr
        return ClusterBuild(
            self.state_dir,
            self.cache,
            subprocess.CompletedProcess(self.process.args, code, stdout, stderr),
        )

    def output(self, name: str) -> str:
        """What the build wrote to ``name`` (stdout or stderr): files, not pipes, so
        a build nobody reads yet never blocks on a full pipe."""
        return (self.state_dir.parent / f"build.{name}").read_text()


CLUSTER_BUILD_TIMEOUT_S = 300


def start_cluster_build(source: Path, root: Path, *, niceness: int = 0) -> PendingClusterBuild:
    """Start building ``source`` with master local-cluster[2,1,1024] (two real executor
    JVMs) in a fresh process whose driver JVM also records the class archive into a
    fresh cache dir. Both are slow (executor JVMs; a ~190 MB archive written at exit),
    so this one build serves the cluster test and the class-archive tests, and the
    test run starts it in the background (``niceness``: on idle CPU) at collection."""
    state_dir, cache = root / "state", root / "cache"
    argv = [sys.executable, "-m", "app", "--state-dir", str(state_dir), "history", "build"]
    cluster = ("--master", "local-cluster[2,1,1024]", "--driver-memory", "1g")
    with (root / "build.stdout").open("w") as stdout, (root / "build.stderr").open("w") as stderr:
        process = subprocess.Popen(
            [*argv, *cluster, "--input", source.as_uri()],
            stdout=stdout,
            stderr=stderr,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "ORCHESTRATE_CACHE_DIR": str(cache)},
            preexec_fn=(lambda: os.nice(niceness)) if niceness else None,
        )
    return PendingClusterBuild(state_dir, cache, process)
