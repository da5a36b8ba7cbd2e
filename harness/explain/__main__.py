"""``python -m harness.explain``: see :mod:`harness.explain.cli`."""

import sys

from harness.cli import run_command
from harness.explain.cli import main

sys.exit(run_command(main))
