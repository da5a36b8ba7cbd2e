"""``python -m harness.cluster``: the same as ``harness cluster``; the command is
:mod:`harness.commands.cluster`."""

import sys

from harness.commands.base import run_command
from harness.commands.cluster import main

sys.exit(run_command(main))
