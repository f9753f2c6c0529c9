"""`python -m app` is `orchestrate`."""

from app.entry import main

main()
