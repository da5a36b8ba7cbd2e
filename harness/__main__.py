"""``python -m harness``: the same command line as ``harness`` (:mod:`harness.commands.dispatch`)."""

import sys

from harness.commands.dispatch import main

sys.exit(main())
