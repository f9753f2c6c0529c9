"""`python -m app` is `orchestrate`."""

from app.cli import main

main()
