"""`orchestrate doctor --self-test`: the installed agents driven offline through
orchestrate's own paths, against scripted model servers (``models/``) that the tests
use too, in a private tmux with a throwaway home (``offline.py``, ``run.py``)."""
