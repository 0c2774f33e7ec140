"""What a table row looks like in plain text: the one rule the PDF converter (which lays out a
statement's rows one per line) and the Markdown block reader (which keeps such rows with
their header) both read. Every pattern runs in time linear in the line.
"""

from __future__ import annotations

import re

__all__ = ["CELL", "NUMBER", "is_table_row", "numbers"]

#: An amount or number in running text: "1,234", "(5.6)", "$7", "12%".
NUMBER = re.compile(r"(?<![A-Za-z])\(?\$?\d[\d,.]*\)?%?(?![A-Za-z])")
#: One cell of a table row: an amount, a dash for nil, "n/m" or "n/a".
CELL = re.compile(r"^(?:\(?\$?\d[\d,.]*\)?%?|[-–—]+|n/?m|n/?a)$", re.IGNORECASE)
_CURRENCY = {"$", "€", "£", "%"}


def numbers(text: str) -> int:
    """How many amounts or numbers ``text`` holds."""
    return len(NUMBER.findall(text))


def is_table_row(text: str) -> bool:
    """A line ending in two numbers (or dashes), or mostly numbers: a table row."""
    tokens = [t for t in text.split() if t not in _CURRENCY]
    if len(tokens) >= 2 and all(CELL.match(t) for t in tokens[-2:]):
        return True
    n = numbers(text)
    return n >= 2 and 3 * n >= len(tokens)
