"""CI's drift report names the agent, its newest version and the test that failed."""

from __future__ import annotations

from pathlib import Path

from tests.agents import drift_report

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.agents.test_cli_harness" name="test_yes_runs_the_command[claude]">
<failure message="AssertionError: no dialog within 30 s">long traceback</failure></testcase>
<testcase classname="tests.agents.test_cli_harness" name="test_yes_runs_the_command[codex]"/>
<testcase classname="tests.tui.live.test_three_real_agents" name="test_three_agents">
<error message="">setup broke</error></testcase>
</testsuite></testsuites>
"""


def linked_bin(tmp_path: Path) -> Path:
    """A latest bin dir as scripts/setup-agents --latest leaves it: claude and codex only."""
    bin_dir = tmp_path / "agent-bin-latest"
    bin_dir.mkdir()
    (bin_dir / "claude").symlink_to(
        "/cache/agents/@anthropic-ai/claude-code@2.1.332/node_modules/.bin/claude"
    )
    (bin_dir / "codex").symlink_to("/cache/agents/@openai/codex@0.169.0/node_modules/.bin/codex")
    return bin_dir


def test_each_failure_names_agent_version_and_test(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)

    lines = drift_report.report(junit, linked_bin(tmp_path))

    assert all(line.startswith("drift:") for line in lines)
    assert "claude: @anthropic-ai/claude-code@2.1.197 pinned, " in "\n".join(lines)
    assert "2 of 3 agent tests fail at the newest versions:" in lines[-3]
    assert lines[-2] == (
        "drift:   claude (@anthropic-ai/claude-code@2.1.332): "
        "tests.agents.test_cli_harness::test_yes_runs_the_command[claude]: "
        "AssertionError: no dialog within 30 s"
    )
    assert lines[-1].endswith("test_three_agents: setup broke")
    assert "flaky" not in "\n".join(lines)
    assert lines[-1].startswith("drift:   ? (?): ")
    assert not any(line.startswith("drift: gemini") for line in lines)  # not installed
    assert "not installed" in lines[0]


def test_no_failure_and_no_results_are_said_too(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuite><testcase classname="t" name="test_a[codex]"/>'
        '<testcase classname="t" name="test_b[codex]"/></testsuite>'
    )
    bin_dir = linked_bin(tmp_path)

    assert drift_report.report(junit, bin_dir)[-1] == (
        "drift: none: the 2 agent tests that ran pass at the newest versions"
    )
    junit.write_text("<testsuite/>")  # stopped before any test finished
    assert drift_report.report(junit, bin_dir)[-1] == "drift: no agent test finished"
    missing = drift_report.report(tmp_path / "absent.xml", bin_dir)[-1]
    assert "missing: the run did not finish" in missing


def test_agent_is_read_from_parameters_then_name() -> None:
    assert drift_report.agent_of("test_resume[gemini-yes]") == "gemini"
    assert drift_report.agent_of("test_codex_without_its_app_server") == "codex"
    assert drift_report.agent_of("test_three_real_agents[claude-codex]") == "?"


def test_a_failure_at_the_pinned_version_is_not_called_drift(tmp_path: Path) -> None:
    """When the newest is the pinned version, the same test passed in the pinned run."""
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT.replace("[claude]", "[codex]", 1).replace('[codex]"/>', '[x]"/>'))

    lines = drift_report.report(junit, linked_bin(tmp_path))

    assert lines[-2].startswith(
        "drift:   codex (@openai/codex@0.169.0) [the pinned version: not drift, a flaky test]: "
    )


SELF_TEST = "\n".join(
    [
        '{"agent": "claude", "version": "2.1.332 (Claude Code)", "ok": false, "signals": {'
        '"hook": {"ok": true, "detail": "Stop"}, "title": {"ok": null, "detail": "-"}, '
        '"screen rules": {"ok": false, "detail": "read waiting by screen:claude.auto_mode_offer'
        ' where the screen shows idle \\u001b]0;pwned\\u0007"}, '
        '"answer no": {"ok": false, "detail": "answered but the job still waits"}}}',
        "orchestrate: a stray line that is not JSON",
        '{"agent": "codex", "version": "codex-cli 0.169.0", "ok": true, "signals": '
        '{"hook": {"ok": null, "detail": "-"}}}',
    ]
)


def test_the_self_test_names_each_broken_signal(tmp_path: Path) -> None:
    """`doctor --self-test --json` at the newest versions: one line per signal that broke,
    agent and version first; agent text reaches CI's log as one plain line."""
    results = tmp_path / "self-test.jsonl"
    results.write_text(SELF_TEST, encoding="utf-8")

    bin_dir = linked_bin(tmp_path)
    lines = drift_report.self_test_lines(results, bin_dir)

    assert lines == [
        "drift:   self-test claude (@anthropic-ai/claude-code@2.1.332): screen rules broke: "
        "read waiting by screen:claude.auto_mode_offer where the screen shows idle ]0;pwned",
        "drift:   self-test claude (@anthropic-ai/claude-code@2.1.332): answer no broke: "
        "answered but the job still waits",
        "drift: self-test codex (@openai/codex@0.169.0): every signal works",
    ]
    assert not any("\x1b" in line or "\x07" in line for line in lines)
    missing = drift_report.self_test_lines(tmp_path / "none.jsonl", bin_dir)
    assert missing[0].startswith("drift: self-test: no results")


def test_the_report_never_fails(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    results = tmp_path / "self-test.jsonl"
    results.write_text(SELF_TEST, encoding="utf-8")
    argv = [str(junit), str(linked_bin(tmp_path)), str(results)]
    assert drift_report.main(argv) == 0
    out = capsys.readouterr().out
    assert "tests.agents.test_cli_harness::test_yes_runs_the_command[claude]" in out
    assert "self-test claude (@anthropic-ai/claude-code@2.1.332): answer no broke" in out


def test_a_test_of_one_agents_module_is_that_agents(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="tests.agents.test_claude_latest" '
        'name="test_the_bash_dialog_is_answered[yes]"><failure message="NotWaiting"/>'
        "</testcase></testsuite></testsuites>"
    )
    lines = drift_report.report(junit, linked_bin(tmp_path))
    assert lines[-1].startswith("drift:   claude (@anthropic-ai/claude-code@2.1.332): ")
