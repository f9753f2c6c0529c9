"""The README's agent recipes work as pasted: the custom agent's agents.toml is valid,
its rules read the screens of an agent like the one it describes (tests/agents/mybot.py),
and its file lands where orchestrate looks for it in a fresh directory."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from app.agents.config import read_file
from app.agents.screen import match_screen

README = Path(__file__).resolve().parents[2] / "README.md"
RECIPE = re.compile(
    r"^# Any other agent.*?\n(?P<shell>.*?<<'TOML'\n(?P<toml>.*?)\nTOML)\n", re.S | re.M
)


def recipe() -> re.Match[str]:
    found = RECIPE.search(README.read_text(encoding="utf-8"))
    assert found is not None, "README lost its custom agent recipe"
    return found


def test_the_custom_agent_recipe_reads_its_agents_screens(tmp_path: Path) -> None:
    path = tmp_path / "agents.toml"
    path.write_text(recipe()["toml"], encoding="utf-8")
    spec = read_file(path)["mybot"]
    # what tmux's capture shows of mybot (trailing spaces dropped by capture-pane)
    asking = ["working on: tidy the imports", "thinking... 2", "Run touch other.txt? [y/n]"]
    ready = ["ran touch other.txt", "mybot>"]
    seen = match_screen("mybot", spec.rules, asking)
    assert seen is not None and seen.activity == "waiting" and seen.command == "touch other.txt"
    idle = match_screen("mybot", spec.rules, ready)
    assert idle is not None and idle.activity == "idle"


def test_the_custom_agent_recipe_writes_its_file_in_a_fresh_directory(tmp_path: Path) -> None:
    """Pasted into a shell in a directory with no .orchestrate/ yet."""
    shell = recipe()["shell"]
    result = subprocess.run(["bash", "-c", shell], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "mybot" in read_file(tmp_path / ".orchestrate" / "agents.toml")
