"""``python -m harness.reproduce``: the same as ``harness reproduce``; the command is
:mod:`harness.commands.reproduce`."""

import sys

from harness.commands.base import run_command
from harness.commands.reproduce import main

sys.exit(run_command(main))
