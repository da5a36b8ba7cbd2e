"""``python -m harness.eval`` (``harness eval``): an entry point only, in
``__main__.py``; the command is :mod:`harness.commands.eval`."""
