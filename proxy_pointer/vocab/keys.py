"""The text keys every stage compares titles and words by, in one place, with one plural
rule (:func:`singular`).

Each key says what two texts must share to count as the same: :func:`words` (a phrase's
words, as the vocabulary, user synonyms and query understanding compare phrases: "&" kept
inside a word, a possessive "'s" dropped), :func:`heading_key` (a heading as filters and
the stores' breadcrumb column compare it), :func:`title_key` (letters and digits of
singular words, as the PDF contents placement compares a listed title with a printed one),
:func:`title_words` (the words a heading names something by, as a question naming "the
cash flow statement" is matched) and :func:`alnum` (letters and digits alone). The noise
rules' key, a title without its numbering, is theirs (:func:`~proxy_pointer.parse.noise.
bare_title`): its numbering words come from the vocabulary. All run in time linear in
their input.
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["TITLE_FILLER", "alnum", "heading_key", "singular", "title_key", "title_words",
           "word_spans", "words"]

_WORD = re.compile(r"\w+")
_ALNUM_WORD = re.compile(r"[a-z0-9]+")
#: Words a title may carry without naming anything in particular.
TITLE_FILLER = frozenset({
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "our",
    "the", "to", "with", "consolidated", "condensed", "combined", "unaudited", "interim"})


def heading_key(title: str) -> str:
    """A heading title as filters compare it: inline markup dropped, spaces collapsed,
    case-folded (``"**Item 7.**  MD&A"`` -> ``"item 7. md&a"``)."""
    return " ".join(re.sub(r"[*_`#]", "", title).split()).casefold()


def singular(word: str) -> str:
    """A lower-case word without a plural ``s``: words over three letters not ending in
    "ss" ("statements" -> "statement", "loss" and "business" kept, "gas" kept)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


_PHRASE_WORD = re.compile(r"[a-z0-9]+(?:&[a-z0-9]+)*")


def word_spans(text: str) -> list[tuple[str, int, int]]:
    """``(word, start, end)`` for each word of ``text`` as :func:`words` reads it, with its
    character span in ``text``."""
    low = text.lower().replace("’", "'")
    out = []
    for m in _PHRASE_WORD.finditer(low):
        w = m.group(0)
        if w == "s" and m.start() > 0 and low[m.start() - 1] == "'":
            continue  # the possessive 's of "company's"
        out.append((singular(w), m.start(), m.end()))
    return out


def words(text: str) -> tuple[str, ...]:
    """The words of ``text`` as phrases are compared: lower-case letters and digits, "&"
    kept inside a word, a possessive "'s" and a plural "s" dropped, hyphens and punctuation
    as spaces ("Shareholders' Equity" -> shareholder, equity; "capital-intensive" ->
    capital, intensive; "PP&E" -> pp&e)."""
    return tuple(w for w, _, _ in word_spans(text))


@lru_cache(maxsize=1 << 16)  # a PDF page's lines are compared with every entry naming it
def title_key(text: str) -> str:
    """A title's key for tolerant matching: lower-case letters and digits only, each word's
    plural ``s`` and a possessive ``'s`` dropped ("Statements of Cash Flows" and
    "STATEMENT OF CASH FLOW" share one key)."""
    words = (singular(w) for w in _ALNUM_WORD.findall(text.lower()))
    return "".join(w for w in words if w != "s")


@lru_cache(maxsize=1 << 14)
def title_words(title: str) -> frozenset[str]:
    """The words a heading names something by: lower-case, plural ``s`` dropped, without
    fillers ("Consolidated Statements of Cash Flows" -> statement, cash, flow)."""
    return frozenset(singular(w) for w in _WORD.findall(title.lower())) - TITLE_FILLER


def alnum(text: str) -> str:
    """Lower-case letters and digits alone (``"Item 7A."`` -> ``"item7a"``)."""
    return re.sub(r"[^0-9a-z]+", "", text.lower())
