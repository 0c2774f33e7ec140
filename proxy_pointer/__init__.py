"""proxy-pointer: structural RAG without an LLM at index time.

Markdown headings become a skeleton tree; each section's own text is split into small
chunks that carry their breadcrumb; chunks are only *proxies* whose metadata *point* at
their section; a query returns whole, intact sections sliced from the stored source.

>>> from proxy_pointer import Index                     # doctest: +SKIP
>>> idx = Index.build(["docs/"])                        # doctest: +SKIP
>>> idx.retrieve("What was free cash flow?").sections   # doctest: +SKIP

Names are imported on first use, so ``import proxy_pointer`` (and the CLI's start) stays
cheap: the tokenizer, markdown parser, FAISS and the LLM clients load when needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import (
    ConfigError,
    DocumentError,
    EmbeddingError,
    ExecutorError,
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    LLMError,
    NotFoundError,
    ProxyPointerError,
    StoreError,
)
from .package import VERSION, lazy_exports

__version__ = VERSION

# Module -> the public names it defines (each imported on first attribute access).
_LAZY = {
    "parse.chunking": ("Chunk", "ChunkConfig", "chunk_text", "chunk_tree"),
    "documents": ("SourceFile", "discover", "read_document"),
    "embeddings": ("CachedEmbedder", "Embedder", "GeminiEmbedder", "HashEmbedder",
                   "OnnxEmbedder", "RecordingEmbedder", "SentenceTransformerEmbedder",
                   "make_embedder"),
    "index": ("Index", "UpdateReport"),
    "ingest": ("IngestProgress",),
    "stores.lexical": ("LexicalIndex",),
    "llm": ("LLM", "GeminiLLM", "LLMReply", "OpenAICompatibleLLM", "ScriptedLLM", "make_llm"),
    "parse.noise": ("NoiseConfig", "classify_noise"),
    "search.retrieval": ("Retrieval", "Retriever"),
    "search.config": ("RetrievalConfig", "Tuning"),
    "search.sections": ("Section",),
    "stores": ("DocumentRecord", "LocalStore", "Manifest", "MilvusStore", "Store"),
    "search.synthesis": ("Answer", "Citation", "synthesize"),
    "parse.tree": ("Node", "Tree", "TreeConfig", "build_tree", "format_tree"),
    "stores.vectors": ("VectorIndexConfig",),
    "vocab.synonyms": ("Synonyms",),
}

if TYPE_CHECKING:
    from .documents import SourceFile, discover, read_document
    from .embeddings import (
        CachedEmbedder,
        Embedder,
        GeminiEmbedder,
        HashEmbedder,
        OnnxEmbedder,
        RecordingEmbedder,
        SentenceTransformerEmbedder,
        make_embedder,
    )
    from .index import Index, UpdateReport
    from .ingest import IngestProgress
    from .llm import LLM, GeminiLLM, LLMReply, OpenAICompatibleLLM, ScriptedLLM, make_llm
    from .parse.chunking import Chunk, ChunkConfig, chunk_text, chunk_tree
    from .parse.noise import NoiseConfig, classify_noise
    from .parse.tree import Node, Tree, TreeConfig, build_tree, format_tree
    from .search.config import RetrievalConfig, Tuning
    from .search.retrieval import Retrieval, Retriever
    from .search.sections import Section
    from .search.synthesis import Answer, Citation, synthesize
    from .stores import DocumentRecord, LocalStore, Manifest, MilvusStore, Store
    from .stores.lexical import LexicalIndex
    from .stores.vectors import VectorIndexConfig
    from .vocab.synonyms import Synonyms


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())


__all__ = [
    "LLM", "Answer", "CachedEmbedder", "Chunk", "ChunkConfig", "Citation", "ConfigError",
    "DocumentError", "DocumentRecord", "Embedder", "EmbeddingError", "ExecutorError",
    "GeminiEmbedder", "GeminiLLM", "HashEmbedder", "Index", "IndexCorruptError", "IndexLockedError",
    "IndexMismatchError", "IndexNotFoundError", "IngestProgress", "LLMError", "LLMReply",
    "LexicalIndex", "LocalStore", "Manifest", "MilvusStore", "Node", "NoiseConfig",
    "NotFoundError", "OnnxEmbedder", "OpenAICompatibleLLM", "ProxyPointerError",
    "RecordingEmbedder", "Retrieval", "RetrievalConfig", "Retriever", "ScriptedLLM",
    "Section", "SentenceTransformerEmbedder", "SourceFile", "Store", "StoreError",
    "Synonyms", "Tree", "TreeConfig", "Tuning", "UpdateReport", "VectorIndexConfig",
    "__version__", "build_tree", "chunk_text", "chunk_tree", "classify_noise", "discover",
    "format_tree", "make_embedder", "make_llm", "read_document", "synthesize",
]
