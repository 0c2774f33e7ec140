"""What every index store holds and does: typed records and the :class:`Store` protocol.

A store keeps committed *generations* of an index: a manifest and the segments
(:mod:`.segments`) holding document records, the stored copy of each source, chunk rows (the
proxies, row ``i`` = vector ``i``), vectors and the lexical index. Writing a generation is
atomic: readers see the previous one until the new one is complete.
:mod:`proxy_pointer.stores.local` is the embedded default (a directory); another engine
(Milvus) is a new module beside it implementing the same protocol.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..errors import ConfigError, IndexCorruptError, IndexMismatchError
from ..parse.chunking import CHUNKER_VERSION, ChunkConfig
from .records import DocumentRecord
from .vectors import VectorIndexConfig

if TYPE_CHECKING:
    from .segments import SegmentSet

__all__ = [
    "SCHEMA_VERSION",
    "DocumentRecord",
    "EmbedderInfo",
    "Manifest",
    "OpenedIndex",
    "Store",
    "VocabularyInfo",
]

#: Version of the stored layout; a store refuses to read another one (1: whole-file
#: generations, before segments).
SCHEMA_VERSION = 2


@dataclass(frozen=True)
class EmbedderInfo:
    """The embedder an index's vectors came from; queries must use the same one."""

    model_id: str
    dimension: int


@dataclass(frozen=True)
class VocabularyInfo:
    """The vocabulary an index's cards, PDF sections and periods were read with: its
    ``name`` and the SHA-256 of its file."""

    name: str
    sha256: str


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """The settings and counts of one committed index generation.

    ``chunker_version`` is the :data:`~proxy_pointer.parse.chunking.CHUNKER_VERSION` the chunks
    were made with: an index made by another one is re-chunked on update. ``vocabulary`` is
    the filing vocabulary its documents were read with (``None``: an index saved before
    the manifest said).
    """

    embedder: EmbedderInfo
    chunking: ChunkConfig
    vector_index: VectorIndexConfig = field(default_factory=VectorIndexConfig)
    recover_headings: bool = False
    chunker_version: int = CHUNKER_VERSION
    schema_version: int = SCHEMA_VERSION
    library_version: str = ""
    saved_at: str = ""
    n_documents: int = 0
    n_chunks: int = 0
    vocabulary: VocabularyInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON layout of ``manifest.json``."""
        vocabulary = {} if self.vocabulary is None else {
            "vocabulary": dataclasses.asdict(self.vocabulary)}
        return {
            "schema_version": self.schema_version,
            "library_version": self.library_version,
            "embedder": dataclasses.asdict(self.embedder),
            "chunking": {**self.chunking.to_dict(), "algorithm": self.chunker_version},
            "vector_index": dataclasses.asdict(self.vector_index),
            "tree": {"recover_headings": self.recover_headings},
            "saved_at": self.saved_at,
            "n_documents": self.n_documents,
            "n_chunks": self.n_chunks,
            **vocabulary,
        }

    def check_embedder(self, location: str, *, expect_embedder: str | None = None,
                       expect_dimension: int | None = None) -> None:
        """:class:`IndexMismatchError` naming ``location`` when the index's vectors came
        from another embedder or have another dimension than a reader expects."""
        emb = self.embedder
        if expect_embedder is not None and emb.model_id != expect_embedder:
            raise IndexMismatchError(
                f"{location}: index was built with embedder {emb.model_id!r}, "
                f"but {expect_embedder!r} was requested"
            )
        if expect_dimension is not None and emb.dimension != expect_dimension:
            raise IndexMismatchError(
                f"{location}: index vectors have dimension {emb.dimension!r}, "
                f"the embedder produces {expect_dimension}"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str) -> Manifest:
        """Parse ``manifest.json``; :class:`IndexCorruptError` naming ``source`` if malformed.

        The schema version is not checked here (see :meth:`check_schema`), so that an index
        of another version can still be described in the error.
        """
        # A file that parses but holds the wrong shapes is as corrupt as one that does not
        # parse: say which file, never leak a KeyError or TypeError.
        try:
            emb = data["embedder"]
            chunking = data["chunking"]
            return cls(
                embedder=EmbedderInfo(str(emb["model_id"]), int(emb["dimension"])),
                chunking=ChunkConfig.from_dict(chunking),
                vector_index=VectorIndexConfig(**data.get("vector_index", {})),
                recover_headings=bool(data.get("tree", {}).get("recover_headings", False)),
                chunker_version=int(chunking.get("algorithm", 0)),
                schema_version=data.get("schema_version", 0),
                library_version=str(data.get("library_version", "")),
                saved_at=str(data.get("saved_at", "")),
                n_documents=int(data.get("n_documents", 0)),
                n_chunks=int(data.get("n_chunks", 0)),
                vocabulary=(VocabularyInfo(str(data["vocabulary"]["name"]),
                                           str(data["vocabulary"]["sha256"]))
                            if "vocabulary" in data else None),
            )
        except (KeyError, TypeError, ValueError, AttributeError, ConfigError) as e:
            raise IndexCorruptError(f"{source}: bad settings ({e!r})") from None


@dataclass(frozen=True)
class OpenedIndex:
    """A committed generation as a store opens it: settings plus segments read on demand."""

    manifest: Manifest
    segments: SegmentSet
    generation: str = ""


@runtime_checkable
class Store(Protocol):
    """Where an index's committed generations live."""

    @property
    def location(self) -> str:
        """Where the store is, as people write it (a directory, a URI)."""
        ...

    def exists(self) -> bool:
        """Whether a committed generation exists."""
        ...

    def generation(self) -> str:
        """The committed generation's name ("" when none): a cheap check whether another
        writer committed since an index was opened."""
        ...

    def lock(self, *, timeout: float = 0.0) -> AbstractContextManager[None]:
        """Hold the single-writer lock; :class:`IndexLockedError` after ``timeout`` seconds."""
        ...

    def read_manifest(self) -> Manifest:
        """The committed generation's manifest."""
        ...

    def open(self, *, expect_embedder: str | None = None,
             expect_dimension: int | None = None) -> OpenedIndex:
        """The committed generation; :class:`IndexMismatchError` for another embedder."""
        ...

    def scratch(self) -> Path:
        """A folder for a writer's scratch files (a segment staged by an update), on the
        store's own file system where it has one, so that committing links files rather
        than copying them. The writer deletes what it puts there."""
        ...

    def write(self, manifest: Manifest, segments: SegmentSet) -> tuple[str, SegmentSet]:
        """Write what is new in ``segments`` and commit a generation atomically (lock
        held); returns its name and the committed segments as the store now serves them."""
        ...
