"""The one place that talks to Gemini (google-genai), for the embedder and the LLM alike.

Both backends get the key from the same variables, a client built the same way (API version
pinned, the SDK's own retries off so counts are exact, never rerouted to Vertex AI), the same
retry policy (:mod:`proxy_pointer.remote.retry`) and the same error messages. Callers pass the
exception type they raise (:class:`~proxy_pointer.errors.EmbeddingError` or
:class:`~proxy_pointer.errors.LLMError`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ProxyPointerError
from .retry import Backoff, Transient, with_retries

if TYPE_CHECKING:
    from google import genai

__all__ = [
    "API_VERSION",
    "KEY_VARS",
    "call",
    "find_key",
    "make_client",
    "missing_key",
    "retry_hint",
]

T = TypeVar("T")

#: Where the key is looked for, in this order.
KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")
#: Pinned: v1beta serves every embedding and generation feature, and google-genai 3.x moved
#: its own default to v1, so the SDK's version must not decide the endpoint.
API_VERSION = "v1beta"
#: Statuses worth retrying: timeout, rate limit, server errors.
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})
_KEY_HINT = "Check GEMINI_API_KEY (or GOOGLE_API_KEY)."


def find_key(api_key: str | None = None) -> str | None:
    """``api_key`` if given, else the first of :data:`KEY_VARS` that is set, else ``None``."""
    if api_key:
        return api_key
    return next((os.environ[v] for v in KEY_VARS if os.environ.get(v)), None)


def missing_key(error: type[ProxyPointerError]) -> ProxyPointerError:
    """The error for a missing key, naming where a key is looked for."""
    return error("no Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY), or pass api_key=")


def make_client(key: str, *, base_url: str | None, timeout: float) -> genai.Client:
    """A google-genai client for ``key``: API version pinned, one attempt per call (the
    caller retries), ``timeout`` seconds per attempt, Gemini Developer API only."""
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=base_url,
        api_version=API_VERSION,
        timeout=max(1, round(timeout * 1000)),  # the SDK takes milliseconds
        retry_options=types.HttpRetryOptions(attempts=1),
    )
    # vertexai=False: a GOOGLE_GENAI_USE_VERTEXAI in the environment must not reroute an
    # API-key client to Vertex AI.
    return genai.Client(api_key=key, vertexai=False, http_options=options)


@functools.cache
def _transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeout, network) exception types of the HTTP clients google-genai may use
    (google-genai 3.x prefers ``httpx2``, a fork whose exceptions are not httpx's)."""
    modules: list[Any] = []
    for name in ("httpx", "httpx2"):
        try:
            modules.append(__import__(name))
        except ImportError:
            continue
    return (tuple(m.TimeoutException for m in modules),
            tuple(m.TransportError for m in modules))


def retry_hint(exc: Any) -> float | None:
    """Seconds the server asked us to wait: a ``Retry-After`` header or a
    ``google.rpc.RetryInfo`` detail (``"retryDelay": "17s"``)."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is not None:
        try:
            value = headers.get("retry-after")
            if value is not None:
                return max(0.0, float(value))
        except (TypeError, ValueError, AttributeError):
            pass
    details: Any = getattr(exc, "details", None)
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details") or []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None


def _describe(exc: Any, code: int, model: str) -> str:
    """The message for a Gemini HTTP error that is not retried."""
    message = getattr(exc, "message", None) or getattr(exc, "status", None) or str(exc)
    if code in (401, 403) or (code == 400 and (
            "API_KEY" in str(getattr(exc, "details", "")) or "api key" in message.lower())):
        return f"Gemini rejected the API key (HTTP {code}): {message}. {_KEY_HINT}"
    if code == 404:
        return f"Gemini model {model!r} not found (HTTP 404): {message}"
    return f"Gemini: the request was invalid (HTTP {code}): {message}"


def call(request: Callable[[], T], *, model: str, timeout: float, max_retries: int,
         sleep: Callable[[float], None], backoff: Backoff,
         error: type[ProxyPointerError]) -> T:
    """Run one SDK request with retries; failures become ``error`` with a clear message.

    Retried: HTTP 408, 429 and 5xx (honouring the server's delay), timeouts and network
    errors. Raised at once: a rejected key, an unknown model, any other client error, and a
    malformed reply.
    """
    from google.genai import errors as genai_errors

    def attempt() -> T:
        try:
            return request()
        except genai_errors.APIError as exc:
            code = int(exc.code or 0)
            if code in RETRYABLE_STATUS or code >= 500:
                detail = exc.message or exc.status or ""
                raise Transient(f"HTTP {code}: {detail}", retry_hint(exc)) from exc
            raise error(_describe(exc, code, model)) from exc
        except Exception as exc:
            timeouts, network = _transport_errors()
            if isinstance(exc, timeouts):
                raise Transient(f"no reply within {timeout:g} s") from exc
            if isinstance(exc, network):
                raise Transient(f"cannot reach Gemini: {type(exc).__name__}: {exc}") from exc
            if isinstance(exc, ValueError):  # UnknownApiResponseError, non-JSON bodies
                raise error(f"Gemini sent a malformed reply: {exc}") from exc
            raise

    def give_up(last: Transient, attempts: int) -> Exception:
        return error(f"Gemini: gave up after {attempts} attempt{'s' * (attempts != 1)}: {last}")

    return with_retries(attempt, max_retries=max_retries, sleep=sleep, backoff=backoff,
                        give_up=give_up)
