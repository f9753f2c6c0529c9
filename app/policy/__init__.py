"""The approval policy (issue 29): rules a person writes once in ``policy.toml`` that
answer an agent's routine questions, through the most structured channel the agent
has, each answer on record with the rule that gave it.

* ``rules``: the file, read with tomllib and checked whole;
* ``shell``: a shell command split into its simple commands (tree-sitter-bash);
* ``decide``: which rule decides a question;
* ``reviewer``: the optional command asked when no rule decides;
* ``hook``: the policy in Claude Code's permission hook, and the record it leaves;
* ``replay``: the policy run over the questions of a past period.
"""
