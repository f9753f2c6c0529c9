"""The shell splitter: every simple command of a compound, and every construct whose
effect the text does not tell (which the policy then never allows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.policy.shell import split_command


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A work tree with a src/ folder and a symlink leading out of it."""
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (work / "out").symlink_to(outside)
    return work


@pytest.mark.parametrize(
    ("command", "parts"),
    [
        ("npm test; rm -rf ~", ("npm test", "rm -rf ~")),
        ("npm test && npm run lint || echo failed", ("npm test", "npm run lint", "echo failed")),
        ("npm test 2>&1 | tee src/log.txt", ("npm test", "tee src/log.txt")),
        ("(cd src && make) & wait", ("cd src", "make", "wait")),
        ("{ a; b; } > src/f", ("a", "b")),
        ("! grep -q x src/a", ("grep -q x src/a",)),
        ("CI=1 npm test", ("CI=1 npm test",)),
        ("r\\m -rf 'a b'", ("rm -rf 'a b'",)),
        ("echo 'npm test; rm -rf ~'", ("echo 'npm test; rm -rf ~'",)),
        ('git commit -m "fix: it"', ("git commit -m 'fix: it'",)),
        ("npm test 2>/dev/null", ("npm test",)),
        ("cat <<'EOF'\nrm $x\nEOF\n", ("cat",)),
        ("npm test\nnpm run lint\n", ("npm test", "npm run lint")),
    ],
)
def test_simple_commands_are_split_out(command: str, parts: tuple[str, ...], tree: Path) -> None:
    split = split_command(command, tree)
    assert split.problems == ()
    assert split.parts == parts


@pytest.mark.parametrize(
    ("command", "problem"),
    [
        ("echo $(id)", "command substitution"),
        ('echo "a $(id)"', "command substitution"),
        ("echo `id`", "command substitution"),
        ("diff <(ls) src", "process substitution"),
        ("ls $HOME", "variable expansion"),
        ("ls ${HOME}", "variable expansion"),
        ("echo $((1+2))", "arithmetic expansion"),
        ("echo $'\\x41'", "$'…' string"),
        ("rm -rf {src,..}", "brace expansion"),
        ("eval 'rm -rf ~'", "eval"),
        ("xargs eval", "eval"),
        ("source ./env.sh", "runs text"),
        (". ./env.sh", "runs text"),
        ("bash -c 'rm -rf ~'", "bash -c"),
        ("sh -ec 'rm -rf ~'", "sh -c"),
        ("env FOO=1 /bin/zsh -lc x", "zsh -c"),
        ("find . -exec sh -c 'rm {}' \\;", "sh -c"),
        ("bash <<EOF\nrm -rf ~\nEOF\n", "shell fed a script"),
        ("sh <<< 'rm -rf ~'", "shell fed a script"),
        ("cat <<EOF\n$(id)\nEOF\n", "here-document"),
        ("echo x > ../x", "outside the work tree"),
        ("echo x > /etc/passwd", "outside the work tree"),
        ("echo x > src/../../x", "outside the work tree"),
        ("echo x > out/x", "outside the work tree"),
        ("echo x >> ~/.bashrc", "outside the work tree"),
        ("echo x > ~root/x", "another user's home"),
        ("cd .. && echo x > f", "change of directory"),
        ("git status > src/f --porcelain", "words after a redirection"),
        ("npm test <src/e<(id)", "redirection"),
        ("if true; then rm -rf ~; fi", "if statement"),
        ("for f in *; do rm $f; done", "for statement"),
        ("f() { rm -rf ~; }; f", "function definition"),
        ("export X=1", "declaration command"),
        ("ls (", "cannot read"),
        ('echo "unterminated', "cannot read"),
        ("", "no command"),
        ("# only a comment", "no command"),
    ],
)
def test_what_the_text_does_not_tell_is_a_problem(command: str, problem: str, tree: Path) -> None:
    split = split_command(command, tree)
    assert split.problems, split
    assert any(problem in said for said in split.problems), split.problems


def test_redirections_resolve_from_the_agents_shell_directory(tree: Path) -> None:
    """Claude's Bash keeps its directory between calls: a relative target lands there."""
    assert split_command("echo x > f", tree, cwd=tree / "src").problems == ()
    outside = tree.parent / "outside"
    assert split_command("echo x > f", tree, cwd=outside).problems
    assert split_command("echo x > src/f", None).problems  # no work tree known


def test_a_symlink_inside_the_tree_is_fine(tree: Path) -> None:
    (tree / "link").symlink_to(tree / "src")
    assert split_command("echo x > link/f", tree).problems == ()


def test_commands_nested_too_deep_ask(tree: Path) -> None:
    split = split_command("true && " * 5000 + "ls", tree)  # a list of lists, 5000 deep
    assert split.parts == () and split.problems == ("commands nested too deep to read",)
