"""What a question means, from the vocabulary and the user's synonyms: its expansion.

A question that names a concept ("Does 3M have positive working capital?") and not the
statement that answers it is expanded with what answers it (:func:`understand`):

* the **statements** the concept needs, first needed first (the balance sheet; the income
  statement and the balance sheet for inventory turnover), which the retriever ranks and
  title-boosts as if the question named them;
* the **line items** it needs, as filings print them ("total current assets", "total
  current liabilities"), added to the searched text (BM25 and the dense query) and so to
  the words the packer picks a statement's rows by;
* line items written another way ("capex", "COGS", "PP&E") get the printed names beside
  them, by the same one-way rules a user's synonyms file holds; a user's
  :class:`~.synonyms.Synonyms` are applied first.

:class:`Understanding` says what was done; every result carries it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .filings import FILINGS, Concept, Vocabulary
from .keys import word_spans, words
from .phrases import PhraseSet
from .synonyms import Applied, Rule, Synonyms

__all__ = ["Understanding", "concept_phrases", "item_synonyms", "understand"]


@dataclass(frozen=True)
class Understanding:
    """How a question was expanded before the search: the ``concepts`` it names (keys of
    the vocabulary), the ``statements`` that answer them (keys, first needed first), the
    line ``items`` added, the synonym rules that fired (``synonyms``), the ``searched``
    text ("" when it is the question) and the refs of the ``sections`` the statements
    were found as (set by the retriever)."""

    concepts: tuple[str, ...] = ()
    statements: tuple[str, ...] = ()
    items: tuple[str, ...] = ()
    synonyms: tuple[Applied, ...] = ()
    searched: str = ""
    sections: tuple[str, ...] = field(default=())
    dense: str = ""  # the text embedded, where it differs from ``searched``

    def __bool__(self) -> bool:
        return bool(self.concepts or self.statements or self.synonyms)

    def text(self, question: str) -> str:
        """The text searched for ``question`` (by BM25, and the packer's row words)."""
        return self.searched or question

    def embedded(self, question: str) -> str:
        """The text embedded for ``question``'s dense query."""
        return self.dense or self.text(question)

    @property
    def labels(self) -> tuple[str, ...]:
        """The statements as people name them ("balance sheet")."""
        return tuple(FILINGS.statement(s).label for s in self.statements)

    def describe(self) -> str:
        """One line for people: "concept working_capital: balance sheet (found as
        10k.md#0042); items total current assets, ...; synonyms PTO + paid time off"."""
        parts = []
        if self.statements:
            found = f" (found as {', '.join(self.sections)})" if self.sections else (
                " (not found as sections)")
            named = (f"concept {', '.join(self.concepts)}" if self.concepts
                     else "line items over several periods")
            parts.append(f"{named}: {', '.join(self.labels)}{found}")
        if self.items:
            parts.append(f"items {', '.join(self.items)}")
        for a in self.synonyms:
            parts.append(f"synonyms {a.written} {'=>' if a.replaced else '+'} "
                         f"{', '.join(a.added)}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, the ``expansion`` field of a result."""
        return {"concepts": list(self.concepts),
                "statements": list(self.labels),
                "items": list(self.items),
                "synonyms": [{"written": a.written, "added": list(a.added),
                              "replaced": a.replaced} for a in self.synonyms],
                "searched": self.searched, "sections": list(self.sections)}


@lru_cache(maxsize=4)
def concept_phrases(vocab: Vocabulary) -> PhraseSet[Concept]:
    """Every phrase that names a concept -> the concept."""
    return PhraseSet((w, c) for c in vocab.concepts for w in c.written)


@lru_cache(maxsize=4)
def item_phrases(vocab: Vocabulary) -> PhraseSet[str]:
    """Every name and way of writing of a line item -> its key."""
    return PhraseSet((n, i.key) for i in vocab.items for n in (*i.names, *i.written))


@lru_cache(maxsize=4)
def item_synonyms(vocab: Vocabulary) -> Synonyms:
    """The vocabulary's line items as one-way synonym rules: each way a question writes an
    item ("capex") is searched with the names filings print it by beside it
    (``capex => capex, purchases of property, plant and equipment, ...``)."""
    # A printed name is a rule of its own that adds nothing, so that the longest phrase
    # wins: "total current assets" is not "current assets" written another way, and
    # "purchases of property, plant and equipment" holds no "property, plant and equipment".
    # Where a way of writing is also a printed name ("capital expenditure"), its rule comes
    # first and wins.
    rules = [Rule((w,), (w, *i.names), "filings.toml") for i in vocab.items for w in i.written]
    rules += [Rule((n,), (), "filings.toml") for i in vocab.items for n in i.names]
    return Synonyms(rules, source="filings.toml")


def understand(question: str, *, vocabulary: Vocabulary | None = FILINGS,
               synonyms: Synonyms | None = None, spans: bool = False,
               read: list[tuple[str, int, int]] | None = None) -> Understanding:
    """The :class:`Understanding` of ``question``: the user's ``synonyms`` first, then (unless
    ``vocabulary`` is None) the concepts and line items of the filing vocabulary. A
    question that ``spans`` periods and names no concept but line items ("How did net
    sales change from 2020 to 2022?") needs the statements that print them, whose
    comparative columns hold the years. ``read``: the question's words
    (:func:`~.keys.word_spans`), when the caller has read them, so they are read once.
    Linear in the question's length (:class:`~.phrases.PhraseSet`)."""
    if read is None:
        read = word_spans(question)
    text, applied = synonyms.apply(question, spans=read) if synonyms else (question, [])
    if vocabulary is None:
        return Understanding(synonyms=tuple(applied), searched=text if applied else "")
    concepts = list(dict.fromkeys(m.value for m in concept_phrases(vocabulary).find(
        question, spans=read)))
    text, more = item_synonyms(vocabulary).apply(text, spans=read if text == question else None)
    applied.extend(more)
    statements = list(dict.fromkeys(s for c in concepts for s in c.statements))
    items = list(dict.fromkeys(i for c in concepts for i in c.items))
    if spans and not concepts:
        items = list(dict.fromkeys(m.value for m in item_phrases(vocabulary).find(
            question, longest=True, spans=read)))
        statements = list(dict.fromkeys(vocabulary.item(i).statement for i in items))
    said = [w for w, _, _ in read] if text == question else words(text)
    have = " " + " ".join(said) + " "
    names = [[n for n in vocabulary.item(key).names if f" {' '.join(words(n))} " not in have]
             for key in items]
    dense = text
    if any(names):
        # BM25 gets every printed name; the dense query the first of each item, so that
        # the question's own words still weigh most in its vector
        lexical = f"{text} ({'; '.join(dict.fromkeys(n for ns in names for n in ns))})"
        dense = f"{text} ({'; '.join(dict.fromkeys(ns[0] for ns in names if ns))})"
        text = lexical
    if not (concepts or applied or statements):
        return Understanding()
    return Understanding(tuple(c.key for c in concepts), tuple(statements), tuple(items),
                     tuple(applied), text if text != question else "",
                     dense=dense if dense != text else "")
