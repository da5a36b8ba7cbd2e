"""``python -m harness.compare``: the same as ``harness compare``; the command is
:mod:`harness.commands.compare`."""

import sys

from harness.commands.base import run_command
from harness.commands.compare import main

sys.exit(run_command(main))
