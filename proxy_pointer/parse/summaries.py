"""Opt-in LLM section summaries as extra proxies (PageIndex-style), cached by content.

PageIndex and the reference implementation spend one LLM call per node writing a summary.
Here that is off by default; ``ChunkConfig(summaries=True)`` with an index-time LLM turns
it on: each section that has chunks gets one more chunk whose *embedded* text is its
breadcrumb and the LLM's summary of its own text, and whose pointer and text are the
section's own lines, so a summary hit ranks its section like any chunk hit and the store
format does not change. Replies are cached on disk by a hash of the model and the prompt,
so re-indexing a changed document asks again only for the sections whose text changed
(unchanged documents are not even re-parsed).
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from ..defaults import cache_dir
from ..tokens import TokenCounter, truncate_to_tokens
from .chunking import Chunk, breadcrumb_text

if TYPE_CHECKING:
    from ..llm.base import LLM
    from .tree import Tree

__all__ = ["SYSTEM", "SummaryCache", "summary_chunks"]

log = logging.getLogger(__name__)

SYSTEM = ("You summarize one section of a document for a search index. Reply with two or three "
          "plain sentences naming what the section covers (its topics, entities, figures), "
          "and nothing else.")
_MAX_SECTION_TOKENS = 1500  # of a section's own text sent to the LLM
_MAX_SUMMARY_CHARS = 800


class SummaryCache:
    """Summaries keyed by ``sha256(model, prompt)`` in one SQLite file (thread-safe).

    ``calls`` counts the summaries that had to be asked for, ``hits`` those found here.
    """

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else self.default_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        with self._db:
            self._db.execute("CREATE TABLE IF NOT EXISTS summaries "
                             "(key TEXT PRIMARY KEY, summary TEXT NOT NULL)")
        self._lock = threading.Lock()
        self.calls = self.hits = 0

    @staticmethod
    def default_path() -> Path:
        """``summaries.sqlite`` in the user cache folder (:func:`~.defaults.cache_dir`)."""
        return cache_dir() / "summaries.sqlite"

    @staticmethod
    def key(model: str, prompt: str) -> str:
        return hashlib.sha256(f"{model}\x1f{prompt}".encode()).hexdigest()

    def get(self, key: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT summary FROM summaries WHERE key = ?",
                                   (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, summary: str) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT OR REPLACE INTO summaries VALUES (?, ?)", (key, summary))


def summary_chunks(tree: Tree, chunks: list[Chunk], llm: LLM, *,
                   cache: SummaryCache | None = None, max_breadcrumb_tokens: int = 48,
                   tokenizer: TokenCounter | None = None) -> list[Chunk]:
    """One summary chunk per node of ``tree`` that has chunks in ``chunks``, in node order.

    A failing call is logged and that node gets no summary; the document is indexed anyway.
    """
    model = str(getattr(llm, "model_id", type(llm).__name__))
    starts = [0]
    for line in tree.lines:
        starts.append(starts[-1] + len(line))
    firsts: dict[str, Chunk] = {}
    for c in chunks:
        if c.node_id is not None:
            firsts.setdefault(c.node_id, c)
    out: list[Chunk] = []
    for node_id, first in firsts.items():
        node = tree.get(node_id)
        own = tree.slice(node.start, node.own_end)
        prompt = (f"Document: {tree.title}\nSection: {' > '.join(node.path)}\n\n"
                  f"{truncate_to_tokens(own, _MAX_SECTION_TOKENS)}")
        key = SummaryCache.key(model, prompt)
        summary = cache.get(key) if cache is not None else None
        if summary is None:
            try:
                reply = llm.generate(prompt, system=SYSTEM)
            except Exception as e:  # an optional enrichment: the document is indexed anyway
                log.warning("%s#%s: no summary (%s)", tree.doc_id, node_id, e)
                continue
            summary = " ".join(str(reply.text).split())[:_MAX_SUMMARY_CHARS]
            if cache is not None:
                cache.calls += 1
                if summary:
                    cache.put(key, summary)
        elif cache is not None:
            cache.hits += 1
        if not summary:
            continue
        out.append(Chunk(
            doc_id=tree.doc_id, node_id=node_id, title=first.title, path=first.path,
            start_char=starts[node.start], end_char=starts[node.own_end],
            start_line=node.start, end_line=node.own_end, own_start=node.start,
            own_end=node.own_end, section_start=node.start, section_end=node.end,
            text=own,
            embed_text=breadcrumb_text(tree.breadcrumb(node), max_breadcrumb_tokens, tokenizer)
            + "\nSummary: " + summary,
        ))
    return out
