"""Jobs in their own git work tree, and their review: the flow, merging, diffs, cleanup."""
