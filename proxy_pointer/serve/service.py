"""What the HTTP API and the MCP server answer: one index held open, answers as JSON-ready data.

Both interfaces (:mod:`.http`, :mod:`.mcp`) call a :class:`Service`, so they agree
on payload shapes, request limits (:mod:`proxy_pointer.search.config`) and errors. A
service loads its index once and, before a request, picks up a generation another writer
committed since (readers keep the generation they opened, so a request never sees a
half-written index). Bad requests raise
:class:`~proxy_pointer.errors.ConfigError`; unknown documents, sections or lines raise
:class:`~proxy_pointer.errors.NotFoundError`; ``ask`` without an LLM raises
:class:`UnavailableError`.

Every request is read through one caller's :class:`~proxy_pointer.access.Access` view
(default :data:`~proxy_pointer.access.ANONYMOUS`: documents without ``access`` only): a
document the view hides is absent from listings, search and citations, and opening it
answers exactly like opening a missing one.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..access import ANONYMOUS, Access, public_metadata
from ..documents import check_sent_doc_id, discover, resolve_doc_id
from ..errors import ConfigError, NotFoundError, ProxyPointerError
from ..index import Index
from ..refs import Ref
from ..search.config import (
    Limits,
    RetrievalConfig,
    check_budget,
    check_doc_ids,
    check_k,
    check_question,
    check_where,
)
from ..search.retrieval import Retrieval
from ..stores import Store, open_store
from ..text.pages import page_span
from ..vocab.synonyms import Synonyms

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..llm.base import LLM
    from ..search.synthesis import Answer

__all__ = ["Limits", "NotFoundError", "Service", "UnavailableError", "describe_invalid"]


class UnavailableError(ProxyPointerError):
    """The service cannot do this now (``ask`` with no LLM configured)."""


class Service:
    """An index at ``location`` served to many concurrent requests.

    ``llm`` answers ``ask`` (none: ``ask`` raises :class:`UnavailableError`);
    ``embedder`` defaults to the one the index was built with. ``synonyms`` (rules, or a
    synonyms file's path), ``vocabulary`` and ``aliases`` (routing) apply to every request
    (:class:`~.search.config.RetrievalConfig`).
    ``refresh_seconds``: how
    often the store is asked whether a newer generation was committed.
    """

    def __init__(self, location: str | os.PathLike[str] | Store, *, llm: LLM | None = None,
                 embedder: Embedder | None = None, limits: Limits | None = None,
                 refresh_seconds: float = 1.0,
                 synonyms: Synonyms | str | os.PathLike[str] | None = None,
                 vocabulary: bool = True,
                 aliases: Synonyms | str | os.PathLike[str] | None = None) -> None:
        self.store = open_store(location)
        self.synonyms = synonyms if synonyms is None or isinstance(synonyms, Synonyms) else (
            Synonyms.load(synonyms))
        self.aliases = aliases if aliases is None or isinstance(aliases, Synonyms) else (
            Synonyms.load(aliases))
        self.vocabulary = vocabulary
        self.llm = llm
        self.limits = limits or Limits()
        self.refresh_seconds = refresh_seconds
        self._index = Index.load(self.store, embedder=embedder)
        self._embedder = self._index.embedder  # the model loads once, shared by reloads
        self._checked = time.monotonic()
        self._lock = threading.Lock()  # reloads
        self._write = threading.Lock()  # updates through this service, one at a time
        self._pinned = threading.local()  # the generation a request in this thread reads

    @property
    def query_options(self) -> dict[str, Any]:
        """What every request is searched with, whoever sends it: ``synonyms``,
        ``vocabulary`` and ``aliases`` (:class:`~.search.config.RetrievalConfig`)."""
        return {"synonyms": self.synonyms, "vocabulary": self.vocabulary, "aliases": self.aliases}

    # --- the index ----------------------------------------------------------------------
    @property
    def index(self) -> Index:
        """The newest committed generation (checked at most every ``refresh_seconds``), or
        the one this thread pinned (:meth:`pinned`)."""
        pinned: Index | None = getattr(self._pinned, "index", None)
        if pinned is not None:
            return pinned
        now = time.monotonic()
        if now - self._checked >= self.refresh_seconds:
            with self._lock:
                if now - self._checked >= self.refresh_seconds:
                    self._checked = now
                    if self.store.generation() != self._index.generation:
                        self._index = Index.load(self.store, embedder=self._embedder,
                                                 refiner=self._index.refiner)
        return self._index

    @contextmanager
    def pinned(self) -> Iterator[Index]:
        """Within the block, every call from this thread reads one generation (the one
        yielded), so a request's payload, its doc-id checks and the generation it reports
        agree even when an update commits meanwhile. Nests (the outer pin holds)."""
        outer: Index | None = getattr(self._pinned, "index", None)
        self._pinned.index = idx = outer if outer is not None else self.index
        try:
            yield idx
        finally:
            self._pinned.index = outer

    def health(self, *, access: Access = ANONYMOUS) -> dict[str, Any]:
        """``generation``, ``documents``, ``chunks`` (those ``access`` sees) and
        ``embedder`` of the index served."""
        idx = self.index
        reader = idx.reader
        rows = reader.visible_rows(access)
        return {"generation": idx.generation, "documents": len(reader.visible_documents(access)),
                "chunks": len(reader.chunks) if rows is None else len(rows),
                "embedder": idx.embedder.model_id}

    # --- requests -----------------------------------------------------------------------
    def config(self, *, budget: int | None = None, k: int | None = None,
               doc_ids: Sequence[str] | None = None, path_prefix: str | None = None,
               mode: str | None = None, where: Mapping[str, Any] | None = None,
               access: Access = ANONYMOUS) -> RetrievalConfig:
        """A retrieval config within :attr:`limits` for a caller with ``access`` (its
        principal, its filters and the request's ``where``); :class:`ConfigError`
        otherwise, :class:`NotFoundError` for a doc id the caller cannot see."""
        if budget is not None:
            check_budget(budget, self.limits)
        if k is not None:
            check_k(k, self.limits)
        if doc_ids is not None:
            check_doc_ids(doc_ids, self.limits)
        pairs = check_where(where, self.limits)
        options: dict[str, Any] = {**self.query_options, "access": access.narrowed(pairs)}
        for name, value in (("budget", budget), ("k", k), ("path_prefix", path_prefix),
                            ("mode", mode)):
            if value is not None:
                options[name] = value
        if doc_ids is not None:
            options["doc_ids"] = tuple(self._doc_key(d, access) for d in doc_ids)
        return RetrievalConfig(**options)

    def query(self, question: str, *, access: Access = ANONYMOUS, **options: Any
              ) -> dict[str, Any]:
        """Sections for ``question``: :meth:`Retrieval.to_dict
        <proxy_pointer.search.retrieval.Retrieval.to_dict>`, the payload ``query --json`` prints."""
        question = check_question(question, self.limits)
        with self.pinned():
            return self.retrieve(question, self.config(access=access, **options)).to_dict()

    def ask(self, question: str, *, access: Access = ANONYMOUS, **options: Any
            ) -> dict[str, Any]:
        """An answer with checked citations (``ask --json``, :meth:`Index.ask
        <proxy_pointer.index.Index.ask>`); :class:`UnavailableError` when no LLM is
        configured."""
        llm = self._llm()  # before the question: no LLM is the server's state, not the request's
        question = check_question(question, self.limits)
        with self.pinned():
            return self.answer(question, self.config(access=access, **options), llm).to_dict()

    def documents(self, *, access: Access = ANONYMOUS) -> list[dict[str, Any]]:
        """Every document ``access`` sees (its ``where`` filters included): ``doc_id``,
        ``title``, ``format`` (the file's: ``pdf``, ``html``, ``docx``, ``markdown`` or
        ``text``), ``size``, ``n_chunks``, ``pages`` (a converted PDF's page count, else
        None), ``converter`` (``"pdf/5"``, or None), ``metadata`` (without the access list)
        and ``card`` (what the document is: entity, kind such as 10-K, period, ... as
        routing reads it, metadata fields of the same names in place)."""
        with self.pinned() as idx:
            reader = idx.reader
            seen = reader.visible_documents(access)
            cards = reader.cards()
            return [{"doc_id": d, "title": r.title, "format": r.format, "size": r.size,
                     "n_chunks": r.n_chunks, "pages": len(r.pages) or None,
                     "converter": r.converter or None, "metadata": public_metadata(r.metadata),
                     "card": cards[d].to_dict()}
                    for d, r in ((d, reader.documents[d]) for d in reader.documents if d in seen)]

    def outline(self, doc_id: str, *, access: Access = ANONYMOUS) -> dict[str, Any]:
        """A document's skeleton tree without text: ``doc_id``, ``title`` and its
        ``nodes`` in reading order, each with ``ref``, ``node_id``, ``title``, ``level``,
        ``parent_id``, 1-based inclusive ``start_line``/``end_line`` of its section, its
        ``pages`` (first, last; None but for converted PDFs) and ``skipped``: None, or why
        indexing gave the node's own text no chunk, as
        :func:`~proxy_pointer.parse.chunking.skip_reasons` says it under the index's chunk config
        (``"noise: references (...)"``, ``"short: ..."``). Noise is decided by the title
        rules only: an index whose noise labels came from an LLM is not asked again, so
        sections only the LLM labelled show as kept."""
        from ..parse.chunking import skip_reasons
        from ..parse.noise import classify_noise

        with self.pinned() as idx:
            key = self._doc_key(doc_id, access)
            tree, starts = idx.reader.tree(key), idx.reader.documents[key].pages
            config = idx.chunk_config
        skipped = (skip_reasons(tree, config, noise=classify_noise(tree, config.noise))
                   if config.mode == "structure" else {})
        return {"doc_id": key, "title": tree.title,
                "nodes": [{"ref": str(Ref(key, n.node_id)), "node_id": n.node_id,
                           "title": n.title, "level": n.level, "parent_id": n.parent_id,
                           "start_line": n.start + 1, "end_line": n.end,
                           "pages": _pages(starts, n.start + 1, n.end),
                           "skipped": skipped.get(n.node_id)} for n in tree.nodes]}

    def section(self, doc_id: str, node_id: str, *, access: Access = ANONYMOUS
                ) -> dict[str, Any]:
        """:meth:`section_by_ref` for a doc id and the part of a ref after its ``#``: a node
        id (``"0003"``), lines (``"L12-30"``) or pages (``"p3"``)."""
        return self._open(Ref.of(doc_id, node_id), access)

    def section_by_ref(self, ref: str, *, access: Access = ANONYMOUS) -> dict[str, Any]:
        """The text a ref points at, as search results and outlines give them
        (:mod:`~proxy_pointer.refs`): ``doc_id#node_id`` a whole section with its
        subsections, ``doc_id#L12-30`` those lines (a fallback window's ref), ``doc_id#p3-5``
        pages. Returns ``doc_id``, ``node_id`` (None for lines), ``ref``, ``title``,
        breadcrumb ``path``, 1-based inclusive ``start_line``/``end_line``, ``text`` and
        ``pages`` (first, last; None but for converted PDFs). :class:`ConfigError` for a
        malformed ref, :class:`NotFoundError` for a document, section, lines or pages the
        index lacks (and pages of a document without them)."""
        return self._open(Ref.parse(ref), access)

    def _open(self, ref: Ref, access: Access) -> dict[str, Any]:
        with self.pinned() as idx:
            key = self._doc_key(ref.doc_id, access)
            return idx.section(dataclasses.replace(ref, doc_id=key)).to_dict()

    def add_documents(self, paths: Sequence[str] = (), texts: Sequence[tuple[str, str]] = (),
                      *, root: str | os.PathLike[str] | None = None, prune: bool = False,
                      metadata: Mapping[str, Mapping[str, Any]] | None = None,
                      lock_timeout: float = 30.0) -> dict[str, Any]:
        """Add or update the files under ``paths`` and the ``(doc_id, text)`` pairs of
        ``texts`` in one atomic commit (under the store's writer lock); returns the
        :class:`~proxy_pointer.ingest.UpdateReport` as data (``added``, ``updated``,
        ``unchanged``, ``relabelled``, ``removed``, ``skipped``, ``warnings`` (from
        converters: "pages 3, 9 have no text layer"), ``chunks``, ``embedded``,
        ``seconds``) and the committed ``generation``. ``metadata`` (``doc_id -> object``,
        :meth:`Index.update <proxy_pointer.index.Index.update>`) sets the metadata of
        documents being indexed or already indexed (a metadata-only change embeds nothing).

        With ``root``, file doc ids are relative to it and every path (relative ones are
        taken from ``root``) and every file found must lie inside it, symbolic links
        resolved; :class:`ConfigError` otherwise. ``prune`` removes every document that is
        neither under ``paths`` nor in ``texts``. Raises :class:`ConfigError` for an unsafe
        or duplicate doc id, :class:`~proxy_pointer.errors.DocumentError` for a missing
        path, :class:`~proxy_pointer.errors.IndexLockedError` when another writer holds
        the store longer than ``lock_timeout`` seconds.
        """
        files = self._inside(paths, root)
        names = [doc_id for doc_id, _ in texts]
        for doc_id, text in texts:
            check_sent_doc_id(doc_id)
            _check_unicode(text, f"the text of {doc_id!r}")
        found = {s.doc_id for s in discover(files, root=root)} if files else set()
        clash = sorted((found & set(names)) | {d for d in names if names.count(d) > 1})
        if clash:
            raise ConfigError(f"doc ids given twice: {', '.join(clash)}")
        t0 = time.perf_counter()
        with self._write, self.store.lock(timeout=lock_timeout):
            idx = Index.load(self.store, embedder=self._embedder, refiner=self._index.refiner)
            before, version = set(idx.reader.documents), idx.version
            # Parse here (workers=0): forking a process whose other threads are serving
            # requests could copy a lock one of them holds.
            meta = dict(metadata or {})
            inline_meta = {d: meta.pop(d) for d in names if d in meta}
            report = idx.update(files, root=None if root is None else os.fspath(root),
                                workers=0, metadata=meta)
            inline = idx.add_texts(texts, source_prefix="inline:", metadata=inline_meta)
            added = sorted({*report.added, *inline.added})
            updated = sorted({*report.updated, *inline.updated})
            unchanged = len(report.unchanged) + len(inline.unchanged)
            removed = idx.remove([d for d in before if d not in found and d not in names]
                                 ) if prune else []
            generation = idx.save_locked(self.store) if idx.version != version else (
                idx.generation)
            self._checked = 0.0  # pick the new generation up on the next request
        return {"added": added, "updated": updated, "unchanged": unchanged,
                "relabelled": sorted({*report.relabelled, *inline.relabelled}),
                "removed": sorted(removed), "skipped": list(report.skipped),
                "warnings": list(report.warnings), "chunks": len(idx.reader.chunks),
                "embedded": report.embedded + inline.embedded,
                "seconds": round(time.perf_counter() - t0, 3), "generation": generation}

    @staticmethod
    def _inside(paths: Sequence[str], root: str | os.PathLike[str] | None) -> list[str]:
        """``paths`` (relative ones from ``root``), refused when one leads out of it."""
        for p in map(os.fspath, paths):
            _check_unicode(p, f"path {p!r}")
            if "\x00" in p:
                raise ConfigError(f"path {p!r}: a path cannot hold a NUL character")
        if root is None:
            return [os.fspath(p) for p in paths]
        base = Path(root).resolve()
        out = []
        for p in paths:
            path = base / p
            if not path.resolve().is_relative_to(base):
                raise ConfigError(f"{p}: outside the documents folder")
            out.append(str(path))
        for s in discover(out, root=base) if out else []:
            if not s.path.resolve().is_relative_to(base):
                raise ConfigError(f"{s.doc_id}: links outside the documents folder")
        return out

    def _doc_key(self, doc_id: str, access: Access) -> str:
        """The indexed id for ``doc_id``, also without its file suffix, among the documents
        ``access`` sees; :class:`NotFoundError` for any other, in one wording whether it is
        missing or hidden."""
        if not isinstance(doc_id, str):
            raise ConfigError(f"doc_id must be a string, got {doc_id!r}")
        key = self.resolve_doc(doc_id, access=access)
        if key is None:
            raise NotFoundError(f"no document {doc_id!r} in the index")
        return key

    # --- a trusted front end (the CLI): every option, results as objects -----------------
    def resolve_doc(self, doc_id: str, *, access: Access = ANONYMOUS) -> str | None:
        """The indexed id ``doc_id`` names among the documents ``access`` sees, also
        without its file suffix; None when none does (the caller words the error, or
        falls back)."""
        return resolve_doc_id(doc_id, self.index.reader.visible_documents(access))

    def retrieve(self, question: str, config: RetrievalConfig) -> Retrieval:
        """Sections for ``question`` under a whole ``config`` the caller built (its
        ``principal`` and ``where`` are the view): not bounded by :attr:`limits`, for a
        front end the user runs on their own index. :meth:`query` is the request form."""
        return self.index.retrieve(question, config)

    def answer(self, question: str, config: RetrievalConfig, llm: LLM | None = None
               ) -> Answer:
        """:meth:`retrieve`, then an answer with checked citations from ``llm`` (default:
        the service's); :class:`UnavailableError` when there is neither. :meth:`ask` is
        the request form."""
        return self.index.ask(question, self._llm(llm), config)

    def _llm(self, llm: LLM | None = None) -> LLM:
        """``llm``, else the service's; :class:`UnavailableError` when there is neither."""
        if llm is not None:
            return llm
        if self.llm is None:
            raise UnavailableError("no LLM is configured: start the server with --llm "
                                   "(or set GEMINI_API_KEY / PROXY_POINTER_LLM)")
        return self.llm


def describe_invalid(errors: Any, *, whole: str = "body") -> str:
    """Pydantic's validation errors as one readable line, the same over HTTP and MCP:
    ``"budget: Input should be less than or equal to 32000"`` (``whole`` names an error
    about the request as a whole; at most five errors, without pydantic's URL)."""
    parts = []
    for e in list(errors)[:5]:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or whole
        ctx = e.get("ctx") or {}
        detail = f" ({ctx['error']})" if isinstance(ctx.get("error"), str) else ""
        msg = str(e.get("msg", "invalid")).removeprefix("Value error, ")  # ours say enough
        parts.append(f"{where}: {msg}{detail}")
    return "; ".join(parts) or "invalid request"


def _pages(starts: tuple[int, ...], first: int, last: int) -> list[int] | None:
    span = page_span(starts, first, last)
    return list(span) if span is not None else None


def _check_unicode(text: str, what: str) -> None:
    """:class:`ConfigError` for a string that is no Unicode text (a lone surrogate, which
    JSON's ``\\ud800`` escapes can carry): it could be neither stored nor read as a file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ConfigError(f"{what}: not valid Unicode ({e.reason}, character "
                          f"{e.start + 1})") from None


