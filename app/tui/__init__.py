"""The control room TUI: `orchestrate watch`."""
