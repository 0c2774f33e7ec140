"""``python -m proxy_pointer.cli``: the command line, as the ``proxy-pointer`` script runs it."""

import sys

from .commands import main

sys.exit(main())
