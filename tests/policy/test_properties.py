"""Generated questions against a policy: nothing outside an allow rule is ever allowed.

The generator knows, for each simple command it writes, whether an allow rule covers
it (by its program and first argument, never by the splitter's own rendering), and
whether it added something whose effect the text does not tell. Arguments are quoted
every way the shell allows, holding the characters that would split a command.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.policy.decide import Question, decide
from app.policy.rules import parse_policy
from registry.vocabulary import PolicyDecision

POLICY = parse_policy(
    {
        "rule": [
            {"name": "tests", "tool": "shell", "command": "npm test*", "decision": "allow"},
            {"name": "lint", "tool": "shell", "command": "ruff *", "decision": "allow"},
            {"name": "status", "tool": "shell", "command": "git status", "decision": "allow"},
            {"name": "list", "tool": "shell", "command": "ls*", "decision": "allow"},
            {"name": "no-rm", "tool": "shell", "command": "rm *", "decision": "deny"},
            {"name": "push", "tool": "shell", "command": "git push*", "decision": "ask"},
            {"name": "src", "tool": "Edit", "path": "src/**", "decision": "allow"},
        ]
    }
)
PROGRAMS = [
    ("npm", "test", True),
    ("npm", "install", False),
    ("ruff", "check", True),
    ("git", "status", True),
    ("git", "push", False),
    ("git", "reset", False),
    ("ls", "-la", True),
    ("rm", "-rf", False),
    ("curl", "-sSL", False),
    ("python", "-m", False),
]
ARG_CHARS = st.sampled_from(list("abc.-_/~*?;&|<>()$`'\" \\!#=%{},\t"))
HAZARDS = [
    "$(id)",
    "`id`",
    "$HOME",
    "${PATH}",
    "<(ls)",
    "$((1+1))",
    "> ../escape",
    "> out/escape",
    "> /tmp/escape",
    ">> ~/.bashrc",
    "{a,b}",
]
SEPARATORS = ["; ", " && ", " || ", " | ", "\n", " & ", ";"]


@dataclass(frozen=True)
class Generated:
    text: str
    all_allowed: bool
    hazardous: bool


def quote(arg: str, style: int) -> str:
    """The argument written so the shell reads it back as exactly ``arg``."""
    if style == 0:
        return "'" + arg.replace("'", "'\\''") + "'"
    if style == 1:
        escaped = "".join("\\" + c if c in '$`"\\' else c for c in arg)
        return '"' + escaped.replace("!", "\"'!'\"") + '"'
    if any(c.isspace() for c in arg):  # tree-sitter-bash misreads some `\ ` (it then asks)
        return quote(arg, 0)
    return "".join(c if c.isalnum() or c in "._/-" else "\\" + c for c in arg) or "''"


@st.composite
def simple_commands(draw: st.DrawFn) -> tuple[str, bool, bool]:
    program, first, allowed = draw(st.sampled_from(PROGRAMS))
    words = [program, first]
    extra = draw(st.lists(st.text(ARG_CHARS, min_size=1, max_size=8), max_size=3))
    if program == "git" and first == "status" and extra:
        allowed = False  # `git status` is an exact rule: any argument leaves it
    words += [quote(arg, draw(st.integers(0, 2))) for arg in extra]
    hazard = draw(st.one_of(st.none(), st.sampled_from(HAZARDS)))
    if hazard is not None:
        words.append(hazard)
    return " ".join(words), allowed, hazard is not None


@st.composite
def compounds(draw: st.DrawFn) -> Generated:
    parts = draw(st.lists(simple_commands(), min_size=1, max_size=4))
    text = parts[0][0]
    for part, _, _ in parts[1:]:
        text += draw(st.sampled_from(SEPARATORS)) + part
    wrap = draw(st.sampled_from(["{}", "({})", "{{ {}; }}", "! {}"]))
    return Generated(
        wrap.format(text),
        all(allowed for _, allowed, _ in parts),
        any(hazard for _, _, hazard in parts),
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    work = root / "work"
    (work / "src").mkdir(parents=True)
    (root / "outside").mkdir()
    (work / "out").symlink_to(root / "outside")
    return work


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=compounds())
def test_nothing_outside_an_allow_rule_is_allowed(generated: Generated, tree: Path) -> None:
    verdict = decide(POLICY, Question("claude", "Bash", generated.text, workdir=tree))
    if verdict.decision is PolicyDecision.ALLOW:
        assert generated.all_allowed and not generated.hazardous, (generated, verdict)
    if generated.all_allowed and not generated.hazardous:
        assert verdict.decision is PolicyDecision.ALLOW, (generated, verdict)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(st.sampled_from(list("npmtes ;&|$()`<>{}'\"\\\n*~")), max_size=40),
)
def test_a_substitution_anywhere_is_never_allowed(text: str, tree: Path) -> None:
    for hazard in ("$(id)", "`id`", "<(id)"):
        command = f"npm test {text}{hazard}"
        verdict = decide(POLICY, Question("claude", "Bash", command, workdir=tree))
        if verdict.decision is PolicyDecision.ALLOW:
            # only when the hazard ended up quoted inert: then nothing ran it
            assert "'" in text or "\\" in text or "#" in text, (command, verdict)


def inside_src(segments: list[str]) -> bool:
    """The model: ``..`` above the tree, or the tree's ``out`` symlink, leave it for
    good (no segment names the tree itself, so no path comes back in)."""
    stack: list[str] = []
    for segment in segments:
        if segment == ".":
            continue
        if segment in ("..", "out") and not stack:
            return False
        if segment == "..":
            stack.pop()
        else:
            stack.append(segment)
    return len(stack) >= 2 and stack[0] == "src"


@settings(max_examples=400, deadline=None)
@given(segments=st.lists(st.sampled_from(["src", "..", ".", "out", "a", "lib"]), max_size=7))
def test_a_path_rule_allows_only_files_inside_its_folder(segments: list[str], tree: Path) -> None:
    relative = "/".join(segments)
    for path in (relative, str(tree / relative) if relative else ""):
        verdict = decide(POLICY, Question("claude", "Edit", path=path, workdir=tree))
        allowed = verdict.decision is PolicyDecision.ALLOW
        assert allowed == inside_src(segments), (path, verdict)
