"""A deterministic hashed bag of words: no model, no download; for tests and smoke runs."""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from .. import bundled
from ..errors import ConfigError
from ..tokens import WORD_PIECES, WordPieceCounter
from .base import as_text_list, normalize_rows

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"\w+", re.UNICODE)

# Function words carry no topic; without them, two unrelated sentences share "the" and "of"
# and score well above zero. Kept tiny and English-only on purpose: it is a test embedder.
_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was "
    "were will with".split()
)

# Stands in for a text with no words, so every vector still has unit norm.
_EMPTY_FEATURE = "\x00empty"


@lru_cache(maxsize=65536)
def _feature_slot(feature: str, dimension: int) -> tuple[int, float]:
    # blake2b, not hash(): Python salts str hashes per process, which would make vectors
    # differ between the run that built an index and the run that queries it.
    h = int.from_bytes(
        hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little"
    )
    return (h >> 1) % dimension, (1.0 if h & 1 else -1.0)


class HashEmbedder:
    """Deterministic hashed bag of words: no model, no download, microseconds per text.

    Features are lowercased word unigrams plus adjacent-word bigrams (half weight), with
    common English function words dropped, counted with sublinear ``1 + log(tf)`` weights and
    hashed with signed feature hashing into ``dimension`` slots. Texts that share words score
    higher than texts that do not; it knows nothing of synonyms - use it for tests and smoke
    runs, not for real retrieval.

    It reads every word of any text, so no model limit applies; it declares the default
    embedder's window (``max_tokens`` 256 MiniLM word pieces, ``tokenizer`` those word
    pieces) because it stands in for that embedder in tests and smoke runs, which then
    chunk exactly as the default does.

    >>> e = HashEmbedder(32)
    >>> docs = e.embed_documents(["faiss vector index", "baking bread at home"])
    >>> bool(docs[0] @ e.embed_query("vector index") > docs[1] @ e.embed_query("vector index"))
    True
    """

    def __init__(self, dimension: int = 256) -> None:
        if not isinstance(dimension, int) or dimension < 2:
            raise ConfigError(f"HashEmbedder dimension must be an integer >= 2, got {dimension!r}")
        self.dimension = dimension
        self.model_id = f"hash:{dimension}"
        self.max_tokens = bundled.MAX_TOKENS
        self.tokenizer: WordPieceCounter = WORD_PIECES

    def __repr__(self) -> str:
        return f"HashEmbedder(dimension={self.dimension})"

    def _features(self, text: str) -> dict[str, float]:
        """Feature -> weight: ``1 + log(count)`` for words, half that for bigrams."""
        words = _WORD.findall(text.lower())
        content = [w for w in words if w not in _STOPWORDS] or words
        if not content:
            return {_EMPTY_FEATURE: 1.0}
        counts: dict[str, int] = {}
        for w in content:
            counts[w] = counts.get(w, 0) + 1
        bigrams: dict[str, int] = {}
        for a, b in itertools.pairwise(content):
            key = f"{a} {b}"
            bigrams[key] = bigrams.get(key, 0) + 1
        weights = {w: 1.0 + math.log(n) for w, n in counts.items()}
        # A space never occurs inside a \w+ word, so bigram keys cannot collide with words.
        weights.update({g: 0.5 * (1.0 + math.log(n)) for g, n in bigrams.items()})
        return weights

    def _vector(self, text: str) -> np.ndarray:
        vec = np.zeros(self.dimension, dtype=np.float64)
        for feature, weight in self._features(text).items():
            slot, sign = _feature_slot(feature, self.dimension)
            vec[slot] += sign * weight
        if not vec.any():
            # Every feature cancelled out in its slot (rare): fall back to the empty marker.
            slot, sign = _feature_slot(_EMPTY_FEATURE, self.dimension)
            vec[slot] = sign
        return vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of ``texts`` as an ``(n, dimension)`` unit-norm float32 array."""
        items = as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return normalize_rows(np.stack([self._vector(t) for t in items]))

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of ``text`` (the same as for a document), shape ``(dimension,)``."""
        return self.embed_documents([text])[0]

