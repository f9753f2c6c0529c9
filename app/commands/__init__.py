"""One module per `orchestrate` command group, imported only when that command runs."""
