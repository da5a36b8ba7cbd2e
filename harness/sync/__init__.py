"""``python -m harness.sync`` (``harness sync``): an entry point only, in
``__main__.py``; the command is :mod:`harness.commands.sync`."""
