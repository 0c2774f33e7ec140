"""Grouping a PDF page's blocks into tables: one block per table, its column header on top.

The PDF converter writes a page as blocks: headings, paragraphs and runs of table rows (one
row per line, :func:`~proxy_pointer.text.rows.is_table_row`). A financial statement comes
out in pieces that way: its label lines without numbers ("Current assets", "Cash flows from
investing activities") are paragraphs that cut the rows apart, and the lines above the first
row that say what the columns are ("Years ended December 31", "(Millions)", "2022 2021") are
blocks of their own. Retrieval then hands over rows without the header that says which year
a number belongs to. :func:`group_tables` joins them back: a table is its header lines (at
most ``_HEAD_LINES`` short lines that are not prose, just above its first row) + its runs of
rows + the short label lines between two runs, written as consecutive lines (one row per
line). Headings and prose paragraphs (long, or ending a sentence) are never taken in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["group_tables"]

_HEAD_LINES = 4  # lines above a table's first row that may be its header
_LABELS = 3  # label lines in a row between two runs of rows
_LABEL_WORDS = 20  # a label between rows ("Adjustments to reconcile net income to ...")
_HEAD_WORDS = 16  # a header line above the rows ("Years ended December 31")
_SENTENCE_END = re.compile(r"[.!?]['\"”’)]?$")


def group_tables(blocks: Iterable[tuple[str, list[str]]]) -> Iterator[list[str]]:
    """A page's blocks, ``(kind, lines)`` with kind ``"heading"``, ``"para"`` or ``"rows"``,
    with each table's pieces joined into one block (module docstring)."""
    items = list(blocks)
    out: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(items):
        kind, lines = items[i]
        if kind != "rows":
            out.append((kind, lines))
            i += 1
            continue
        table = list(lines)
        i += 1
        while i < len(items):
            j = i
            while j < len(items) and j - i < _LABELS and _is_label(items[j], _LABEL_WORDS, ":"):
                j += 1
            if j == len(items) or items[j][0] != "rows":
                break
            table += [line for _, ls in items[i:j + 1] for line in ls]
            i = j + 1
        head: list[str] = []
        if len(table) >= 2:  # a lone row is no table: it takes no header
            while (out and len(head) < _HEAD_LINES and out[-1][0] == "para"
                   and len(out[-1][1]) + len(head) <= _HEAD_LINES
                   and _is_label(out[-1], _HEAD_WORDS, "")):
                head = out.pop()[1] + head
        out.append(("rows", head + table))
    for _, lines in out:
        yield lines


def _is_label(block: tuple[str, list[str]], words: int, may_end: str) -> bool:
    """A paragraph that is a table's label line, not prose: short, and no sentence (nor a
    lead-in ending in ``:`` or ``;`` unless ``may_end`` allows it) ends it."""
    kind, lines = block
    if kind != "para" or len(lines) != 1:
        return False
    text = lines[0].rstrip()
    if not text or len(text.split()) > words or _SENTENCE_END.search(text):
        return False
    return not (text[-1] in ":;" and text[-1] not in may_end)
