"""Supervision: watching running agents and telling a person what needs them.

``observer.py`` judges one agent from its pane (exit status, screen, status
sequences); ``reconcile.py`` runs those judgements over every running job and
recorded session; ``supervisor.py`` keeps one background process doing passes
while agents run; ``notify.py`` rings the bell and runs the notify command.
Nothing here imports the control room: it is handed the orchestrator as a Protocol.
"""
