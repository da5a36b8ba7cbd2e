"""``python -m harness.scored_run``: the same as ``harness scored-run``; the command is
:mod:`harness.commands.scored_run`."""

import sys

from harness.commands.base import run_command
from harness.commands.scored_run import main

sys.exit(run_command(main))
