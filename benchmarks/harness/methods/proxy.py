"""``proxy-pointer``: this library's retriever, with default settings and variants.

One index (noise filter on) serves ``proxy-pointer`` (the library's defaults),
``proxy-pointer-own`` (own text only), ``proxy-pointer-dense`` (BM25 fusion off) and
``proxy-pointer-naive`` (the reference design: the 5 best whole sections, best first, no
fusion, no per-section cap), ``proxy-pointer-sections`` (whole sections packed in rank
order, the packing before evidence packing), ``proxy-pointer-collapsed`` and
``proxy-pointer-traverse`` (the other section-ranking modes), ``proxy-pointer-unrefined``,
``proxy-pointer-refine-50`` and ``-200`` (an index with a refiner, fast mode's, rescoring no,
50 or 200 chunks instead of 100), ``proxy-pointer-milvus`` (the
defaults on an index saved to and read from Milvus Lite); ``proxy-pointer-no-noise``
builds a second index with the noise filter off, ``proxy-pointer-ivf`` one whose every
segment is searched through the memory-mapped IVF index (the default only past 200k
chunks). Each index is saved and read
back, so queries run on the saved files as a CLI or server process would. The
library packs its own sections under the budget; the harness packs them again with the
common rule, which cuts nothing when the library kept to the budget (its ``cut_share`` is
then 0; a non-zero share means the library returned more than the budget).

PDF documents are indexed from the files themselves, through the library's own converter.
Each piece then carries the pages its lines came from (the converter's page map), found line
by line, so a section trimmed to a window around its matched chunks claims only the pages
of the lines it shows.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..context import Piece
from ..dataset import Dataset, Question
from .base import BuildStats, MethodUnavailable, dir_bytes

__all__ = ["ProxyPointerMethod", "restore_cache", "save_cache", "shown_pages"]

# Saved indexes the loaded ones read from; removed when the process exits.
_SAVED: list[str] = []
atexit.register(lambda: [shutil.rmtree(p, ignore_errors=True) for p in _SAVED])

_ELLIPSIS = "[…]"  # the library's marker of left-out text (proxy_pointer.search.packing)


@dataclass(frozen=True)
class _Built:
    index: Any
    stats: BuildStats


_BUILT: dict[tuple[int, str, bool, str, str, str], _Built] = {}


def save_cache() -> dict:
    """A copy of the indexes shared between variants."""
    return dict(_BUILT)


def restore_cache(saved: dict) -> None:
    """Replace the indexes shared between variants with ``saved``."""
    _BUILT.clear()
    _BUILT.update(saved)


def _index_class() -> Any:
    try:
        from proxy_pointer import Index
    except ImportError as exc:
        raise MethodUnavailable(
            f"proxy_pointer.Index is not importable yet ({exc}); the adapter is ready"
        ) from exc
    return Index


def _chunk_config(noise: bool, chunking: str) -> Any:
    """The default chunking (``None``), with every noise category off, 2000/200 chars, or
    (``"windows"``) sliding windows instead of topical segments for headerless documents."""
    if noise and chunking == "tokens":
        return None
    try:
        from proxy_pointer.parse.chunking import ChunkConfig
        from proxy_pointer.parse.noise import NoiseConfig
    except ImportError as exc:
        raise MethodUnavailable(f"cannot configure chunking ({exc})") from exc
    config = (ChunkConfig.chars(2000, 200) if chunking == "chars"
              else ChunkConfig(headerless="windows") if chunking == "windows" else ChunkConfig())
    return config if noise else config.with_noise(NoiseConfig(categories=frozenset()))


class ProxyPointerMethod:
    points_at_sections = True
    scopes = ("per-doc", "corpus")

    def __init__(self, name: str = "proxy-pointer", *, noise: bool = True,
                 chunking: str = "tokens", k: int | None = None, vector_kind: str = "auto",
                 store: str = "local", **options: Any) -> None:
        self.name = name
        self.store = store
        self.vector_kind = vector_kind
        self.noise = noise
        self.chunking = chunking
        # Library defaults (RetrievalConfig) unless a variant overrides them.
        self.options = {**options, **({"k": k} if k is not None else {})}
        shown = ", ".join(f"{key}={v!r}" for key, v in sorted(self.options.items()))
        self.description = (
            f"proxy-pointer Index, {'defaults' if not shown else shown}, "
            f"noise filter {'on' if noise else 'off'}"
            + (", chunks of 2000/200 characters" if chunking == "chars" else "")
            + (", headerless documents in sliding windows" if chunking == "windows" else "")
            + (f", vector index {vector_kind}" if vector_kind != "auto" else "")
            + (", stored in Milvus Lite" if store == "milvus" else "")
        )
        self._index: Any = None
        self._doc_file: dict[str, str] = {}  # dataset doc id -> index doc id (its file name)
        self._dataset_id: dict[str, str] = {}

    @property
    def memory_key(self) -> str:
        """Variants sharing an index share its memory measurement."""
        return (f"proxy-pointer-index-noise-{self.noise}-{self.chunking}-{self.vector_kind}"
                + ("-milvus" if self.store == "milvus" else ""))

    def build(self, dataset: Dataset, embedder: Any) -> BuildStats:
        Index = _index_class()
        self._doc_file = {d: dataset.doc_file(d) for d in dataset.docs}
        self._dataset_id = {f: d for d, f in self._doc_file.items()}
        key = (id(dataset), embedder.model_id, self.noise, self.chunking, self.vector_kind,
               self.store)
        built = _BUILT.get(key)
        if built is not None:
            self._index = built.index
            shared = f"index shared with the other variants (noise {'on' if self.noise else 'off'})"
            return BuildStats(**{**built.stats.__dict__, "notes": (shared,)})
        config = _chunk_config(self.noise, self.chunking)
        paths = [str(dataset.doc_path(d)) for d in dataset.docs]
        texts0, computed0 = embedder.texts, embedder.computed
        t0 = time.perf_counter()
        from proxy_pointer.stores.vectors import VectorIndexConfig

        index = Index.build(paths, root=str(dataset.docs_dir), embedder=embedder,
                            chunk_config=config,
                            vector_config=VectorIndexConfig(kind=self.vector_kind))
        seconds = time.perf_counter() - t0
        tmp = tempfile.mkdtemp(prefix="pp-bench-")
        _SAVED.append(tmp)
        location = f"milvus:{tmp}/index.db" if self.store == "milvus" else tmp
        index.save(location)
        size = dir_bytes(tmp)
        index = Index.load(location, embedder=embedder)
        stats = BuildStats(seconds=seconds, units=len(index.reader.chunks),
                           embed_texts=embedder.texts - texts0,
                           embed_computed=embedder.computed - computed0, index_bytes=size)
        _BUILT[key] = _Built(index, stats)
        self._index = index
        return stats

    def retrieve(self, question: Question, scope: str, budget: int) -> Iterator[Piece]:
        doc_ids = [self._doc_file[question.doc_id]] if scope == "per-doc" else None
        res = self._index.retrieve(question.question, budget=budget, doc_ids=doc_ids,
                                   **self.options)
        for s in res.sections:
            # Tokens are recounted by the harness, not taken from the library's own count.
            yield Piece(text=s.text, doc_id=self._dataset_id.get(s.doc_id, s.doc_id),
                        path=tuple(s.path), pages=shown_pages(self._index, s))


def shown_pages(index: Any, section: Any) -> tuple[tuple[int, int], ...]:
    """Page marks (:attr:`.context.Piece.pages`) of a retrieved section's text: each line of
    the text is looked up among the section's source lines (in order; a line cut short or
    ellipsized by its longest part), and the page it starts on is the converter's. ``()``
    for a document without pages."""
    starts = index.reader.documents[section.doc_id].pages
    if not starts:
        return ()
    try:
        from proxy_pointer.text.pages import page_of
    except ImportError:  # a checkout before the pages moved (bench_shapes --code)
        from proxy_pointer.convert import page_of  # type: ignore[attr-defined,no-redef]

    lines = index.reader.tree(section.doc_id).lines
    cursor, hi = section.start_line - 1, min(section.end_line, len(lines))
    marks: list[tuple[int, int]] = []
    offset = 0
    for shown in section.text.splitlines(keepends=True):
        part = max((p.strip() for p in shown.split(_ELLIPSIS)), key=len)
        at = _find_line(lines, part, cursor, hi) if part else None
        if at is not None:
            cursor = at
            page = page_of(starts, at + 1)
            if page is not None and (not marks or marks[-1][1] != page):
                marks.append((offset, page))
        offset += len(shown)
    return tuple(marks)


def _find_line(lines: list[str], part: str, lo: int, hi: int) -> int | None:
    """The first of ``lines[lo:hi]`` that is ``part`` (stripped), else the first holding it."""
    for i in range(lo, hi):
        if lines[i].strip() == part:
            return i
    for i in range(lo, hi):
        if part in lines[i]:
            return i
    return None
