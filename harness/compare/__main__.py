"""``python -m harness.compare``: see :mod:`harness.compare.cli`."""

import sys

from harness.cli import run_command
from harness.compare.cli import main

sys.exit(run_command(main))
