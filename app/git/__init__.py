"""Git, driven as a subprocess with argument lists: worktrees, snapshots, diffs and merges."""
