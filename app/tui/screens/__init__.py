"""The control room's screens, one per module."""
