"""Which of a company's filings answers: a document score with evidence.

Routing (:mod:`.routing`) finds the company and the period from the cards, but a company
files several documents of one period (its 10-K and the fourth quarter's earnings release,
a 10-Q and the quarter's release, an 8-K and a release of the same day), and the cards alone
cannot say which holds what the question asks. Routing hands over its candidates with a
card prior (:attr:`.routing.Route.candidates`: the cards' choice 1, the other filings that
cover the period their card score below 1, the nearest filing of a form the question's words
lean to 0); all of them are searched, and each is scored::

    score = prior + CONTENT_WEIGHT * content + CUE_WEIGHT * cue

``content`` is what the filing holds for this question: the mean reciprocal rank of its
best ``CONTENT_HITS`` chunks in the fused ranking over every candidate, over the best
filing's (0-1; as document retrieval aggregates passage scores; by rank, since fused scores
are nearly flat down a ranking). ``cue`` is 1 when the question's words lean to the
filing's form (``form_cue`` rows of ``vocab/filings.toml``: "non-GAAP", "guidance" lean to
an earnings release; "voting results", "appointed" to an 8-K; "risk factors", "each of the
three years" to a 10-K). Per entity the best filing is kept, and the second too when it
scores within ``MARGIN`` of the best (both searched: their sections compete for the
budget). The weights were measured on the routing set's tuning part
(``benchmarks/quality/bench_routing_set.py``, with a sensitivity table); the result explains every
score (:attr:`.routing.Route.scores`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .question import Question
from .routing import Route

if TYPE_CHECKING:
    from .corpus import Corpus

__all__ = ["CONTENT_HITS", "CONTENT_WEIGHT", "CUE_WEIGHT", "MARGIN", "WEIGHTS", "Choice",
           "Evidence", "Weights", "choose", "evidence"]

CONTENT_WEIGHT = 1.0
CUE_WEIGHT = 0.5
MARGIN = 0.1
CONTENT_HITS = 3


@dataclass(frozen=True)
class Weights:
    """The document score's weights (module docstring)."""

    content: float = CONTENT_WEIGHT
    cue: float = CUE_WEIGHT
    margin: float = MARGIN
    hits: int = CONTENT_HITS


#: The weights the library uses.
WEIGHTS = Weights()


@dataclass(frozen=True)
class Evidence:
    """One candidate filing's parts of the score: its card ``prior``, its ``content``
    (0-1), the ``cues`` of the question that lean to its form, its entity's ``group``."""

    document: str
    prior: float
    content: float
    cues: tuple[str, ...]
    group: int


@dataclass(frozen=True)
class Choice:
    """The filings kept (``documents``) and every candidate's ``(doc_id, score, why)``,
    best first."""

    documents: tuple[str, ...]
    scores: tuple[tuple[str, float, str], ...]


def evidence(corpus: Corpus, ranked: Sequence[tuple[int, float]], route: Route,
             question: Question, *, hits: int = CONTENT_HITS) -> list[Evidence]:
    """Each of ``route``'s candidates with what ``ranked`` (the fused chunk ranking over
    all of them, best first) says it holds for ``question``: one read of the ranked rows'
    pointers."""
    by_doc: dict[str, list[float]] = {}
    docs = [p[0] for p in corpus.pointers([r for r, _ in ranked])]
    for rank, doc in enumerate(docs):
        best = by_doc.setdefault(doc, [])
        if len(best) < hits:
            best.append(1.0 / (1 + rank))  # by rank: fused scores are nearly flat
    top = max((sum(v) / len(v) for v in by_doc.values() if v), default=0.0)
    cued = question.cued_forms
    cards = corpus.cards()
    candidates = list(route.candidates)
    if route.open:  # no company named: every filing found is a candidate
        listed = {d for d, _, _ in candidates}
        candidates += [(d, 0.0, 0) for d in by_doc
                       if d not in listed and d in cards and cards[d].entity]
    out = []
    for doc, prior, group in candidates:
        got = by_doc.get(doc, [])
        content = (sum(got) / len(got)) / top if got and top > 0 else 0.0
        kind = cards[doc].kind if doc in cards else ""
        out.append(Evidence(doc, prior, content, cued.get(kind, ()), group))
    return out


def choose(found: Sequence[Evidence], weights: Weights = WEIGHTS) -> Choice:
    """The best filing of each group, and the second where it scores within the margin."""
    scored = sorted(((_score(e, weights), e) for e in found),
                    key=lambda t: (-t[0], t[1].document))
    kept: list[str] = []
    best: dict[int, float] = {}
    count: dict[int, int] = {}
    for score, e in scored:
        g = e.group
        if g not in best:
            best[g], count[g] = score, 1
            kept.append(e.document)
        elif count[g] < 2 and best[g] - score < weights.margin:
            count[g] += 1
            kept.append(e.document)
    return Choice(tuple(kept), tuple((e.document, s, _why(e, weights)) for s, e in scored))


def _score(e: Evidence, w: Weights) -> float:
    return e.prior + w.content * e.content + (w.cue if e.cues else 0.0)


def _why(e: Evidence, w: Weights) -> str:
    parts = [f"card {e.prior:.2f}", f"content {e.content:.2f} x {w.content:g}"]
    if e.cues:
        parts.append(f"cue {w.cue:g} ({', '.join(e.cues)})")
    return " + ".join(parts)
