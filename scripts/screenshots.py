"""Regenerate the README's control-room screenshots (SVG) into screenshots/.

Usage: .venv/bin/python scripts/screenshots.py [OUT_DIR]
Uses the deterministic demo data and a fixed clock, so reruns give the same files.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.pilot import Pilot  # noqa: E402

from app.tui.app import ControlRoomApp  # noqa: E402
from app.tui.demo import FIXED_NOW, demo_source  # noqa: E402

SIZE = (120, 40)
Steps = Callable[[Pilot[None]], Awaitable[None]]


async def settle(pilot: Pilot[None], ready: Callable[[], bool]) -> None:
    for _ in range(200):
        if ready():
            break
        await pilot.pause(0.05)
    await pilot.pause(0.2)


async def shoot(name: str, keys: tuple[str, ...], out_dir: Path, pane_log: Path) -> Path:
    source = demo_source(lambda: FIXED_NOW)
    source.pane_logs["3fa2c1d0"] = pane_log
    app = ControlRoomApp(source, clock=lambda: FIXED_NOW, age_refresh_s=3600)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: app.polls_applied > 0)
        await pilot.press(*keys)
        await settle(pilot, lambda: getattr(app.screen, "detail", True) is not None)
        return Path(app.save_screenshot(filename=f"{name}.svg", path=str(out_dir)))


async def main(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        pane_log = Path(scratch) / "pane-3fa2c1d0.log"
        pane_log.write_text(
            "".join(f"agent> step {n}: editing src/module_{n}.py\n" for n in range(1, 9))
        )
        shots = {
            "main": (),
            "job_detail": ("enter",),
            "help": ("question_mark",),
            "cancel_confirm": ("c",),
            "history": ("h",),
        }
        for name, keys in shots.items():
            print(await shoot(name, keys, out_dir, pane_log))


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots"))
