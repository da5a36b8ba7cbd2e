"""``python -m harness.judgments`` (``harness judgments``): an entry point only, in
``__main__.py``; the command is :mod:`harness.commands.judgments`."""
