"""A stand-in for `orchestrate export` / `orchestrate history build` in the rebuild
tests: prints progress the way they do, waits for a gate file, writes the fixture."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.tui.history.history_fixture import write_history


def main(mode: str, state_dir: Path, gate: Path) -> int:
    if mode == "export":
        print(f"exported 42 messages to {state_dir}/export/bus.jsonl", file=sys.stderr)
        return 0
    print("history: starting Spark (master local[*])", file=sys.stderr, flush=True)
    if mode == "fail":
        print(
            "orchestrate: no bus export at /x/export/bus.jsonl: run `orchestrate export` first",
            file=sys.stderr,
        )
        return 2
    print("history: reading 42 lines", file=sys.stderr, flush=True)
    deadline = time.monotonic() + 30
    while not gate.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    write_history(state_dir)
    print("history: wrote aggregates", file=sys.stderr, flush=True)
    print("full build: 42 new facts from 42 lines, 0 malformed lines skipped; 0.1 s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])))
