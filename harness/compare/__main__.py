"""``python -m harness.compare``: see :mod:`harness.compare.cli`."""

import sys

from harness.compare.cli import main

sys.exit(main())
