"""``python -m harness``: the same command line as ``harness`` (:mod:`harness.commands.dispatch`)."""

import sys

from harness.commands.dispatch import main

if __name__ == "__main__":  # not when a worker process imports the parent's main module
    sys.exit(main())
