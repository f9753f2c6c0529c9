"""A rule made from a question a job waits on (the control room's `A`), and its
addition to the policy file.

The rule is as narrow as the question: this agent kind, this tool, this exact
simple command (glob characters escaped) or this exact file of the work tree,
``allow``. A person widens it in an editor if they want; a key press never
allows more than what was on screen. A command the policy could never allow
(a substitution, two commands) gets no rule: the line says why.

The file is written whole to a temporary file beside it and renamed over it
(atomic), and only after the new text has been read back as a policy. A broken
file is never overwritten: the rule would be lost in it, or hide what is wrong.
"""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from app.policy.decide import Question, relative_path
from app.policy.rules import MAX_TEXT, SHELL, PolicyError, Rule, policy_of
from registry.vocabulary import PolicyDecision

COMMAND_LIMIT = 500
"""A recorded command this long may have been cut (registry/activity.py MAX_TEXT):
a rule is never made from what may be half a command."""
SLUG = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class Draft:
    """The rule, and its text as it goes into the file."""

    rule: Rule
    text: str


def draft_rule(question: Question, taken: frozenset[str] = frozenset()) -> Draft:
    """The narrowest ``allow`` rule that answers ``question``; PolicyError (one line)
    when none can. ``taken``: the names the policy has (the new one differs)."""
    if question.is_shell:
        command = _one_command(question)
        fields = {"tool": SHELL, "command": escape_glob(command)}
        about = command
    else:
        relative = relative_path(question)
        if relative is None:
            raise PolicyError(
                f"{question.tool} touches no file inside the job's work tree: no rule is made"
            )
        fields = {"tool": question.tool, "path": escape_glob(relative)}
        about = f"{question.tool} {relative}"
    name = _name(about, taken)
    for value in (name, question.agent, *fields.values()):
        if len(value) > MAX_TEXT or not value.isprintable():
            raise PolicyError("the question holds text a rule cannot hold (unprintable or long)")
    rule = Rule(
        name=name,
        decision=PolicyDecision.ALLOW,
        agent=question.agent,
        tool=fields["tool"],
        command=fields.get("command"),
        path=fields.get("path"),
    )
    return Draft(rule, rule_text(rule))


def _one_command(question: Question) -> str:
    from app.policy.shell import split_command

    if not question.command:
        raise PolicyError("the question names no command: no rule is made")
    if len(question.command) >= COMMAND_LIMIT:
        raise PolicyError(f"the command is {COMMAND_LIMIT} characters or more (maybe cut)")
    split = split_command(question.command, question.workdir, cwd=question.cwd)
    if split.problems:
        raise PolicyError(f"no rule can allow this command: it has {split.problems[0]}")
    if len(split.parts) != 1:
        raise PolicyError(
            f"the command runs {len(split.parts)} commands; a rule allows one (write each)"
        )
    return split.parts[0]


def escape_glob(text: str) -> str:
    """``text`` as a glob that matches only itself (fnmatch: ``[*]`` is a star)."""
    return re.sub(r"([*?\[])", r"[\1]", text)


def _name(about: str, taken: frozenset[str]) -> str:
    base = "allow-" + (SLUG.sub("-", about.lower()).strip("-")[:40].strip("-") or "rule")
    name, count = base, 1
    while name in taken:
        count += 1
        name = f"{base}-{count}"
    return name


def toml_string(value: str) -> str:
    """A TOML basic string; an unprintable character (never in a rule: the loader
    refuses them) is escaped all the same, so the text always reads back as written."""
    escaped = (
        char if char.isprintable() and char not in '"\\' else _escape(char) for char in value
    )
    return '"' + "".join(escaped) + '"'


def _escape(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    code = ord(char)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def rule_text(rule: Rule) -> str:
    """The ``[[rule]]`` table, keys in the README's order."""
    values = {
        "name": rule.name,
        "agent": rule.agent,
        "tool": rule.tool,
        "command": rule.command,
        "path": rule.path,
        "decision": str(rule.decision),
    }
    lines = ["[[rule]]"]
    lines += [f"{key} = {toml_string(value)}" for key, value in values.items() if value]
    return "\n".join(lines) + "\n"


def append_rule(path: Path, draft: Draft) -> None:
    """Add ``draft`` at the end of the policy file (made if missing), atomically;
    PolicyError when the file is broken or the result would not read as a policy."""
    try:
        raw = path.read_bytes()
        stat: os.stat_result | None = path.stat()
    except FileNotFoundError:
        raw, stat = b"", None
    except OSError as error:
        raise PolicyError(f"{path} cannot be read ({error.strerror or error})") from None
    try:
        policy_of(raw)
    except PolicyError as error:
        raise PolicyError(f"{path} is broken, so it is left as it is: {error}") from None
    separator = b"" if not raw else (b"\n" if raw.endswith(b"\n") else b"\n\n")
    new = raw + separator + draft.text.encode("utf-8")
    try:
        policy_of(new)
    except PolicyError as error:  # e.g. a rule of that name was added meanwhile
        raise PolicyError(f"the rule does not fit in {path}: {error}") from None
    _replace(path, new, stat)


def _replace(path: Path, data: bytes, before: os.stat_result | None) -> None:
    """Write ``data`` beside ``path`` and rename it over it, keeping its mode."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as error:
        raise PolicyError(f"{path} cannot be written ({error.strerror or error})") from None
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, before.st_mode & 0o7777 if before else 0o600)
        if _mark(_stat(path)) != _mark(before):
            raise PolicyError(f"{path} changed while the rule was added: try again")
        os.replace(temporary, path)
    except OSError as error:
        raise PolicyError(f"{path} cannot be written ({error.strerror or error})") from None
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None


def _mark(stat: os.stat_result | None) -> tuple[int, int] | None:
    """What tells a changed file: its modification time and size."""
    return (stat.st_mtime_ns, stat.st_size) if stat is not None else None
