"""The control-room lock: the first control room on a state dir holds it, a later one
learns its pid, and it is free again once the first closes."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from app.tui.room_lock import ControlRoomLock


def test_the_first_holds_it_a_second_learns_whose_it_is(tmp_path: Path) -> None:
    first, second = ControlRoomLock(tmp_path), ControlRoomLock(tmp_path)
    assert first.acquire() is None
    assert second.acquire() == os.getpid()  # another open of the file: refused
    assert stat.S_IMODE((tmp_path / "control-room.lock").stat().st_mode) == 0o600
    first.release()
    assert second.acquire() is None  # the first closed: this one is first now
    second.release()
