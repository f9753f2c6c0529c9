"""The test suite's shared fixtures, one pytest plugin per resource, each written once.

``tests/conftest.py`` loads them (``pytest_plugins``) for every tier:

* ``tests.plugin.tmux``: a private tmux server per test, reaped however the test ends;
* ``tests.plugin.mosquitto``: a real Mosquitto on a free loopback port per test;
* ``tests.plugin.models``: scripted fake model servers for real agent CLIs;
* ``tests.plugin.orchestrator``: an Orchestrator on the test's state dir and tmux server.
"""
