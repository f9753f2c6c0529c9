"""A stand-in coding agent for the review tests: it edits its work tree as its prompt
says, then stays in its pane taking more work.

Prompt lines `write PATH TEXT` write files; `commit MESSAGE` commits them; `merge
BRANCH` merges that branch in, keeping its own side of a conflict. Every
line typed into its pane afterwards is appended to `.agent-inbox` beside it
(outside git's view: the tests' repos ignore it), echoed, and done as a prompt line.

By default it reports `started` and `completed` itself (its job ends with that
event), and `completed` again after each line typed in. With `--rounds` it reports
nothing and waits at a `fake> ` prompt after each piece of work, as the
interactive CLIs do: a screen rule sees it idle, and each idle after its work is
the end of a round (`done_when = "idle"`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROMPT = "fake> "


def publish(event: str, detail: str, *, check: bool = True) -> None:
    subprocess.run(
        [sys.executable, "-m", "app", "publish", "--event", event, "--detail", detail], check=check
    )


def work(lines: str) -> None:
    for line in lines.splitlines():
        verb, _, rest = line.partition(" ")
        if verb == "write":
            name, _, text = rest.partition(" ")
            Path(name).parent.mkdir(parents=True, exist_ok=True)
            Path(name).write_text(text + "\n", encoding="utf-8")
        elif verb == "commit":
            subprocess.run(["git", "add", "-A"], check=True)
            subprocess.run(["git", "commit", "-q", "-m", rest], check=True)
        elif verb == "merge":  # its base into its branch, its own side winning conflicts
            subprocess.run(["git", "merge", "-q", "--no-edit", "-X", "ours", rest], check=True)


def main() -> None:
    rounds = "--rounds" in sys.argv[2:]
    prompt = Path(sys.argv[1]).read_text(encoding="utf-8")
    if not rounds:
        publish("started", "editing")
    work(prompt)
    if not rounds:
        publish("completed", "done")
    print("ready for review", flush=True)
    if rounds:
        print(PROMPT, end="", flush=True)
    for typed in sys.stdin:
        with open(".agent-inbox", "a", encoding="utf-8") as inbox:
            inbox.write(typed)
        print(f"got: {typed.strip()}", flush=True)
        work(typed)
        if rounds:
            print(PROMPT, end="", flush=True)
        else:  # done again: taken if the line was sent as a follow-up (else refused)
            publish("completed", "done again", check=False)


if __name__ == "__main__":
    main()
