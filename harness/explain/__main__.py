"""``python -m harness.explain``: the same as ``harness explain``; the command is
:mod:`harness.commands.explain`."""

import sys

from harness.commands.base import run_command
from harness.commands.explain import main

sys.exit(run_command(main))
