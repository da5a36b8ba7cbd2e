"""``python -m harness.scored_run`` (``harness scored-run``): an entry point only, in
``__main__.py``; the command is :mod:`harness.commands.scored_run`."""
