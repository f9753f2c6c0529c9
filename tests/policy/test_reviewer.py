"""The reviewer command, run for real: an answer within the bound, and `ask` for
everything else (a timeout, a crash, a bad answer, a command that is not there)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from app.policy.decide import Question
from app.policy.reviewer import run_reviewer
from registry.vocabulary import PolicyDecision

QUESTION = Question("claude", "Bash", "make test", workdir=Path("/tmp"))


def reviewer(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "reviewer.py"
    script.write_text(body)
    return [sys.executable, str(script)]


@pytest.mark.parametrize("word", ["allow", "deny", "ask", "  ALLOW \nmore"])
def test_its_answer_is_the_decision(tmp_path: Path, word: str) -> None:
    argv = reviewer(tmp_path, f"import sys; sys.stdin.read(); print({word!r})\n")
    decision, why = run_reviewer(argv, QUESTION)
    assert decision == word.split()[0].lower()
    assert why == f"the reviewer said {decision}"


def test_it_reads_the_question_as_json_and_never_gets_the_job_token(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    argv = reviewer(
        tmp_path,
        "import json, os, sys\n"
        "seen = {'q': json.load(sys.stdin), 'env': dict(os.environ)}\n"
        f"json.dump(seen, open({str(seen)!r}, 'w'))\n"
        "print('deny')\n",
    )
    env = {**os.environ, "ORCHESTRATE_JOB_TOKEN": "secret"}
    assert run_reviewer(argv, QUESTION, env=env)[0] is PolicyDecision.DENY
    got = json.loads(seen.read_text())
    assert got["q"]["command"] == "make test" and got["q"]["shell"] is True
    assert "ORCHESTRATE_JOB_TOKEN" not in got["env"]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("print('yes')\n", "not allow, deny or ask"),
        ("print('')\n", "not allow, deny or ask"),
        ("import sys; print('allow'); sys.exit(3)\n", "exited with status 3"),
        ("raise SystemExit('crash')\n", "exited with status 1"),
    ],
)
def test_anything_but_an_answer_asks(tmp_path: Path, body: str, said: str) -> None:
    decision, why = run_reviewer(reviewer(tmp_path, body), QUESTION)
    assert decision is PolicyDecision.ASK
    assert said in why


def gone(pid: int) -> bool:
    """The process has ended (a killed orphan may linger a moment as a zombie)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return status.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_slow_reviewer_and_what_it_started_are_stopped(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    argv = reviewer(
        tmp_path,
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n",
    )
    started = time.monotonic()
    decision, why = run_reviewer(argv, QUESTION, timeout_sec=3.0)
    assert decision is PolicyDecision.ASK and "no answer within 3 s" in why
    assert time.monotonic() - started < 10
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while not gone(child):  # killed with its process group
        assert time.monotonic() < deadline, "the reviewer's child outlived it"
        time.sleep(0.05)


def test_a_missing_command_asks(tmp_path: Path) -> None:
    decision, why = run_reviewer([str(tmp_path / "nothing")], QUESTION)
    assert decision is PolicyDecision.ASK and "could not start" in why
