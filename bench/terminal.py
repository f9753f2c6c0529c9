"""Benchmark the pane-output terminal emulator on the real agents' captured streams.

Run:  .venv/bin/python -m bench.terminal [--fixtures /work/shared/agents/fixtures]
Prints the feed throughput (every raw*.bin stream, in 4 KiB chunks as pipe-pane
writes them) and the CPU time of one render of the scrollback and of the screen:
the pane tail renders at most ten times a second.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from app.terminal.emulator import TerminalEmulator

CHUNK = 4096
ROUNDS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=Path, default=Path("/work/shared/agents/fixtures"))
    args = parser.parse_args()
    data = b"".join(path.read_bytes() for path in sorted(args.fixtures.glob("*/raw*.bin")))
    if not data:
        sys.exit(f"bench/terminal.py: no raw*.bin stream under {args.fixtures}")
    feed = render = screen = float("inf")
    for _ in range(ROUNDS):
        terminal = TerminalEmulator()
        start = time.process_time()
        for offset in range(0, len(data), CHUNK):
            terminal.feed(data[offset : offset + CHUNK])
        feed = min(feed, time.process_time() - start)
        start = time.process_time()
        lines = terminal.tail(2000)
        render = min(render, time.process_time() - start)
        start = time.process_time()
        terminal.screen()
        screen = min(screen, time.process_time() - start)
    rate = len(data) / feed / 1e6
    print(f"feed     {len(data):>9,} bytes  {feed * 1000:7.1f} ms  {rate:.2f} MB/s")
    print(f"tail     {len(lines):>9,} lines  {render * 1000:7.2f} ms")
    print(f"screen   {'200x50':>15}  {screen * 1000:7.2f} ms")


if __name__ == "__main__":
    main()
