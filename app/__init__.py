"""The parts a person touches: the `orchestrate` CLI, the TUI and the tmux driver."""
