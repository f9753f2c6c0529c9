"""A JSON command-line argument: the text itself, or ``@FILE`` holding it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from registry.errors import InvalidEvent
from registry.events import decode_json


def read_json_argument(text: str, what: str) -> Any:
    """The JSON value of ``text`` (or of the file ``@FILE`` names), as ``what`` in
    errors; one line InvalidEvent for anything unreadable, never a traceback."""
    if text == "@":  # Path("") is the current directory: "cannot read ... ."
        raise InvalidEvent(f"{what} file name is missing after '@' (give @FILE)")
    source = what
    if text.startswith("@"):
        path = Path(text[1:])
        source = f"{what} file {path}"
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidEvent(f"cannot read {source}: {exc.strerror or exc}") from exc
        except UnicodeDecodeError as exc:
            raise InvalidEvent(f"{source} is not UTF-8 text") from exc
    return decode_json(text, source)
