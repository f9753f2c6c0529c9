"""A small interactive CLI agent for tests: reads its task at a prompt, asks before it
runs a command, runs it on yes, and goes back to its prompt (like the real ones)."""

from __future__ import annotations

import subprocess
import sys
import time


def ask(question: str) -> str:
    sys.stdout.write(question)
    sys.stdout.flush()
    return sys.stdin.readline().strip()


def main() -> None:
    print("mybot 1.0 - type a task")
    while True:
        task = ask("mybot> ")
        if not task:
            continue
        if task in ("exit", "/exit"):
            return
        print(f"working on: {task}")
        for step in range(3):
            print(f"thinking... {step}")
            sys.stdout.flush()
            time.sleep(0.3)
        command = "touch done.txt" if "done" in task else "touch other.txt"
        answer = ask(f"Run {command}? [y/n] ")
        if answer.lower().startswith("y"):
            subprocess.run(command.split(), check=False)
            print(f"ran {command}")
        else:
            print("skipped")


if __name__ == "__main__":
    main()
