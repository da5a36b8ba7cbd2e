"""``python -m harness.judgments``: the same as ``harness judgments``; the command is
:mod:`harness.commands.judgments`."""

import sys

from harness.commands.base import run_command
from harness.commands.judgments import main

sys.exit(run_command(main))
