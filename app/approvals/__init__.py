"""Approvals: an agent asks permission, a person (or, next, a policy or a remote
node) answers, and the agent moves on. The whole path is in this folder:

* ``question.py``: is the job asking now, which answers its agent takes, and
  which way an answer reaches it (a structured decision or keys);
* ``target.py``: which waiting job the control room's y/n/a answers;
* ``answer.py``: the one path every answer takes (`orchestrate answer`, the
  control room's y/n/a and its inbox);
* ``decision.py``: the decision protocol, for agents that wait for a decision
  (Claude's permission hook, Codex's app-server requests); the record itself is
  the registry's (``registry/decisions.py``);
* ``keys.py``: the fallback, the agent's own keys typed into its dialog;
* ``dialog.py``, ``meaning.py``, ``selection.py``: for agents whose dialogs are
  selection lists, the fallback by meaning: the options and marker read from the
  screen, the option meaning the answer chosen, the marker checked before Enter,
  and nothing pressed for a dialog it does not recognise;
* ``confirm.py``: the one confirmation that the agent took the answer.

What stays with each agent is its own: the keys and screen rules in its
adapter (``app/agents/<kind>.py``) and the hook output it reads a decision in.

Nothing is imported here: the hook loads ``decision.py`` on the agent's
critical path, and must not pay for the rest.
"""
