"""Heading levels from numbering: ``PART II``, ``Item 7A.``, ``Note 12``, ``3.2.1 Results``.

Converted formats rarely say how deep a heading is: a PDF has font sizes, an EDGAR HTML
filing bold spans, and both number their headings. :func:`numbering_rank` reads the rank a
numbering pattern implies (a part is above an item, an item above a note, ``3`` above
``3.2``); :func:`levels` turns the ranks one document uses into Markdown levels 1-6, so a
report with parts, items and notes gets ``#``/``##``/``###`` and a paper numbered ``1``,
``1.1`` gets ``#``/``##``. Rules are about numbering in general, not one kind of filing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..vocab.filings import FILINGS

__all__ = ["NUMBERED_HEADING", "TOP_RANK", "levels", "numbering_rank"]

_ROMAN = r"(?:[IVXLC]+)"
_NUM = rf"(?:\d+[A-Z]?|{_ROMAN})"
#: After a label numbered by a letter or not at all ("Appendix A", "EXHIBIT").
_LETTER = r"(?:\s+[A-Z0-9]+\b|\s*$)"


def _rules() -> tuple[tuple[int, re.Pattern[str]], ...]:
    """(rank, pattern) per rank and numbering of the vocabulary's ranked label words (a
    rank's numbered words first): lower ranks sit higher in the tree. Each pattern reads a
    heading's start."""
    groups: dict[tuple[int, bool], list[str]] = {}
    for lab in FILINGS.ranked_labels:
        assert lab.rank is not None
        groups.setdefault((lab.rank, lab.lettered), []).extend(lab.cased)
    return tuple((rank, re.compile(rf"^(?:{'|'.join(words)})"
                                   + (_LETTER if lettered else rf"\s+{_NUM}\b")))
                 for (rank, lettered), words in sorted(groups.items()))


_RULES = _rules()
#: The rank of a part, book or volume: nothing in a document is above it.
TOP_RANK = min(rank for rank, _ in _RULES)
# "3 Results", "3. Results", "3.2 Data", "A.1 Proofs": depth = number of parts.
# "1A. Risk Factors" (a filing's item without its label) is a number too, with its dot.
_DECIMAL = re.compile(r"^(?P<num>(?:\d{1,2}|[A-Z])(?:\.\d{1,2}){0,4}|\d{1,2}[A-Z](?=\.))\.?\s+"
                      r"(?=[A-Za-z(\"'])")
#: Any heading :func:`numbering_rank` recognises.
NUMBERED_HEADING = re.compile("|".join(p.pattern for _, p in _RULES)
                              + "|" + _DECIMAL.pattern)


def numbering_rank(text: str) -> int | None:
    """The rank a heading's numbering implies (lower = higher in the tree), or ``None``.

    >>> numbering_rank("PART II"), numbering_rank("Item 7A. Risk"), numbering_rank("Note 3")
    (10, 30, 40)
    >>> numbering_rank("3.2 Data"), numbering_rank("3 Results"), numbering_rank("Revenue")
    (52, 51, None)
    """
    s = text.strip().lstrip("#").strip()
    for rank, pattern in _RULES:
        if pattern.match(s):
            return rank
    m = _DECIMAL.match(s)
    if m is None:
        return None
    num = m["num"]
    if len(num) == 1 and num.isalpha() and num not in "ABCDEFGH":
        return None  # "I think", "Y axis": a lone capital is a list marker at most
    return 50 + num.count(".") + 1


def levels(ranks: Sequence[int | float | None], *, top: int = 1) -> list[int | None]:
    """Markdown levels (``top``..6) for headings of the given ranks, in document order.

    The distinct ranks used are sorted and numbered from ``top``: only ranks that occur take
    a level, so a document numbered only ``1``, ``1.1`` starts at ``#``. ``None`` stays
    ``None``. Ranks past level 6 share level 6.

    >>> levels([10, 30, 40, 40, 30, None])
    [1, 2, 3, 3, 2, None]
    """
    used = sorted({r for r in ranks if r is not None})
    level = {r: min(6, top + i) for i, r in enumerate(used)}
    return [None if r is None else level[r] for r in ranks]
