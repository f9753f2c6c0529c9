"""A shell command split into the simple commands it runs, by a real shell parser.

A policy rule's ``command`` glob is matched against ONE simple command, so
``npm test; rm -rf ~`` is two questions, not one that ``npm test*`` allows. The
parser is tree-sitter's bash grammar (tree-sitter-bash): MIT like orchestrate, a
C parser (a parse takes microseconds on the agent's critical path), and it marks
what it cannot read with ERROR/MISSING nodes instead of guessing. bashlex, the
other pure-Python choice, is GPL-3.0 and slower.

The walk is a whitelist: lists, pipelines, subshells, ``{ …; }`` groups, ``!``
and simple commands are read; every other construct (``if``, loops, functions,
``[[ … ]]``, ``export``) is a *problem*, and so is anything whose words are not
known before it runs: ``$(…)``, backticks, ``<(…)``, ``$VAR``, ``$'…'``, brace
expansion, ``eval``/``source``, a shell given ``-c`` or a script on stdin, and a
redirection to a file outside the work tree (``..`` and symlinks resolved). A
command with a problem is never allowed by the policy (it asks), though a part
that a ``deny`` rule matches still denies it.

Agent text is hostile: nothing here runs anything; the text is only parsed.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

MAX_COMMAND = 64 * 1024
"""Longer than this is not read (an ask): no person reviews such a command by eye."""
GROUPS = frozenset({"program", "list", "pipeline", "subshell", "compound_statement"})
"""Node types that only run the statements inside them."""
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox", "ash"})
"""Programs that run a command string given to them (``-c``) or read on stdin."""
RUNS_TEXT = frozenset({"eval", "source", "."})
"""Builtins that run text or a file as shell commands."""
MOVES = frozenset({"cd", "pushd", "popd"})
"""Commands after which a relative redirection no longer lands where it reads."""
PLAIN_WORD = re.compile(r"[\w@%+=:,./~*?\[\]^!-]+")
"""A word shown without quotes: what a person writes in a rule (``rm -rf ~``, ``*.py``)."""
HARMLESS_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
WORD_PROBLEMS = {
    "command_substitution": "a command substitution",
    "process_substitution": "a process substitution",
    "simple_expansion": "a variable expansion",
    "expansion": "a variable expansion",
    "arithmetic_expansion": "an arithmetic expansion",
    "ansi_c_string": "a $'…' string",
    "translated_string": 'a $"…" string',
    "array": "an array",
}


@dataclass(frozen=True)
class Split:
    """The simple commands a command line runs (each as a shell-quoted line of its
    words), and why it cannot be allowed as a whole (empty: no problem)."""

    parts: tuple[str, ...]
    problems: tuple[str, ...]


class Unreadable(Exception):
    """A construct whose effect the policy cannot tell from the text."""


@cache
def parser() -> Parser:
    """One parser per process (building it loads the grammar)."""
    return Parser(Language(tree_sitter_bash.language()))


def split_command(
    text: str, workdir: Path | None, *, cwd: Path | None = None, home: Path | None = None
) -> Split:
    """The simple commands of ``text`` and its problems. A redirection target is
    resolved from ``cwd`` (the agent's shell's directory, else ``workdir``) and must
    land inside ``workdir`` (None: every file redirection is a problem)."""
    if len(text) > MAX_COMMAND:
        return Split((), (f"a command over {MAX_COMMAND} characters",))
    if "\x00" in text:
        return Split((), ("a NUL character",))
    tree = parser().parse(text.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    if root.has_error:
        return Split((), ("text the shell parser cannot read",))
    walk = _Walk(workdir, cwd, home)
    try:
        walk.statement(root)
    except RecursionError:  # `((((…))))` thousands deep: no person reads that either
        return Split((), ("commands nested too deep to read",))
    if not walk.parts and not walk.problems:
        walk.problems.append("no command")
    return Split(tuple(walk.parts), tuple(dict.fromkeys(walk.problems)))


class _Walk:
    """One walk over a parse tree, collecting simple commands and problems."""

    def __init__(self, workdir: Path | None, cwd: Path | None, home: Path | None) -> None:
        self.workdir = _resolved(workdir)
        self.cwd = _resolved(cwd) or self.workdir
        self.moved = False
        self.home = home if home is not None else Path(os.path.expanduser("~"))
        self.parts: list[str] = []
        self.problems: list[str] = []

    def statement(self, node: Node) -> None:
        kind = node.type
        try:
            if kind in GROUPS or kind == "negated_command":
                for child in node.named_children:
                    self.statement(child)
            elif kind == "redirected_statement":
                self.redirected(node)
            elif kind == "command":
                self.command(node, ())
            elif kind == "variable_assignment":
                self.parts.append(self.assignment(node))
            elif kind != "comment":
                self.problems.append(f"a construct the policy does not read: {_said(kind)}")
        except Unreadable as error:
            self.problems.append(str(error))

    def redirected(self, node: Node) -> None:
        """A statement with redirections: a simple command checks them with its name
        (a shell fed a here-document), anything else on its own."""
        body = node.child_by_field_name("body")
        redirects = [c for c in node.named_children if c.type.endswith("_redirect")]
        if body is not None and body.type == "command":
            self.command(body, redirects)
            return
        if body is not None:  # first: a `cd` in it moves where the redirection lands
            self.statement(body)
        for redirect in redirects:
            self.redirect(redirect, None)

    def command(self, node: Node, outer: list[Node] | tuple[Node, ...]) -> None:
        prefix: list[str] = []
        words: list[str] = []
        redirects = list(outer)
        for child in node.named_children:
            if child.type == "variable_assignment":
                prefix.append(self.assignment(child))
            elif child.type.endswith("_redirect"):
                redirects.append(child)
            elif child.type == "command_name":
                words.extend(literal(grand) for grand in child.named_children)
            elif child.type != "comment":
                words.append(literal(child))
        for redirect in redirects:
            self.redirect(redirect, words[0] if words else "")
        _check_indirection(words)
        self.moved = self.moved or bool(words and words[0] in MOVES)
        self.parts.append(" ".join([*prefix, *map(shown_word, words)]))

    def assignment(self, node: Node) -> str:
        """``NAME=value`` as it would be written (its value a literal)."""
        name = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        if name is None or name.type != "variable_name":
            raise Unreadable("an assignment to a subscript")
        operator = "+=" if any(c.type == "+=" for c in node.children) else "="
        text = literal(value) if value is not None else ""
        return f"{_text(name)}{operator}{shown_word(text) if text else ''}"

    def redirect(self, node: Node, name: str | None) -> None:
        """A redirection: a file must resolve inside the work tree; a here-document
        or here-string fed to a shell is a script nobody matched."""
        kind = node.type
        if kind in ("heredoc_redirect", "herestring_redirect"):
            for child in node.named_children:
                if child.type in ("heredoc_start", "heredoc_end"):
                    continue
                if child.type == "heredoc_body":
                    _literal_body(child)
                elif kind == "herestring_redirect":
                    literal(child)
                else:
                    raise Unreadable(f"{_said(child.type)} after a here-document")
            if name is None:
                raise Unreadable("a here-document fed to a group of commands")
            if _base(name) in SHELLS:
                raise Unreadable("a shell fed a script on stdin")
            return
        if kind != "file_redirect":
            raise Unreadable(f"a construct the policy does not read: {_said(kind)}")
        destinations = node.children_by_field_name("destination")
        operator = next((c.type for c in node.children if not c.is_named), "")
        if not destinations:
            raise Unreadable("a redirection without a target")
        if len(destinations) > 1:
            # `cmd > f a b`: bash gives a and b to cmd; the grammar hangs them on the
            # redirection, so the command's text would lack them
            raise Unreadable("words after a redirection's target")
        target = literal(destinations[0])
        if operator in (">&", "<&") and (target.isdigit() or target == "-"):
            return  # a file descriptor duplicated or closed: no file
        self.check_target(target)

    def check_target(self, target: str) -> None:
        if target in HARMLESS_TARGETS:
            return
        if self.workdir is None or self.cwd is None:
            raise Unreadable(f"a redirection to {target!r} with no work tree known")
        if target == "~" or target.startswith("~/"):
            path = self.home / target[2:]
        elif target.startswith("~"):
            raise Unreadable(f"a redirection to another user's home ({target!r})")
        elif self.moved and not target.startswith("/"):
            raise Unreadable(f"a redirection to {target!r} after a change of directory")
        else:
            path = self.cwd / target
        resolved = Path(os.path.realpath(path))
        if not resolved.is_relative_to(self.workdir):
            raise Unreadable(f"a redirection outside the work tree ({target!r})")


def literal(node: Node) -> str:
    """The one word ``node`` is once the shell has removed its quotes; Unreadable when
    its value is only known when it runs."""
    kind = node.type
    if kind in WORD_PROBLEMS:
        raise Unreadable(WORD_PROBLEMS[kind])
    if kind == "word":
        text = _text(node)
        if "{" in text or "}" in text:
            _check_braces(text)
        return _unescape(text)
    if kind == "number":
        return _text(node)
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "string":
        out = []
        for child in node.named_children:
            if child.type != "string_content":
                raise Unreadable(WORD_PROBLEMS.get(child.type, "an expansion in quotes"))
            out.append(_unescape(_text(child), quoted=True))
        return "".join(out)
    if kind == "concatenation":
        text = "".join(literal(child) for child in node.named_children)
        if any(c.type == "word" for c in node.named_children):
            _check_braces(_text(node))
        return text
    raise Unreadable(f"a word the policy does not read: {_said(kind)}")


def shown_word(word: str) -> str:
    """A word as a rule's glob sees it: bare when it is plain, else shell-quoted, so
    ``echo 'a; rm x'`` stays one word that ``rm*`` does not match."""
    return word if PLAIN_WORD.fullmatch(word) else shlex.quote(word)


def _check_braces(raw: str) -> None:
    """Unquoted ``{a,b}`` or ``{1..3}`` becomes several words when it runs."""
    opening = raw.find("{")
    if opening >= 0 and raw.find("}", opening) > opening:
        inside = raw[opening + 1 : raw.find("}", opening)]
        if "," in inside or ".." in inside:
            raise Unreadable("a brace expansion")


def _literal_body(node: Node) -> None:
    """A here-document's body: text, unless it expands something."""
    for child in node.named_children:
        if child.type in WORD_PROBLEMS:
            raise Unreadable(WORD_PROBLEMS[child.type] + " in a here-document")
        if child.type != "heredoc_content":
            raise Unreadable(f"{_said(child.type)} in a here-document")


def _check_indirection(words: list[str]) -> None:
    """``eval``, ``source``, and a shell given ``-c``: the command they run is text
    the parser saw as a word, so no rule matched it."""
    if words and words[0] in RUNS_TEXT:
        raise Unreadable(f"{words[0]!r} runs text as commands")
    for index, word in enumerate(words):
        base = _base(word)
        if base == "eval":
            raise Unreadable("'eval' runs text as commands")
        if base in SHELLS and any(_short_c(flag) for flag in words[index + 1 :]):
            raise Unreadable(f"'{base} -c' runs text as commands")


def _short_c(flag: str) -> bool:
    """``-c``, ``-lc``, ``-ec``: a short-option cluster holding ``c``."""
    return flag.startswith("-") and not flag.startswith("--") and "c" in flag


def _said(kind: str) -> str:
    """A node type in words: ``if_statement`` -> ``if statement``."""
    return kind.replace("_", " ")


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


def _unescape(text: str, *, quoted: bool = False) -> str:
    """Backslash removal as the shell does it: outside quotes every ``\\x`` is ``x``;
    inside double quotes only before ``$ ` " \\`` and a newline."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            following = text[index + 1]
            if following == "\n":
                index += 2
                continue
            if not quoted or following in '$`"\\':
                out.append(following)
                index += 2
                continue
        out.append(char)
        index += 1
    return "".join(out)


def _resolved(workdir: Path | None) -> Path | None:
    return Path(os.path.realpath(workdir)) if workdir is not None else None
