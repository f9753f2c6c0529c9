"""The command line checked before click parses it: UTF-8 text, option values that are not options.

One place for every command, so no command can forget:

* An argument that is not UTF-8 (bytes Python turns into lone surrogates)
  used to reach SQLite, JSON or the terminal and end in a UnicodeEncodeError
  traceback. Every argument, and every ``ORCHESTRATE_*``/``MQTT_*`` variable,
  must be UTF-8 text.
* click gives an option the next word as its value whatever it is, so
  ``--broker -x`` registered a broker named ``-x`` and ``--agent -v`` an
  agent named ``-v``: almost always a forgotten value. A value that looks
  like an option is refused; ``--broker=-x`` still says it on purpose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import click

from app.settings import ENV_PREFIX, SettingsError

CHECKED_ENV_PREFIXES = (ENV_PREFIX, "MQTT_")
# A negative number is a value (a range check then says what is wrong with it).
_NUMBER = re.compile(r"-\d+(\.\d*)?([eE][-+]?\d+)?|-inf|-nan", re.IGNORECASE)


def check_command_line(root: click.Command, argv: Sequence[str], prog: str) -> None:
    """Walk ``argv`` as click will (subcommands, options and their values) and
    raise a one-line click.UsageError for the first word that is not UTF-8
    text or an option value that looks like an option."""
    ctx = click.Context(root, info_name=prog)
    command = root
    takes_value = _value_options(command)
    options_over = False
    index = 0
    while index < len(argv):
        word = argv[index]
        _require_utf8(word, f"argument {index + 1}", ctx)
        index += 1
        if options_over or word == "-" or not word.startswith("-"):
            if isinstance(command, click.Group) and not options_over:
                sub = command.get_command(ctx, word)
                if sub is None:  # click says "no such command" itself
                    options_over = True
                    continue
                ctx = click.Context(sub, info_name=word, parent=ctx)
                command, takes_value = sub, _value_options(sub)
            continue
        if word == "--":
            options_over = True
            continue
        name, equals, _value = word.partition("=")
        if equals or name not in takes_value or index == len(argv):
            continue
        value = argv[index]
        _require_utf8(value, name, ctx)
        index += 1
        if looks_like_option(value):
            raise click.UsageError(
                f"{name} needs a value, not the option-like {_shown(value)} "
                f"(write {name}=VALUE if that is the value)",
                ctx,
            )


def check_environment(env: Mapping[str, str]) -> None:
    """Refuse an ``ORCHESTRATE_*`` or ``MQTT_*`` variable that is not UTF-8 text
    (its value is never shown: it may be a password or a token)."""
    for name in sorted(env):
        if name.startswith(CHECKED_ENV_PREFIXES):
            problem = _utf8_problem(env[name])
            if problem is not None:
                raise SettingsError(f"environment variable {name} is not UTF-8 text ({problem})")


def looks_like_option(value: str) -> bool:
    """``-x``, ``--verbose``: a dash word that is neither ``-`` (stdin), a negative
    number, nor text with spaces (no option has those)."""
    return (
        value.startswith("-")
        and value != "-"
        and not _NUMBER.fullmatch(value)
        and not any(c.isspace() for c in value)
    )


def _value_options(command: click.Command) -> frozenset[str]:
    """The option names of ``command`` that take a value (not flags or counts)."""
    names: set[str] = set()
    for param in command.params:
        if isinstance(param, click.Option) and not param.is_flag and not param.count:
            names.update(param.opts)
    return frozenset(names)


def _require_utf8(word: str, what: str, ctx: click.Context) -> None:
    problem = _utf8_problem(word)
    if problem is not None:
        raise click.UsageError(f"{what} is not UTF-8 text ({problem})", ctx)


def _utf8_problem(text: str) -> str | None:
    """Why ``text`` (as Python decoded it from the OS) is not UTF-8, or None."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        pass
    else:
        return None
    raw = text.encode("utf-8", "surrogateescape" if _os_bytes_only(text) else "surrogatepass")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
    return "a lone surrogate"


def _os_bytes_only(text: str) -> bool:
    """Whether every surrogate in ``text`` stands for one byte the OS gave (U+DC80-U+DCFF)."""
    return all(not 0xD800 <= ord(c) <= 0xDFFF or 0xDC80 <= ord(c) <= 0xDCFF for c in text)


def _shown(value: str) -> str:
    return repr(value[:30] + ("…" if len(value) > 30 else ""))
