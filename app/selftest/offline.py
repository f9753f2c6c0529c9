"""A fresh, offline config for each agent CLI, pointed at a scripted model server.

Each function builds its config under ``root`` (a throwaway directory) and returns the
argv and the whole environment to start the agent with: no first-run dialog, no
network but the scripted server, and nothing read from or written to the user's own
home or agent config. The self-test and the agent tests (tests/agents/sandbox.py)
build their agents here, so both run the agents the same way.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FAKE_KEY = "fake-key-not-a-secret"
FAKE_MODEL = "fake-model"


@dataclass(frozen=True)
class AgentRun:
    """How to start one agent: its argv before the task, its environment, where its config is."""

    agent: str
    argv: list[str]
    env: dict[str, str]
    config_dir: Path
    prompt_flag: list[str] | None = field(default_factory=list)
    """Put before the task word (``[]`` for a bare word, ``["-i"]`` for Gemini);
    None when the agent takes no task in argv and it must be pasted (Aider)."""

    def command(self, task: str | None = None) -> list[str]:
        """The argv to start the agent with TASK as one argv word (never a shell string)."""
        if task is None:
            return list(self.argv)
        if self.prompt_flag is None:
            raise ValueError(f"{self.agent} takes no task in argv: paste it")
        return [*self.argv, *self.prompt_flag, task]


def base_env(home: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """A clean environment: PATH, a UTF-8 locale and an isolated HOME, and nothing else
    of the caller's (no real API keys, no real config dirs)."""
    home.mkdir(parents=True, exist_ok=True)
    # who commits, for agents that commit (Aider warns on start without one)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Agent Test\n\temail = agent-test@example.invalid\n", encoding="utf-8"
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "COLORTERM": "truecolor",
    }
    if os.environ.get("TMUX_TMPDIR"):
        env["TMUX_TMPDIR"] = os.environ["TMUX_TMPDIR"]
    env.update(extra or {})
    return env


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def claude(
    executable: str,
    root: Path,
    workdir: Path,
    base_url: str,
    settings: Mapping[str, Any] | None = None,
    user_settings: Mapping[str, Any] | None = None,
) -> AgentRun:
    """Claude Code: CLAUDE_CONFIG_DIR with onboarding done and WORKDIR trusted; a bearer
    token (an API key would raise an approval dialog); no telemetry or update checks.
    ``settings`` (e.g. hooks) go in a per-run file passed with ``--settings``;
    ``user_settings`` become the throwaway config dir's own settings.json."""
    config = root / "claude-config"
    write_json(
        config / ".claude.json",
        {
            "hasCompletedOnboarding": True,
            "projects": {str(workdir.resolve()): {"hasTrustDialogAccepted": True}},
        },
    )
    if user_settings is not None:
        write_json(config / "settings.json", user_settings)
    env = base_env(
        root / "home",
        {
            "CLAUDE_CONFIG_DIR": str(config),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_AUTH_TOKEN": FAKE_KEY,
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
    )
    argv = [executable]
    if settings is not None:
        argv += ["--settings", str(write_json(root / "claude-settings.json", settings))]
    return AgentRun("claude", argv, env, config)


def codex(
    executable: str, root: Path, workdir: Path, base_url: str, extra_config: str = ""
) -> AgentRun:
    """Codex: CODEX_HOME with the scripted server as its model provider and WORKDIR trusted.

    ``--no-daemon`` keeps the turn in the TUI's own process (else a shared app-server
    outlives the pane); ``-a on-request -s workspace-write`` is how a dialog appears at
    all. ``extra_config`` is appended TOML (e.g. hooks)."""
    home = root / "codex-home"
    home.mkdir(parents=True, exist_ok=True)
    q = json.dumps  # a JSON string is a valid TOML basic string
    (home / "config.toml").write_text(
        f"""model = {q(FAKE_MODEL)}
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake"
base_url = {q(base_url + "/v1")}
wire_api = "responses"
env_key = "FAKE_API_KEY"

[projects.{q(str(workdir.resolve()))}]
trust_level = "trusted"

[analytics]
enabled = false
{extra_config}""",
        encoding="utf-8",
    )
    env = base_env(root / "home", {"CODEX_HOME": str(home), "FAKE_API_KEY": FAKE_KEY})
    argv = [executable, "--no-daemon", "-a", "on-request", "-s", "workspace-write"]
    return AgentRun("codex", argv, env, home)


GEMINI_OFFLINE_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "ui": {"hideTips": True},
}


def gemini(
    executable: str,
    root: Path,
    workdir: Path,
    base_url: str,
    settings: Mapping[str, Any] | None = None,
) -> AgentRun:
    """Gemini CLI: GEMINI_CLI_HOME/.gemini/settings.json with API-key auth chosen, folder
    trust off and no update checks; ``settings`` (e.g. hooks) are merged on top."""
    home = root / "gemini-home"
    write_json(home / ".gemini" / "settings.json", {**GEMINI_OFFLINE_SETTINGS, **(settings or {})})
    env = base_env(
        root / "home",
        {
            "GEMINI_CLI_HOME": str(home),
            "GEMINI_API_KEY": FAKE_KEY,
            "GOOGLE_GEMINI_BASE_URL": base_url,
        },
    )
    return AgentRun("gemini", [executable], env, home, prompt_flag=["-i"])


def aider(executable: str, root: Path, workdir: Path, base_url: str) -> AgentRun:
    """Aider: flags for an OpenAI-compatible scripted model, a model metadata file (else it
    fetches one from the network on every start), the questions of a first run turned
    off, and its history files kept out of WORKDIR. ``--edit-format diff``: only an
    editblock format offers to run the shell commands the model suggests."""
    config = root / "aider"
    metadata = write_json(
        config / "model-metadata.json",
        {
            f"openai/{FAKE_MODEL}": {
                "max_input_tokens": 128000,
                "max_output_tokens": 4096,
                "max_tokens": 4096,
                "input_cost_per_token": 0.000001,
                "output_cost_per_token": 0.000002,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        },
    )
    env = base_env(root / "home", {"LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    argv = [
        executable,
        "--openai-api-base", f"{base_url}/v1",
        "--openai-api-key", FAKE_KEY,
        "--model", f"openai/{FAKE_MODEL}",
        "--model-metadata-file", str(metadata),
        "--edit-format", "diff",
        "--no-gitignore",
        "--no-show-model-warnings",
        "--no-check-update",
        "--no-analytics",
        "--no-show-release-notes",
        "--chat-history-file", str(config / "chat.history.md"),
        "--input-history-file", str(config / "input.history"),
    ]  # fmt: skip
    return AgentRun("aider", argv, env, config, prompt_flag=None)


QWEN_OFFLINE_SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "ui": {"hideTips": True},
    # its bundled rg comes without its executable bit from npm: a warning box otherwise
    "tools": {"useRipgrep": False},
    # background subagents that call the model after a turn (memory extraction, skills)
    "memory": {
        "enableManagedAutoMemory": False,
        "enableManagedAutoDream": False,
        "enableAutoSkill": False,
    },
}


def qwen(executable: str, root: Path, workdir: Path, base_url: str) -> AgentRun:
    """Qwen Code: QWEN_HOME (its config dir itself) with OpenAI auth chosen and no update
    checks; the scripted server as an OpenAI-compatible endpoint through OPENAI_* vars.
    ``--approval-mode default``: 0.24.4 starts in auto mode, whose classifier (a model
    call) answers dialogs on its own, so no dialog would come otherwise."""
    home = root / "qwen-home"
    write_json(home / "settings.json", QWEN_OFFLINE_SETTINGS)
    env = base_env(
        root / "home",
        {
            "QWEN_HOME": str(home),
            "OPENAI_API_KEY": FAKE_KEY,
            "OPENAI_BASE_URL": f"{base_url}/v1",
            "OPENAI_MODEL": FAKE_MODEL,
        },
    )
    argv = [executable, "--approval-mode", "default"]
    return AgentRun("qwen", argv, env, home, prompt_flag=["-i"])
