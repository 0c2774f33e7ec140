"""Loose passage matching, for gold text that another extractor wrote (PDF filings).

The rule of ``financebench-dev/SOURCE.md``: flatten both sides (:func:`flatten`: case-fold,
remove every character that is not a letter or digit, which also drops thousands separators;
HTML tags and comments go first, as markup, or LlamaParse's ``<td>`` table cells would
flatten to the letters "td" between every two cells), then a passage is found when at least
half of its distinct 14-character substrings (:func:`shingles`) occur in the flattened
context (:func:`loose_found`). On the FinanceBench filings the gold page's plain text finds
every passage this way and a random page none, while spacing ("CONSOLIDATEDBALANCESHEETS"),
hyphenation and table layout stop mattering."""

from __future__ import annotations

import re

__all__ = ["SHINGLE", "flatten", "loose_found", "shingles"]

#: Length of the substrings loose matching compares.
SHINGLE = 14


_MARKUP = re.compile(r"<!--.*?-->|</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>", re.S)


def flatten(text: str) -> str:
    """Case-folded, with HTML tags and comments and then every character that is not a
    letter or digit removed (``"<td>Net sales</td><td>$ 34,229</td>"`` -> ``"netsales34229"``).
    """
    return "".join(c for c in _MARKUP.sub(" ", text).casefold() if c.isalnum())


def shingles(flat: str, n: int = SHINGLE) -> set[str]:
    """The distinct ``n``-character substrings of ``flat`` (none when it is shorter)."""
    return {flat[i:i + n] for i in range(len(flat) - n + 1)}


def loose_found(passage: str, context: str, *, context_shingles: set[str] | None = None
                ) -> bool:
    """Whether ``passage`` is loosely in ``context``, both already :func:`flatten`-ed.

    Found when at least half of the passage's distinct 14-character substrings occur in the
    context; a passage shorter than 14 characters must occur whole; an empty one is never
    found. ``context_shingles`` may pass ``shingles(context)``, computed once for many
    passages.
    """
    if not passage:
        return False
    if len(passage) < SHINGLE:
        return passage in context
    mine = shingles(passage)
    have = context_shingles if context_shingles is not None else shingles(context)
    return 2 * len(mine & have) >= len(mine)
