"""``python -m harness.eval``: the same as ``harness eval``; the command is
:mod:`harness.commands.eval`."""

import sys

from harness.commands.base import run_command
from harness.commands.eval import main

sys.exit(run_command(main))
