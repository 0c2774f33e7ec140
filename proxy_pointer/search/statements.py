"""The statements a question's concepts need, ranked first as if the question named them.

:func:`~proxy_pointer.vocab.understanding.understand` says which statements answer a
question ("working capital": the balance sheet). :func:`boost_statements` finds them as
sections of the documents the search already ranks first and moves their chunks to the
front of the chunk ranking, first needed first, each statement's closest chunk before any
statement's others, so each statement becomes a selected section and the packer hands it
over (whole, or as its column headers and the rows whose words the question and its line
items use). Only the first ``docs`` documents of the ranking get statements: the
question's document is the search's (or routing's) choice, never this step's.

A document's statement sections are found once per generation (:meth:`~.derived.
Derived.per_document`): each node whose title is a statement's, discussion's or note's
title (:meth:`~proxy_pointer.vocab.filings.Vocabulary.section_kinds`), with the chunk rows
of its subtree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..vocab.filings import FILINGS

if TYPE_CHECKING:
    from .corpus import Corpus

__all__ = ["boost_statements", "statement_sections"]

_LEAD = 3  # top-ranked chunks whose documents get statements
_DOCS = 2  # at most this many documents


def statement_sections(index: Corpus, doc_id: str) -> dict[str, list[tuple[str, list[int]]]]:
    """Statement key -> ``(node_id, chunk rows of its subtree)`` of each section of
    ``doc_id`` whose title is that statement's, in document order; a statement of another
    entity than the filer (a parent-only schedule: :meth:`~proxy_pointer.vocab.filings.
    Vocabulary.secondary`) only where the filing has no other."""
    def make() -> dict[str, list[tuple[str, list[int]]]]:
        tree = index.tree(doc_id)
        kinds = {n.node_id: k for n in tree.nodes if (k := FILINGS.section_kinds(n.title))}
        if not kinds:
            return {}
        rows = index.rows_for([doc_id])
        owner: dict[str, list[int]] = {}
        for r, p in zip(rows.tolist(), index.pointers(rows), strict=True):
            if p[1] is not None:
                owner.setdefault(p[1], []).append(r)
        out: dict[str, list[tuple[str, list[int]]]] = {}
        later: dict[str, list[tuple[str, list[int]]]] = {}
        for n in tree.nodes:
            if n.node_id not in kinds:
                continue
            sub = [r for nid in tree.subtree(n.node_id) for r in owner.get(nid, ())]
            if sub:
                into = later if FILINGS.secondary(n.title) else out
                for key in sorted(kinds[n.node_id]):
                    into.setdefault(key, []).append((n.node_id, sorted(sub)))
        for key, found in later.items():
            out.setdefault(key, found)
        return out
    return index.derived.per_document("statements", doc_id, make)


def boost_statements(index: Corpus, ranked: list[tuple[int, float]], statements: Sequence[str],
                     query: np.ndarray, rows: np.ndarray | None
                     ) -> tuple[list[tuple[int, float]], list[tuple[str, str]]]:
    """``ranked`` with the chunks of each needed statement's section moved to the front,
    the first needed first (for each of the first documents of the ranking, the section of
    that statement whose best chunk is closest to ``query``); ``rows``: the rows the
    request may search (``None``: all). Returns the new ranking and ``(doc_id, node_id)``
    of each section moved."""
    if not statements or not ranked:
        return ranked, []
    docs = list(dict.fromkeys(p[0] for p in index.pointers([r for r, _ in ranked[:_LEAD]])))
    allowed = None if rows is None else set(rows.tolist())
    scores = dict(ranked)
    n = len(statements)
    top = ranked[0][1] + 1.0
    moved: list[tuple[str, str]] = []
    lifted: list[tuple[int, list[int]]] = []  # (rank of the statement, its rows best first)
    for doc_id in docs[:_DOCS]:
        found = statement_sections(index, doc_id)
        for rank, key in enumerate(statements):
            best = _closest(index, found.get(key, ()), query, allowed, moved, doc_id)
            if best is None:
                continue
            node_id, sims = best
            moved.append((doc_id, node_id))
            lifted.append((rank, sorted(sims, key=lambda r: (-sims[r], r))))
    # Round robin: every statement's j-th closest chunk before any statement's (j+1)-th,
    # the first needed first among equals, so a statement whose section has subsections
    # (Item 1, a note with parts) does not take every place before the next one.
    depth = max((len(rows_) for _, rows_ in lifted), default=0)
    for order, (rank, rows_) in enumerate(lifted):
        for j, r in enumerate(rows_):
            scores[r] = top + float((depth - j) * (n + 1) * len(lifted)
                                    + (n - rank) * len(lifted) - order)
    if not moved:
        return ranked, []
    return sorted(scores.items(), key=lambda t: (-t[1], t[0])), moved


def _closest(index: Corpus, sections: Sequence[tuple[str, list[int]]], query: np.ndarray,
             allowed: set[int] | None, taken: list[tuple[str, str]], doc_id: str
             ) -> tuple[str, dict[int, float]] | None:
    """The section (of one statement) whose best chunk is closest to ``query``, with each
    of its rows' cosine; sections already moved for another statement are skipped."""
    best: tuple[float, str, dict[int, float]] | None = None
    for node_id, sub in sections:
        if (doc_id, node_id) in taken:
            continue
        sub = [r for r in sub if allowed is None or r in allowed]
        if not sub:
            continue
        sims = (np.asarray(index.vectors_of(sub), np.float32) @ query).tolist()
        score = max(sims)
        if best is None or score > best[0]:
            best = (score, node_id, dict(zip(sub, sims, strict=True)))
    return None if best is None else (best[1], best[2])
