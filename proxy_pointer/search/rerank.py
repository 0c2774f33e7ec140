"""Opt-in LLM rerank of section candidates by their breadcrumbs: one call per query.

The reference Proxy-Pointer repository lets an LLM reorder the best ~50 candidates by
their breadcrumbs alone (``Doc > Chapter > Section``): cheap in prompt tokens, since no
section text is sent. Off by default (no LLM is needed anywhere else in retrieval); turned
on with ``RetrievalConfig(rerank_llm=..., rerank_top=50)``. The LLM answers with candidate
numbers, best first; the ones it names move to the front in its order, the rest keep
theirs. A failing call or a reply without usable numbers leaves the order as it was.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from ..errors import LLMError

if TYPE_CHECKING:
    from ..llm.base import LLM
    from .corpus import Corpus
    from .ranking import Candidate

__all__ = ["SYSTEM", "breadcrumb_of", "rerank", "rerank_prompt"]

log = logging.getLogger(__name__)

SYSTEM = (
    "You rank document sections by how likely they are to contain the answer to a question. "
    "You see only each section's breadcrumb (document > chapter > section). Reply with the "
    "numbers of the relevant sections, most relevant first, separated by commas, and nothing "
    "else."
)
_NUMBER = re.compile(r"\d+")


def breadcrumb_of(index: Corpus, cand: Candidate) -> str:
    """``Document title > Heading > Subheading`` of a candidate (lines for a window)."""
    tree = index.tree(cand.doc_id)
    if cand.node_id is None:
        c = index.chunks[cand.rows[0]]
        return f"{tree.title} > lines {c.start_line + 1}-{c.end_line}"
    return " > ".join(tree.breadcrumb(cand.node_id)[:9])  # the title and 8 headings at most


def rerank_prompt(question: str, crumbs: list[str]) -> str:
    """The user prompt: the question and the numbered breadcrumbs."""
    listed = "\n".join(f"[{i}] {c}" for i, c in enumerate(crumbs, 1))
    return f"Question: {question}\n\nSections:\n{listed}\n\nRelevant section numbers:"


def rerank(index: Corpus, candidates: list[Candidate], question: str, llm: LLM, *,
           top: int = 50) -> list[Candidate]:
    """``candidates`` with the first ``top`` reordered by ``llm`` (module docstring)."""
    shown = candidates[:top]
    if len(shown) < 2:
        return candidates
    prompt = rerank_prompt(question, [breadcrumb_of(index, c) for c in shown])
    try:
        reply = llm.generate(prompt, system=SYSTEM).text
    except LLMError as exc:
        log.warning("rerank skipped: %s", exc)
        return candidates
    order: list[int] = []
    for m in _NUMBER.findall(reply):
        i = int(m) - 1
        if 0 <= i < len(shown) and i not in order:
            order.append(i)
    if not order:
        return candidates
    chosen = set(order)
    return ([shown[i] for i in order] + [c for i, c in enumerate(shown) if i not in chosen]
            + candidates[top:])
