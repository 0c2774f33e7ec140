"""Retrieval metrics of one context against a question's gold (FORMAT.md "Counting a hit").

Text is compared after :func:`normalize` (whitespace runs collapsed to one space, stripped,
case-folded). For one question and one packed context:

* ``any_hit``: the context contains at least one gold passage of any annotator;
* ``full_hit``: it contains every passage of at least one annotator;
* ``evidence_recall``: per annotator the share of its passages contained, best annotator;
* ``rr`` (reciprocal rank, averaged to MRR): 1/r for the smallest r such that the first r
  passages of the context already contain a gold passage, 0 when none does. So ``rr > 0``
  exactly when ``any_hit``, and a passage split over two adjacent windows counts at the rank
  where it becomes complete;
* ``section_hit``: a returned passage's heading path equals a gold path or is an ancestor of
  one (heading titles compared with markup reduced, as the parser reduces them);
  ``section_exact``: equal only. Passages without a path (text windows) make no claim about
  sections, so for window methods both are ``None`` (n/a) rather than mapped to a section.

**Loose matching** (``matching="loose"``, the rule of ``financebench-dev/SOURCE.md`` for PDF
filings, whose gold text came from another extractor): both sides are flattened
(:func:`flatten`: case-folded, every character that is not a letter or digit removed, which
also drops thousands separators), and a passage is found when at least half of its distinct
14-character substrings (:func:`shingles`) occur in the flattened context; a flattened
passage shorter than 14 characters must occur whole. :func:`loose_found` applies it.

``page_hit`` (datasets whose documents have pages, questions with ``meta.pages``): a packed
piece of the question's document covers one of the gold pages (:attr:`Piece.covered_pages`).

**Only the question's own document counts** (``financebench-dev/SOURCE.md``): over many
documents a 10-K repeats its neighbours' tables, so evidence found in a piece of another
document is no hit (its place in the ranking still counts for ``rr``). ``doc_first``: the
first piece comes from the question's document (what routing must get right).

A question without evidence yields ``None`` for the evidence metrics, one without sections
``None`` for the section metrics, one without gold pages ``None`` for ``page_hit``;
:func:`aggregate` averages over the questions that apply.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from proxy_pointer.parse.tree import build_tree

from .context import Context
from .dataset import Question
from .matching import SHINGLE, flatten, loose_found, shingles

__all__ = [
    "MATCHINGS",
    "SHINGLE",
    "QuestionScore",
    "aggregate",
    "flatten",
    "loose_found",
    "normalize",
    "normalize_path",
    "score_context",
    "shingles",
]

#: How gold passages are looked up in a context: verbatim after :func:`normalize`, or loosely.
MATCHINGS = ("exact", "loose")


def normalize(text: str) -> str:
    """Whitespace runs collapsed to one space, stripped, case-folded."""
    return " ".join(text.split()).casefold()


@functools.lru_cache(maxsize=65536)
def _plain_title(title: str) -> str:
    # Gold paths keep inline markup ("**Risk**"); the tree parser strips it. Reduce gold
    # titles with the same parser so both sides compare alike.
    tree = build_tree(f"# {title}\n", doc_id="title")
    heads = [n for n in tree.nodes if n.level > 0]
    return normalize(heads[0].title if heads else title)


def normalize_path(path: Sequence[str]) -> tuple[str, ...]:
    """A heading path with each title's markup reduced and :func:`normalize` applied."""
    return tuple(_plain_title(t) for t in path)


@dataclass(frozen=True)
class QuestionScore:
    """The metrics of one question at one budget (``None``: does not apply, see module doc)."""

    question_id: str
    any_hit: bool | None
    full_hit: bool | None
    evidence_recall: float | None
    rr: float | None
    section_hit: bool | None
    section_exact: bool | None
    tokens: int
    pieces: int
    cut: bool
    page_hit: bool | None = None
    doc_first: bool | None = None


def _finder(matching: str) -> tuple[Callable[[str], str], str,
                                    Callable[[str], Callable[[str], bool]]]:
    """``(prepare, joiner, contains)`` of a matching: ``contains(context)(passage)``."""
    if matching == "exact":
        return normalize, " ", lambda whole: lambda p: p in whole

    def loose(whole: str) -> Callable[[str], bool]:
        have = shingles(whole)
        return lambda p: loose_found(p, whole, context_shingles=have)

    return flatten, "", loose


def score_context(question: Question, context: Context, *, sections: bool = True,
                  matching: str = "exact", pages: bool = False) -> QuestionScore:
    """Score ``context`` (already packed under its budget) against ``question``'s gold.

    ``sections`` says whether the method points at sections (its pieces carry heading
    paths); when false the section metrics are ``None`` (n/a). ``matching`` is ``"exact"``
    or ``"loose"`` (module docstring). ``pages`` says whether the pieces carry the pages
    they came from; when true, ``page_hit`` is scored for questions with ``meta.pages``.
    Raises ValueError for an unknown ``matching``.
    """
    if matching not in MATCHINGS:
        raise ValueError(f"unknown matching {matching!r}; choose from {', '.join(MATCHINGS)}")
    prepare, joiner, contains = _finder(matching)
    # Pieces of other documents stay in place (ranks) but hold nothing.
    parts = [n for n in (prepare(p.text) if p.doc_id == question.doc_id else " "
                         for p in context.pieces) if n]
    whole = joiner.join(parts)
    any_hit = full_hit = recall = rr = None
    if question.evidence:
        annotators = [[prepare(p) for p in ann] for ann in question.evidence]
        in_whole = contains(whole)
        found = [[in_whole(p) for p in ann] for ann in annotators]
        any_hit = any(any(f) for f in found)
        full_hit = any(all(f) for f in found)
        recall = max(sum(f) / len(f) for f in found)
        rr = 0.0
        if any_hit:
            passages = {p for ann in annotators for p in ann}
            for r in range(1, len(parts) + 1):
                in_prefix = contains(joiner.join(parts[:r]))
                if any(in_prefix(p) for p in passages):
                    rr = 1.0 / r
                    break
    page_hit = None
    gold_pages = question.meta.get("pages") if pages else None
    if gold_pages:
        gold = {int(g) for g in gold_pages}
        page_hit = any(p.doc_id == question.doc_id and not gold.isdisjoint(p.covered_pages)
                       for p in context.pieces)
    section_hit = section_exact = None
    if question.sections and sections:
        gold = [normalize_path(g) for g in question.sections]
        got = [normalize_path(p.path) for p in context.pieces if p.path]
        section_exact = any(p == g for p in got for g in gold)
        section_hit = any(g[: len(p)] == p for p in got for g in gold)
    return QuestionScore(
        question_id=question.id, any_hit=any_hit, full_hit=full_hit, evidence_recall=recall,
        rr=rr, section_hit=section_hit, section_exact=section_exact, tokens=context.tokens,
        pieces=len(context.pieces), cut=context.cut, page_hit=page_hit,
        doc_first=context.pieces[0].doc_id == question.doc_id if context.pieces else False,
    )


_METRICS = ("any_hit", "full_hit", "evidence_recall", "rr", "section_hit", "section_exact",
            "page_hit", "doc_first")


def aggregate(scores: Iterable[QuestionScore]) -> dict:
    """Means of each metric over the questions it applies to; ``mrr`` is the mean of ``rr``.

    Returns a dict with ``questions``, each metric (``None`` when no question applies) with
    its ``<metric>_n`` count, ``tokens_mean`` and ``cut_share``.
    """
    rows = list(scores)
    out: dict = {"questions": len(rows)}
    for name in _METRICS:
        vals = [float(getattr(s, name)) for s in rows if getattr(s, name) is not None]
        key = "mrr" if name == "rr" else name
        out[key] = sum(vals) / len(vals) if vals else None
        out[f"{key}_n"] = len(vals)
    out["tokens_mean"] = sum(s.tokens for s in rows) / len(rows) if rows else 0.0
    out["cut_share"] = sum(s.cut for s in rows) / len(rows) if rows else 0.0
    return out
