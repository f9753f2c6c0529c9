"""Record each real agent's screens into tests/fixtures/agents/<agent>/recorded/ (not a test).

    .venv/bin/python -m tests.agents.record_fixtures [claude codex gemini aider]

Per agent, with the same sandbox and fake model as the tests: the screen while the
model is thinking (a gated step), at the permission dialog, idle after yes, idle
after no; the pane titles at those moments; the raw pane byte stream of the yes run;
and a summary of the requests the agent sent. Each run happens in /tmp/lab-<agent>/, a
fixed path (rewriting paths afterwards would break the width of boxed screens); the
server's port becomes PORT.
"""

from __future__ import annotations

import json
import shutil
import sys
import threading
from pathlib import Path
from typing import Any

from app.selftest.models.script import Reply, RunShell, Script
from app.selftest.models.server import FakeModelServer, RecordedRequest
from tests.agents.agent_cases import AGENTS, AgentCase
from tests.agents.tmux_pane import AgentPane
from tests.polling import poll_until

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
TASK = "create done.txt"


def main(names: list[str]) -> None:
    for name in names or sorted(AGENTS):
        lab = Path(f"/tmp/lab-{name}")
        shutil.rmtree(lab, ignore_errors=True)
        try:
            record(AGENTS[name], lab, FIXTURES / name / "recorded")
        finally:
            shutil.rmtree(lab, ignore_errors=True)
        print(f"recorded {name} into {FIXTURES / name / 'recorded'}")


def record(agent: AgentCase, tmp: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    titles: list[str] = []
    for answer in ("yes", "no"):
        root = tmp / answer
        workdir = root / "work"
        workdir.mkdir(parents=True)
        gate = threading.Event()
        script = Script([RunShell("touch done.txt", gate=gate), Reply("All done.")])
        raw = root / "raw.bin"
        with FakeModelServer(agent.api(), script) as model:
            rewrite = _rewriter(model.port)
            run = agent.sandbox(root, workdir, model.base_url)
            with agent.start(run, workdir, TASK, raw_log=raw) as pane:
                if answer == "yes":
                    poll_until(lambda: model.requests_of("turn"), 20, "the turn request")
                    _save(out / "working_model_thinking.txt", pane, rewrite, titles, "working")
                gate.set()
                pane.wait_for(agent.dialog, 20)
                if answer == "yes":
                    _save(out / "dialog_shell_command.txt", pane, rewrite, titles, "dialog")
                agent.answer(pane, agent.yes if answer == "yes" else agent.no)
                if answer == "yes":
                    poll_until((workdir / "done.txt").exists, 15, "done.txt")
                pane.wait_until(agent.idle, 15, "idle")
                if answer == "yes" and agent.name != "aider":
                    pane.wait_for("All done.")
                _save(out / f"idle_after_{answer}.txt", pane, rewrite, titles, f"after {answer}")
            if answer == "yes":
                (out / "raw_yes_run.bin").write_bytes(rewrite(raw.read_bytes().decode()).encode())
                summary = [_summary(request) for request in model.requests]
                (out / "requests_yes_run.json").write_text(
                    rewrite(json.dumps(summary, indent=1)) + "\n", encoding="utf-8"
                )
    (out / "titles.txt").write_text("\n".join(titles) + "\n", encoding="utf-8")


def _save(path: Path, pane: AgentPane, rewrite: Any, titles: list[str], moment: str) -> None:
    path.write_text(rewrite(pane.screen()), encoding="utf-8")
    titles.append(f"{moment}: {rewrite(pane.title())}")


def _rewriter(port: int) -> Any:
    def rewrite(text: str) -> str:
        return text.replace(f"127.0.0.1:{port}", "127.0.0.1:PORT")

    return rewrite


def _summary(request: RecordedRequest) -> dict[str, Any]:
    """What a request was, without its (large) prompt text."""
    body = request.body if isinstance(request.body, dict) else {}
    tools = [
        declaration
        for tool in body.get("tools") or []
        for declaration in tool.get("functionDeclarations", [tool])  # Gemini nests them
    ]
    return {
        "method": request.method,
        "path": request.path,
        "query": request.query,
        "kind": request.kind,
        "body_keys": sorted(body),
        "stream": body.get("stream"),
        "tool_names": sorted(str(tool.get("name", "?")) for tool in tools)[:40],
        "user_agent": request.headers.get("user-agent"),
    }


if __name__ == "__main__":
    main(sys.argv[1:])
