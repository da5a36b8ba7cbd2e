"""``python -m harness.sync``: the same as ``harness sync``; the command is
:mod:`harness.commands.sync`."""

import sys

from harness.commands.base import run_command
from harness.commands.sync import main

sys.exit(run_command(main))
