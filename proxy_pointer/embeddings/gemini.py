"""Gemini embeddings (``gemini-embedding-001``) through google-genai, batched and retried."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..errors import ConfigError, EmbeddingError
from ..remote import gemini as remote
from ..remote.retry import Backoff, check_retry_args
from ..tokens import WORD_PIECES, WordPieceCounter
from .base import as_text_list, normalize_rows

if TYPE_CHECKING:
    from google import genai

__all__ = ["GeminiEmbedder"]

# The Gemini API accepts at most this many texts in one batchEmbedContents request.
_MAX_BATCH = 100
# Full output sizes, used when output_dimensionality is None.
_NATIVE_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}
# The documented input limit of gemini-embedding-001 and text-embedding-004, in tokens.
_MAX_INPUT_TOKENS = 2048


class GeminiEmbedder:
    """Gemini embeddings through the ``google-genai`` SDK (the Gemini Developer API).

    Documents are sent with task type ``RETRIEVAL_DOCUMENT`` in batches of ``batch_size``
    (at most 100, the API's limit), queries with ``RETRIEVAL_QUERY``. Vectors are
    L2-normalized here, because Gemini returns truncated (``output_dimensionality`` < 3072)
    vectors unnormalized.

    Quota (429), timeout (408), server (5xx) and network errors are retried up to
    ``max_retries`` times with exponential backoff and jitter (``initial_delay`` doubling up
    to ``max_delay``), longer when the server says how long to wait; the SDK's own retrying is
    switched off so the count is exact. A rejected key (400 ``API_KEY_INVALID``, 401, 403)
    and other client errors fail at once. :mod:`proxy_pointer.remote.gemini` holds these rules.

    The key comes from ``api_key`` or the ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY`` environment
    variables. ``base_url`` points the client elsewhere (a proxy, a local test server);
    ``client`` supplies a ready ``genai.Client`` instead (its retry settings then apply too).
    ``sleep`` is called with each backoff delay; tests pass a recorder.

    ``max_tokens`` is the documented input limit, 2,048 tokens. Gemini's tokenizer is only
    reachable through the API, so ``tokenizer`` is the bundled MiniLM's word pieces
    (:mod:`proxy_pointer.tokens`): a 30k-piece vocabulary cuts most text into no fewer
    pieces than Gemini's far larger one, so counts tend to err on the long (safe) side.

    Raises :class:`~proxy_pointer.errors.ConfigError` for bad arguments and
    :class:`~proxy_pointer.errors.EmbeddingError` for a missing key (at construction) or a
    failed request (when embedding).
    """

    def __init__(
        self,
        model: str = "gemini-embedding-001",
        *,
        api_key: str | None = None,
        output_dimensionality: int | None = 768,
        batch_size: int = _MAX_BATCH,
        base_url: str | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        client: genai.Client | None = None,
        initial_delay: float = 1.0,
        max_delay: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        model = model.removeprefix("models/")
        if not model:
            raise ConfigError("GeminiEmbedder needs a model name, e.g. 'gemini-embedding-001'")
        if not isinstance(batch_size, int) or not 1 <= batch_size <= _MAX_BATCH:
            raise ConfigError(
                f"batch_size must be between 1 and {_MAX_BATCH}, got {batch_size!r}"
            )
        check_retry_args(max_retries, timeout)
        if output_dimensionality is None:
            if model not in _NATIVE_DIMS:
                raise ConfigError(
                    f"output size of {model!r} is unknown: pass output_dimensionality"
                )
            dimension = _NATIVE_DIMS[model]
        elif not isinstance(output_dimensionality, int) or output_dimensionality < 1:
            raise ConfigError(
                f"output_dimensionality must be a positive integer, got {output_dimensionality!r}"
            )
        else:
            dimension = output_dimensionality
        self.model = model
        self.output_dimensionality = output_dimensionality
        self.dimension = dimension
        self.model_id = f"gemini:{model}:{dimension}"
        self.max_tokens = _MAX_INPUT_TOKENS
        self.tokenizer: WordPieceCounter = WORD_PIECES
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout = float(timeout)
        self.base_url = base_url
        self._backoff = Backoff(initial=float(initial_delay), cap=float(max_delay))
        self._sleep = sleep
        if client is None:
            key = remote.find_key(api_key)
            if key is None:
                raise remote.missing_key(EmbeddingError)
            client = remote.make_client(key, base_url=base_url, timeout=self.timeout)
        self._client = client

    def __repr__(self) -> str:
        return f"GeminiEmbedder({self.model!r}, output_dimensionality={self.dimension})"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, shape ``(len(texts), dimension)``.

        Raises EmbeddingError when a request fails after retries, the key is rejected, or the
        reply has the wrong number or size of vectors.
        """
        items = as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._embed_batch(items[i : i + self.batch_size], "RETRIEVAL_DOCUMENT")
            for i in range(0, len(items), self.batch_size)
        ]
        return normalize_rows(np.concatenate(parts, axis=0))

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of one search query (task type ``RETRIEVAL_QUERY``), shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        return normalize_rows(self._embed_batch([text], "RETRIEVAL_QUERY"))[0]

    def _embed_batch(self, texts: list[str], task_type: str) -> np.ndarray:
        from google.genai import types

        config = types.EmbedContentConfig(
            task_type=task_type, output_dimensionality=self.output_dimensionality
        )
        response = remote.call(
            # cast: the SDK's list-of-unions parameter type rejects list[str].
            lambda: self._client.models.embed_content(
                model=self.model, contents=cast(Any, texts), config=config),
            model=self.model, timeout=self.timeout, max_retries=self.max_retries,
            sleep=self._sleep, backoff=self._backoff, error=EmbeddingError,
        )
        return self._vectors(response, len(texts))

    def _vectors(self, response: Any, expected: int) -> np.ndarray:
        embeddings = getattr(response, "embeddings", None) or []
        if len(embeddings) != expected:
            raise EmbeddingError(
                f"Gemini returned {len(embeddings)} embeddings for {expected} texts"
            )
        rows = [list(e.values or []) for e in embeddings]
        bad = next((len(r) for r in rows if len(r) != self.dimension), None)
        if bad is not None:
            raise EmbeddingError(
                f"Gemini returned a {bad}-dimensional vector, expected {self.dimension} "
                f"(model {self.model!r})"
            )
        return np.asarray(rows, dtype=np.float32)
