"""Token usage of the agents' jobs, read from each CLI's own transcript and recorded in
the registry (``sync``), for the history's cost and token figures."""
