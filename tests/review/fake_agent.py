"""A stand-in coding agent for the review tests: it edits its work tree as its prompt
says, reports completed, then stays in its pane reading what it is sent.

Prompt lines `write PATH TEXT` write files; `commit MESSAGE` commits them. Every
line typed into its pane afterwards is appended to `.agent-inbox` beside it
(outside git's view: the tests' repos ignore it) and echoed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def publish(event: str, detail: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "app", "publish", "--event", event, "--detail", detail], check=True
    )


def main() -> None:
    prompt = Path(sys.argv[1]).read_text(encoding="utf-8")
    publish("started", "editing")
    for line in prompt.splitlines():
        verb, _, rest = line.partition(" ")
        if verb == "write":
            name, _, text = rest.partition(" ")
            Path(name).parent.mkdir(parents=True, exist_ok=True)
            Path(name).write_text(text + "\n", encoding="utf-8")
        elif verb == "commit":
            subprocess.run(["git", "add", "-A"], check=True)
            subprocess.run(["git", "commit", "-q", "-m", rest], check=True)
    publish("completed", "done")
    print("ready for review", flush=True)
    for typed in sys.stdin:
        with open(".agent-inbox", "a", encoding="utf-8") as inbox:
            inbox.write(typed)
        print(f"got: {typed.strip()}", flush=True)


if __name__ == "__main__":
    main()
