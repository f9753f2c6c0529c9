"""CI's drift report: what failed when the agent matrix ran at the newest agent versions.

`scripts/drift` runs the `agents` tests with ``ORCHESTRATE_AGENT_SET=latest`` and a JUnit
XML file; this reads that file and says, per failure, which agent, which version and which
test (the signal it checks) broke. It only reports: drift never fails CI, because an agent
release nobody has looked at yet is news, not a regression of orchestrate.

It also reads what `orchestrate doctor --self-test --json` said of each newest agent
(SELF_TEST_JSONL, one object per agent): a signal that broke there (hook, screen
rules, answer yes…) is named as such, the finest grain the report has.

Usage: python -m tests.agents.drift_report JUNIT_XML BIN_DIR [SELF_TEST_JSONL]
"""

from __future__ import annotations

import json
import os
import re
import sys
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

from registry.activity import clean_text
from tests.agents.clis import PINNED

PREFIX = "drift:"
"""Every line starts with it, so CI's log shows the report apart from the pinned run's."""


@dataclass(frozen=True)
class Failure:
    """One test of the matrix that failed (or errored) at the newest versions."""

    test: str
    agent: str
    message: str


def installed(bin_dir: Path) -> dict[str, str]:
    """Agent -> the package@version its link in ``bin_dir`` points at ('not installed')."""
    versions: dict[str, str] = {}
    for agent, pinned in PINNED.items():
        link = bin_dir / agent
        package = pinned.rsplit("@", 1)[0]
        target = os.readlink(link) if link.is_symlink() else ""
        found = re.search(re.escape(package) + r"[@=]+([0-9][^/]*)", target)
        versions[agent] = f"{package}@{found.group(1)}" if found else "not installed"
    return versions


def agent_of(test: str) -> str:
    """The agent a test drives, from its parameters first (``test_x[claude-yes]``), then
    its name; '?' when it names none (a test of all agents at once)."""
    params = test.partition("[")[2]
    for text in (params, test):
        words = set(re.split(r"[^a-z]+", text.lower()))
        named = [agent for agent in PINNED if agent in words]
        if len(named) == 1:
            return named[0]
    return "?"


def failures(junit_xml: Path) -> tuple[int, list[Failure]]:
    """How many tests ran, and those that failed or errored."""
    root = ElementTree.parse(junit_xml).getroot()
    ran = 0
    failed: list[Failure] = []
    for case in root.iter("testcase"):
        ran += 1
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            continue
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        first_line = (problem.get("message") or problem.text or "").strip().splitlines()
        message = first_line[0][:160] if first_line else "failed"
        agent = agent_of(case.get("name", ""))
        if agent == "?":  # a module of one agent's tests (test_claude_latest)
            agent = agent_of(case.get("classname", ""))
        failed.append(Failure(test, agent, message))
    return ran, failed


def report(junit_xml: Path, bin_dir: Path) -> list[str]:
    """The report's lines: the versions tested, then one line per failure."""
    versions = installed(bin_dir)
    lines = [f"{PREFIX} newest versions: " + ", ".join(versions.values())]
    for agent, version in versions.items():
        if version != PINNED[agent] and version != "not installed":
            lines.append(f"{PREFIX} {agent}: {PINNED[agent]} pinned, {version} newest")
    if not junit_xml.is_file():
        lines.append(f"{PREFIX} no results ({junit_xml} missing: the run did not finish)")
        return lines
    ran, failed = failures(junit_xml)
    if ran == 0:
        lines.append(f"{PREFIX} no agent test finished")
    elif not failed:
        lines.append(f"{PREFIX} none: the {ran} agent tests that ran pass at the newest versions")
    if not failed:
        return lines
    lines.append(f"{PREFIX} {len(failed)} of {ran} agent tests fail at the newest versions:")
    for failure in failed:
        version = versions.get(failure.agent, "?")
        same = (
            " [the pinned version: not drift, a flaky test]"
            if version == PINNED.get(failure.agent)
            else ""
        )
        lines.append(
            f"{PREFIX}   {failure.agent} ({version}){same}: {failure.test}: {failure.message}"
        )
    return lines


def self_test_lines(self_test: Path, bin_dir: Path) -> list[str]:
    """The self-test's verdict per newest agent: each signal that broke, named, with what
    was seen (agent text: made one plain line), or that every signal works."""
    if not self_test.is_file():
        return [f"{PREFIX} self-test: no results ({self_test} missing: it did not run)"]
    versions = installed(bin_dir)
    lines: list[str] = []
    for raw in self_test.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict) or not isinstance(record.get("signals"), dict):
            continue
        agent = clean_text(record.get("agent"), 20) or "?"
        version = versions.get(agent) or clean_text(record.get("version"), 60) or "?"
        broken = [
            (clean_text(name, 40), clean_text(check.get("detail"), 160))
            for name, check in record["signals"].items()
            if isinstance(check, dict) and check.get("ok") is False
        ]
        if not broken:
            lines.append(f"{PREFIX} self-test {agent} ({version}): every signal works")
        for name, detail in broken:
            lines.append(f"{PREFIX}   self-test {agent} ({version}): {name} broke: {detail}")
    return lines or [f"{PREFIX} self-test: no agent's verdict in {self_test}"]


def main(argv: list[str]) -> int:
    """Print the report; exit 0 whatever it says (drift is reported, not failed)."""
    if len(argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    lines = report(Path(argv[0]), Path(argv[1]))
    if len(argv) == 3:
        lines += self_test_lines(Path(argv[2]), Path(argv[1]))
    for line in lines:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
