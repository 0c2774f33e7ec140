"""``oracle``: the gold sections themselves, a ceiling for section-level retrieval.

For each gold heading path (in the order given) every heading with that path contributes
its whole section (subsections included), packed under the budget like any other method.
No search happens, so both scopes give the same result.

On a dataset of PDFs (gold pages, no headings) the oracle returns the plain text of the gold
pages (``meta.pages``, in the order given), each a piece of its own: a ceiling for page-level
retrieval on the text the baselines read.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from proxy_pointer.parse.tree import Tree, build_tree

from ..context import Piece
from ..dataset import Dataset, Question
from ..metrics import normalize_path
from .base import BuildStats

__all__ = ["OracleMethod"]


class OracleMethod:
    name = "oracle"
    description = ("the gold sections (whole subtrees), or a PDF's gold pages, in gold order: "
                   "a ceiling, not a method")
    points_at_sections = True
    scopes = ("per-doc", "corpus")
    uses_embedder = False

    def __init__(self) -> None:
        self._trees: dict[str, Tree] = {}
        self._dataset: Dataset | None = None

    def build(self, dataset: Dataset, embedder: Any) -> BuildStats:
        t0 = time.perf_counter()
        self._dataset = dataset
        self._trees = {d: build_tree(text, doc_id=d) for d, text in dataset.docs.items()
                       if d not in dataset.pages}
        return BuildStats(seconds=time.perf_counter() - t0,
                          units=sum(len(t.heading_nodes) for t in self._trees.values())
                          + sum(len(p) for p in dataset.pages.values()))

    def retrieve(self, question: Question, scope: str, budget: int) -> Iterator[Piece]:
        assert self._dataset is not None
        if question.doc_id in self._dataset.pages:
            yield from self._gold_pages(question)
            return
        tree = self._trees[question.doc_id]
        by_path: dict[tuple[str, ...], list] = {}
        for node in tree.heading_nodes:
            by_path.setdefault(normalize_path(node.path), []).append(node)
        seen: set[str] = set()
        for gold in question.sections:
            for node in by_path.get(normalize_path(gold), []):
                if node.node_id not in seen:
                    seen.add(node.node_id)
                    yield Piece(text=tree.section_text(node), doc_id=question.doc_id,
                                path=node.path)

    def _gold_pages(self, question: Question) -> Iterator[Piece]:
        assert self._dataset is not None
        for page in dict.fromkeys(int(p) for p in question.meta.get("pages") or ()):
            text = self._dataset.page_text(question.doc_id, page)
            if text.strip():
                yield Piece(text=text, doc_id=question.doc_id, pages=((0, page),))
