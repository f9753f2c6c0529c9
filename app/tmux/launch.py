"""Launch scripts for agent panes: only shlex-quoted paths and argv words, never prompt text."""

from __future__ import annotations

import os
import shlex
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# An argv word replaced by the prompt file's path (else the prompt goes to stdin).
PROMPT_PLACEHOLDER = "{prompt_file}"


@dataclass
class Launch:
    """Files written next to the pane log to start an agent without interpolating text."""

    script: Path
    header: Path
    channel: str
    exit_file: Path


def write_launch(
    stem: str,
    command_argv: Sequence[str],
    prompt: Path | None,
    directory: Path,
    header_text: str,
) -> Launch:
    """Write the header and launch script; the script holds quoted paths and argv only."""
    channel = f"orchestrate-{uuid.uuid4().hex}"
    header = directory / f"{stem}.header.txt"
    header.write_text(header_text + ("\n" if header_text else ""), encoding="utf-8")
    if prompt is None:
        run = shlex.join(command_argv)
    elif PROMPT_PLACEHOLDER in command_argv:
        argv = [str(prompt) if word == PROMPT_PLACEHOLDER else word for word in command_argv]
        run = shlex.join(argv)
    else:
        run = f"{shlex.join(command_argv)} < {shlex.quote(str(prompt))}"
    script = directory / f"{stem}.sh"
    exit_file = directory / f"{stem}.exit_status"
    exit_file.unlink(missing_ok=True)
    script.write_text(
        "\n".join(
            [
                "#!/bin/sh",
                "# written by orchestrate: only quoted paths and argv words below",
                # a handler, not SIG_IGN, so the agent still gets C-c
                "trap : INT",
                f"tmux wait-for {shlex.quote(channel)}",
                f"cat {shlex.quote(str(header))}",
                run,
                "status=$?",
                f"printf '%s\\n' \"$status\" > {shlex.quote(str(exit_file))}",
                'exit "$status"',
                "",
            ]
        ),
        encoding="utf-8",
    )
    os.chmod(script, 0o700)
    return Launch(script=script, header=header, channel=channel, exit_file=exit_file)


def read_exit_file(path: Path) -> int | None:
    """The status the launch script recorded, or None if it has not (yet) written one."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return int(text) if text.lstrip("-").isdigit() else None
