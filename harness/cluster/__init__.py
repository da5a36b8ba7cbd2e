"""``python -m harness.cluster`` (``harness cluster``): an entry point only, in
``__main__.py``; the command is :mod:`harness.commands.cluster`."""
