"""``oracle``: the gold sections themselves, a ceiling for section-level retrieval.

For each gold heading path (in the order given) every heading with that path contributes
its whole section (subsections included), packed under the budget like any other method.
No search happens, so both scopes give the same result.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from proxy_pointer.tree import Tree, build_tree

from ..context import Piece
from ..dataset import Dataset, Question
from ..metrics import normalize_path
from .base import BuildStats

__all__ = ["OracleMethod"]


class OracleMethod:
    name = "oracle"
    description = "the gold sections (whole subtrees), in gold order: a ceiling, not a method"
    points_at_sections = True
    scopes = ("per-doc", "corpus")
    uses_embedder = False

    def __init__(self) -> None:
        self._trees: dict[str, Tree] = {}

    def build(self, dataset: Dataset, embedder: Any) -> BuildStats:
        t0 = time.perf_counter()
        self._trees = {d: build_tree(text, doc_id=d) for d, text in dataset.docs.items()}
        return BuildStats(seconds=time.perf_counter() - t0,
                          units=sum(len(t.heading_nodes) for t in self._trees.values()))

    def retrieve(self, question: Question, scope: str, budget: int) -> Iterator[Piece]:
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
