"""What the HTTP API and the MCP server answer: one index held open, answers as JSON-ready data.

Both interfaces (:mod:`.serve`, :mod:`.mcp_server`) call a :class:`Service`, so they agree
on payload shapes, request limits and errors. A service loads its index once and, before a
request, picks up a generation another writer committed since (readers keep the generation
they opened, so a request never sees a half-written index). Bad requests raise
:class:`~proxy_pointer.errors.ConfigError`; unknown documents or sections raise
:class:`NotFoundError`; ``ask`` without an LLM raises :class:`UnavailableError`.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ConfigError, ProxyPointerError
from .index import Index, update_directory
from .retrieval import RetrievalConfig
from .stores import Store, open_store

if TYPE_CHECKING:
    from .embeddings import Embedder
    from .llm.base import LLM

__all__ = ["Limits", "NotFoundError", "Service", "UnavailableError"]


class NotFoundError(ProxyPointerError, KeyError):
    """No such document or section in the index."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UnavailableError(ProxyPointerError):
    """The service cannot do this now (``ask`` with no LLM configured)."""


@dataclass(frozen=True)
class Limits:
    """Bounds on one request, checked before any work is done."""

    max_question_chars: int = 4_000
    max_budget: int = 32_000
    max_k: int = 100
    max_doc_ids: int = 1_000
    max_body_bytes: int = 1_000_000  # HTTP bodies (JSON); enforced by the HTTP layer


class Service:
    """An index at ``location`` served to many concurrent requests.

    ``llm`` answers ``ask`` (none: ``ask`` raises :class:`UnavailableError`);
    ``embedder`` defaults to the one the index was built with. ``refresh_seconds``: how
    often the store is asked whether a newer generation was committed.
    """

    def __init__(self, location: str | os.PathLike[str] | Store, *, llm: LLM | None = None,
                 embedder: Embedder | None = None, limits: Limits | None = None,
                 refresh_seconds: float = 1.0) -> None:
        self.store = open_store(location)
        self.llm = llm
        self.limits = limits or Limits()
        self.refresh_seconds = refresh_seconds
        self._index = Index.load(self.store, embedder=embedder)
        self._embedder = self._index.embedder  # the model loads once, shared by reloads
        self._checked = time.monotonic()
        self._lock = threading.Lock()  # reloads
        self._write = threading.Lock()  # updates through this service, one at a time

    # --- the index ----------------------------------------------------------------------
    @property
    def index(self) -> Index:
        """The newest committed generation (checked at most every ``refresh_seconds``)."""
        now = time.monotonic()
        if now - self._checked >= self.refresh_seconds:
            with self._lock:
                if now - self._checked >= self.refresh_seconds:
                    self._checked = now
                    if self.store.generation() != self._index.generation:
                        self._index = Index.load(self.store, embedder=self._embedder)
        return self._index

    # --- requests -----------------------------------------------------------------------
    def config(self, *, budget: int | None = None, k: int | None = None,
               doc_ids: Sequence[str] | None = None, path_prefix: str | None = None,
               mode: str | None = None) -> RetrievalConfig:
        """A retrieval config within :attr:`limits`; :class:`ConfigError` otherwise."""
        lim = self.limits
        if budget is not None and not (isinstance(budget, int) and 0 < budget <= lim.max_budget):
            raise ConfigError(f"budget must be an integer in 1..{lim.max_budget}, got {budget!r}")
        if k is not None and not (isinstance(k, int) and 0 < k <= lim.max_k):
            raise ConfigError(f"k must be an integer in 1..{lim.max_k}, got {k!r}")
        if doc_ids is not None and len(doc_ids) > lim.max_doc_ids:
            raise ConfigError(f"at most {lim.max_doc_ids} doc_ids")
        options: dict[str, Any] = {}
        for name, value in (("budget", budget), ("k", k), ("path_prefix", path_prefix),
                            ("mode", mode)):
            if value is not None:
                options[name] = value
        if doc_ids is not None:
            options["doc_ids"] = tuple(self._doc_key(d) for d in doc_ids)
        return RetrievalConfig(**options)

    def _question(self, question: Any) -> str:
        if not isinstance(question, str) or not question.strip():
            raise ConfigError("the question is empty")
        if len(question) > self.limits.max_question_chars:
            raise ConfigError(f"the question is over {self.limits.max_question_chars} "
                              "characters")
        return question.strip()

    def query(self, question: str, **options: Any) -> dict[str, Any]:
        """Sections for ``question`` (the CLI's ``query --json``): ``question``,
        ``tokens_used``, ``budget``, ``contexts`` (each ``Section.to_dict()`` plus its
        ``ref``, the pointer :meth:`section_by_ref` opens)."""
        question = self._question(question)
        res = self.index.retrieve(question, self.config(**options))
        return {"question": res.question, "tokens_used": res.tokens_used,
                "budget": res.budget,
                "contexts": [{"ref": s.ref, **s.to_dict()} for s in res.sections]}

    def ask(self, question: str, **options: Any) -> dict[str, Any]:
        """An answer with checked citations (``ask --json``); :class:`UnavailableError`
        when no LLM is configured."""
        from .synthesis import synthesize

        if self.llm is None:
            raise UnavailableError("no LLM is configured: start the server with --llm "
                                   "(or set GEMINI_API_KEY / PROXY_POINTER_LLM)")
        question = self._question(question)
        res = self.index.retrieve(question, self.config(**options))
        return synthesize(question, list(res.sections), self.llm).to_dict()

    def documents(self) -> list[dict[str, Any]]:
        """Every document: ``doc_id``, ``title``, ``kind``, ``size``, ``n_chunks``."""
        idx = self.index
        return [{"doc_id": d, "title": r.title, "kind": r.kind, "size": r.size,
                 "n_chunks": r.n_chunks} for d, r in ((d, idx.documents[d]) for d in idx.documents)]

    def outline(self, doc_id: str) -> dict[str, Any]:
        """A document's skeleton tree without text: ``doc_id``, ``title`` and its
        ``nodes`` in reading order, each with ``ref``, ``node_id``, ``title``, ``level``,
        ``parent_id`` and 1-based inclusive ``start_line``/``end_line`` of its section."""
        key = self._doc_key(doc_id)
        tree = self.index.tree(key)
        return {"doc_id": key, "title": tree.title,
                "nodes": [{"ref": f"{key}#{n.node_id}", "node_id": n.node_id, "title": n.title,
                           "level": n.level, "parent_id": n.parent_id,
                           "start_line": n.start + 1, "end_line": n.end} for n in tree.nodes]}

    def section(self, doc_id: str, node_id: str) -> dict[str, Any]:
        """A section's full text by pointer, with its breadcrumb and 1-based lines."""
        idx = self.index
        key = self._doc_key(doc_id)
        tree = idx.tree(key)
        try:
            node = tree.get(node_id)
        except KeyError:
            raise NotFoundError(f"{key}: no section {node_id!r}") from None
        return {"doc_id": key, "node_id": node.node_id, "ref": f"{key}#{node.node_id}",
                "title": node.title, "path": list(tree.breadcrumb(node)),
                "start_line": node.start + 1, "end_line": node.end,
                "text": tree.section_text(node)}

    def section_by_ref(self, ref: str) -> dict[str, Any]:
        """:meth:`section` for a ref ``doc_id#node_id`` (as search results give)."""
        doc_id, sep, node_id = ref.rpartition("#")
        if not sep or not doc_id or not node_id:
            raise ConfigError(f"a ref is doc_id#node_id, got {ref!r}")
        return self.section(doc_id, node_id)

    def update(self, paths: Sequence[str], *, prune: bool = False,
               lock_timeout: float = 30.0) -> dict[str, Any]:
        """Index ``paths`` into the store (incremental, atomic) and serve the result;
        returns the :class:`~proxy_pointer.ingest.UpdateReport` as data."""
        with self._write:
            _, report = update_directory(self.store, paths, embedder=self._embedder,
                                         prune=prune, lock_timeout=lock_timeout)
            self._checked = 0.0  # pick the new generation up on the next request
        return {"added": list(report.added), "updated": list(report.updated),
                "unchanged": len(report.unchanged), "removed": list(report.removed),
                "skipped": list(report.skipped), "chunks": report.chunks,
                "embedded": report.embedded, "seconds": round(report.seconds, 3)}

    def _doc_key(self, doc_id: str) -> str:
        """The indexed id for ``doc_id``, also without its ``.md`` suffix;
        :class:`NotFoundError` for an unknown one."""
        docs = self.index.documents
        if not isinstance(doc_id, str):
            raise ConfigError(f"doc_id must be a string, got {doc_id!r}")
        for key in (doc_id, doc_id + ".md", doc_id + ".markdown", doc_id + ".txt"):
            if key in docs:
                return key
        raise NotFoundError(f"no document {doc_id!r} in {self.store.location}")
