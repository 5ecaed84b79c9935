"""``python -m ownergc``: the same as the ``ownergc`` command."""

import sys

from ownergc.cli import main

sys.exit(main())
