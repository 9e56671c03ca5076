"""``python -m perfsuite.cli``: the ``perfsuite`` command."""

import sys

from perfsuite.cli import main

sys.exit(main())
