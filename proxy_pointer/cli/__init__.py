"""The command line: ``proxy-pointer convert | tree | index | query | section | documents | ask |
serve | mcp``. :mod:`.commands` parses arguments and prints; :mod:`.progress` shows indexing
progress. Every error the library raises becomes one readable line on stderr.
"""

from __future__ import annotations

from .commands import main

__all__ = ["main"]
