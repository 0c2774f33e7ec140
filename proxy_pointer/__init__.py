"""proxy-pointer: structural RAG without an LLM at index time.

Markdown headings become a skeleton tree; each section's own text is split into small
chunks that carry their breadcrumb; chunks are only *proxies* whose metadata *point* at
their section; a query returns whole, intact sections sliced from the stored source.

>>> from proxy_pointer import Index                     # doctest: +SKIP
>>> idx = Index.build(["docs/"])                        # doctest: +SKIP
>>> idx.retrieve("What was free cash flow?").sections   # doctest: +SKIP
"""

from importlib.metadata import PackageNotFoundError, version

from .chunking import Chunk, ChunkConfig, chunk_text, chunk_tree
from .documents import read_document
from .embeddings import (
    CachedEmbedder,
    Embedder,
    GeminiEmbedder,
    HashEmbedder,
    SentenceTransformerEmbedder,
    make_embedder,
)
from .errors import (
    ConfigError,
    DocumentError,
    EmbeddingError,
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
    LLMError,
    ProxyPointerError,
)
from .index import Index, UpdateReport
from .noise import NoiseConfig, classify_noise
from .retrieval import Retrieval, RetrievalConfig, Retriever, Section
from .store import VectorIndexConfig
from .synthesis import LLM, Answer, GeminiLLM, OpenAICompatibleLLM, make_llm, synthesize
from .tree import Node, Tree, TreeConfig, build_tree, format_tree

try:
    __version__ = version("proxy-pointer")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "LLM",
    "Answer",
    "CachedEmbedder",
    "Chunk",
    "ChunkConfig",
    "ConfigError",
    "DocumentError",
    "Embedder",
    "EmbeddingError",
    "GeminiEmbedder",
    "GeminiLLM",
    "HashEmbedder",
    "Index",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexMismatchError",
    "LLMError",
    "Node",
    "NoiseConfig",
    "OpenAICompatibleLLM",
    "ProxyPointerError",
    "Retrieval",
    "RetrievalConfig",
    "Retriever",
    "Section",
    "SentenceTransformerEmbedder",
    "Tree",
    "TreeConfig",
    "UpdateReport",
    "VectorIndexConfig",
    "__version__",
    "build_tree",
    "chunk_text",
    "chunk_tree",
    "classify_noise",
    "format_tree",
    "make_embedder",
    "make_llm",
    "read_document",
    "synthesize",
]
