"""Experiment: table rows embedded without their figures (issue 38's "label plus column header").

The dense vector of a chunk is made from its ``embed_text`` with the amounts of each table
row removed (a PDF text row, or a Markdown pipe row; years stay, they name the columns),
while BM25, the stored text and what a reader gets are unchanged. Runs
:mod:`benchmarks.harness.cli` with the default embedder wrapped this way (its own
``model_id`` in the cache), so its any-hit compares with a plain run's; prints the share of
word pieces it saves on the dataset's chunks.

    python -m benchmarks.quality.bench_dense_view --dataset ../shared/data/finance-10k \
        --scope per-doc corpus --methods proxy-pointer --cache-dir /tmp/dv --out-dir /tmp/dv
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

import numpy as np

from ..harness.cli import main as run_benchmark

#: A figure: optional sign, parentheses, currency and percent around digits.
FIGURE = re.compile(r"\(?-?\$?\s?\d[\d,]*(?:\.\d+)?\)?%?")
YEAR = re.compile(r"(?:19|20)\d\d")


def _amount(token: str) -> bool:
    return bool(FIGURE.fullmatch(token.replace(" ", ""))) and not YEAR.fullmatch(token.strip())


def dense_view(text: str) -> str:
    """``text`` with the figures of its table rows removed (its first line, the breadcrumb,
    kept)."""
    from proxy_pointer.text.rows import is_table_row

    head, sep, body = text.partition("\n")
    out = []
    for line in body.split("\n"):
        s = line.strip()
        if s.startswith("|") and s.endswith("|"):
            cells = [c.strip() for c in s.strip("|").split("|")]
            if any(_amount(c) for c in cells):
                line = "| " + " | ".join(c for c in cells if not _amount(c)) + " |"
        elif is_table_row(s) and any(_amount(m.group(0)) for m in FIGURE.finditer(s)):
            line = FIGURE.sub(lambda m: "" if _amount(m.group(0)) else m.group(0), line)
            line = re.sub(r"\s{2,}", " ", line).rstrip()
        out.append(line)
    return head + sep + "\n".join(out)


class DenseView:
    """An embedder that embeds :func:`dense_view` of each document text; queries as is."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.model_id = inner.model_id + "+dense-view"
        self.dimension, self.max_tokens = inner.dimension, inner.max_tokens
        self.tokenizer = inner.tokenizer
        self.saved = [0, 0]  # word pieces before, after

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        views = [dense_view(t) for t in texts]
        self.saved[0] += sum(self.tokenizer.count_many(list(texts)))
        self.saved[1] += sum(self.tokenizer.count_many(views))
        return self.inner.embed_documents(views)

    def embed_query(self, text: str) -> np.ndarray:
        return self.inner.embed_query(text)


def main(argv: list[str] | None = None) -> int:
    wrapped: list[DenseView] = []

    def make(spec: str, cache_dir: str | None):
        from proxy_pointer.embeddings import CachedEmbedder, make_embedder

        wrapped.append(DenseView(make_embedder(spec)))
        return CachedEmbedder(wrapped[-1], cache_dir) if cache_dir else wrapped[-1]

    code = run_benchmark(argv, make_embedder=make)
    for w in wrapped:
        before, after = w.saved
        if before:
            print(f"[dense-view] word pieces embedded {before} -> {after} "
                  f"({1 - after / before:.1%} fewer; texts the cache had are not counted)")
    return code


if __name__ == "__main__":
    sys.exit(main())
