"""Try the control room with real agents, offline: fake model servers and a submit
command per agent (not a test; the Done-means walk of issue 20, by hand).

    .venv/bin/python -m tests.agents.offline_lab DIR [LABEL=AGENT ...]

Default: ``claude=claude codex=codex gemini=gemini``. For each LABEL it starts a
scripted fake model (ask to run ``touch LABEL-1.txt``, reply; on the next turn ask
to run ``touch LABEL-2.txt``, reply), builds the agent's offline config under
``DIR/LABEL`` (tests/agents/sandbox.py: nothing of your own home is read), and writes
``DIR/LABEL-submit``, which runs ``orchestrate submit --no-wait`` with that agent's
whole environment; extra words go to submit (``--approvals control-room``,
``--prompt …``). Jobs land in ``$ORCHESTRATE_HOME`` (default ``DIR/state``) on tmux
server ``$ORCHESTRATE_TMUX_SOCKET`` (default ``orchestrate``), as for `watch`. The
servers run until Ctrl-C.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from app.selftest.models.script import Reply, RunShell, Script
from app.selftest.models.server import FakeModelServer
from tests.agents.agent_cases import AGENTS
from tests.agents.clis import AGENT_BIN, REPO

DEFAULT_JOBS = ("claude=claude", "codex=codex", "gemini=gemini")
CODEX_DIALOGS = 'approval_policy = "on-request"\nsandbox_mode = "workspace-write"\n'
"""What a Codex user who wants to be asked sets in config.toml (the tests pass -a/-s)."""


def conversation(label: str) -> Script:
    """Two turns, each asking for a command (the second one follows an `i` message)."""
    return Script(
        [
            RunShell(f"touch {label}-1.txt"),
            Reply(f"Created {label}-1.txt."),
            RunShell(f"touch {label}-2.txt"),
            Reply(f"Created {label}-2.txt too."),
        ]
    )


def prepare(directory: Path, label: str, agent: str, state_dir: Path) -> FakeModelServer:
    """Start LABEL's model and write ``DIR/LABEL-submit``."""
    case = AGENTS[agent]
    model = FakeModelServer(case.api(), conversation(label)).__enter__()
    root = directory / label
    workdir = root / "work"
    workdir.mkdir(parents=True, exist_ok=True)
    if agent == "codex":
        run = case.sandbox(root, workdir, model.base_url, CODEX_DIALOGS)  # type: ignore[call-arg]
    else:
        run = case.sandbox(root, workdir, model.base_url)
    if case.needs_git_repo:
        subprocess.run(["git", "init", "-q", str(workdir)], env=run.env, check=True)
    env = dict(run.env)
    env["PATH"] = f"{AGENT_BIN}{os.pathsep}{env['PATH']}"
    env["ORCHESTRATE_HOME"] = str(state_dir)
    env["ORCHESTRATE_TMUX_SOCKET"] = os.environ.get("ORCHESTRATE_TMUX_SOCKET", "orchestrate")
    env["ORCHESTRATE_IDLE_GRACE_SEC"] = os.environ.get("ORCHESTRATE_IDLE_GRACE_SEC", "30")
    if os.environ.get("TERM"):
        env["TERM"] = os.environ["TERM"]
    orchestrate = REPO / ".venv" / "bin" / "orchestrate"
    words = [
        "env", "-i", *(f"{name}={value}" for name, value in sorted(env.items())),
        str(orchestrate), "submit", "--no-wait", "--agent", agent, "--agent-session", label,
        "--workdir", str(workdir),
    ]  # fmt: skip
    if run.prompt_flag is None:  # Aider: its model is given on its command line
        words += ["--agent-cmd", shlex.join(run.argv)]
    script = directory / f"{label}-submit"
    script.write_text(
        "#!/bin/sh\n# submit a job to the offline " + agent + " of tests/agents/offline_lab.py\n"
        f'exec {shlex.join(words)} --prompt "${{PROMPT:-create {label}-1.txt}}" "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return model


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    directory = Path(argv[0]).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    state_dir = Path(os.environ.get("ORCHESTRATE_HOME") or directory / "state").resolve()
    models: list[FakeModelServer] = []
    for job in argv[1:] or DEFAULT_JOBS:
        label, _, agent = job.partition("=")
        if agent not in AGENTS:
            known = ", ".join(AGENTS)
            print(f"offline_lab: {job!r}: AGENT must be one of {known}", file=sys.stderr)
            return 2
        models.append(prepare(directory, label, agent, state_dir))
        print(f"{directory / (label + '-submit')}   # {agent}, model on {models[-1].base_url}")
    print(f"state dir: {state_dir}   (Ctrl-C stops the model servers)", flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        for model in models:
            model.close()
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main(sys.argv[1:]))
