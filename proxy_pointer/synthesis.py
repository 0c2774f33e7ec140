"""Synthesis: answer a question from retrieved sections with an LLM, and check its citations.

The pipeline's last step. :func:`build_prompt` lays the sections out with their ids,
breadcrumbs and numbered lines and tells the model to answer only from them, citing every
claim as ``[doc_id#node_id, lines a-b]``. :func:`synthesize` sends that to any :class:`LLM`
and returns an :class:`Answer` whose citations have been parsed and checked against the
sections actually given: a citation of a section that was not retrieved, or of lines outside
it, is reported in ``Answer.invalid_citations`` instead of being trusted.

Two backends ship: :class:`GeminiLLM` (google-genai) and :class:`OpenAICompatibleLLM` (plain
HTTP, for OpenAI, Ollama, vLLM, llama.cpp, LM Studio...). Both retry rate limits, server
errors and network failures with exponential backoff and jitter, and fail at once, with an
:class:`~proxy_pointer.errors.LLMError` that says why, on a rejected key or invalid request.

Choosing a backend from plain config (see :func:`make_llm`)::

    gemini                      Gemini, default model (needs GEMINI_API_KEY or GOOGLE_API_KEY)
    gemini:gemini-2.5-pro       Gemini, another model
    openai:llama3.1             an OpenAI-compatible server; base URL from ``base_url`` or
                                OPENAI_BASE_URL (default https://api.openai.com/v1), key from
                                OPENAI_API_KEY (optional for local servers)
    none                        no synthesis

Example (any object with ``model_id`` and ``generate`` is an LLM)::

    >>> from proxy_pointer.retrieval import Section
    >>> class Echo:
    ...     model_id = "echo"
    ...     def generate(self, prompt, *, system=None):
    ...         return LLMReply("Adam is used [p.md#0001, lines 2-3].", 10, 5, "echo")
    >>> s = Section("p.md", "0001", "Training", ("Paper", "Training"), 1, 3,
    ...             "## Training\\nWe use Adam\\nwith warmup.\\n", 1.0)
    >>> answer = synthesize("Which optimizer?", [s], Echo())
    >>> answer.grounded, [c.ref for c in answer.citations]
    (True, ['p.md#0001'])
"""

from __future__ import annotations

import functools
import json
import os
import random
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import httpx

from .errors import ConfigError, LLMError
from .retrieval import Section
from .tree import split_lines

__all__ = [
    "DEFAULT_GEMINI_MODEL",
    "ENABLE_SYNTHESIS_HINT",
    "LLM",
    "NOTHING_RETRIEVED",
    "NOT_IN_SECTIONS",
    "Answer",
    "Citation",
    "GeminiLLM",
    "LLMReply",
    "OpenAICompatibleLLM",
    "build_prompt",
    "check_citation",
    "llm_from_env",
    "make_llm",
    "parse_citations",
    "synthesize",
]

DEFAULT_GEMINI_MODEL = "gemini-2.5-flash"
DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

#: The sentence the model is told to write when the sections do not hold the answer.
NOT_IN_SECTIONS = "The provided sections do not contain the answer."

#: The answer text when retrieval returned nothing (the LLM is not called).
NOTHING_RETRIEVED = "Nothing was retrieved for this question, so there is nothing to answer from."

#: One line for the CLI to print when no LLM is configured.
ENABLE_SYNTHESIS_HINT = (
    "To get a synthesized answer, set GEMINI_API_KEY (or use --llm openai:<model> "
    "--llm-base-url <url> for an OpenAI-compatible server such as Ollama or vLLM)."
)

_GEMINI_KEY_VARS = ("GEMINI_API_KEY", "GOOGLE_API_KEY")

# Backoff: 1, 2, 4, 8... seconds, capped, each scaled by a random factor in [0.5, 1) so
# that many clients hitting the same rate limit do not retry in lockstep.
_BACKOFF_BASE = 1.0
_BACKOFF_CAP = 30.0
# A server's own "retry after" hint is honoured up to this long; beyond it we would rather
# fail than hang a CLI call for minutes.
_RETRY_AFTER_CAP = 60.0
_TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


# --------------------------------------------------------------------------- LLM protocol


@dataclass(frozen=True)
class LLMReply:
    """What one LLM call returned.

    ``input_tokens`` / ``output_tokens`` are the backend's own counts (``None`` when it did
    not report them); for Gemini thinking models ``output_tokens`` includes thinking tokens,
    as they are billed as output. ``model`` is the model that answered as the backend names
    it (which may be more specific than the one requested).
    """

    text: str
    input_tokens: int | None
    output_tokens: int | None
    model: str


@runtime_checkable
class LLM(Protocol):
    """A text-in, text-out language model.

    ``generate`` returns an :class:`LLMReply` and raises
    :class:`~proxy_pointer.errors.LLMError` when the backend fails.
    """

    model_id: str

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply: ...


class _Transient(Exception):
    """A failure worth retrying; ``retry_after`` is the server's hint in seconds, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _with_retries(
    attempt: Callable[[], LLMReply],
    *,
    backend: str,
    max_retries: int,
    sleep: Callable[[float], None],
) -> LLMReply:
    """Run ``attempt`` until it succeeds, raises LLMError, or fails transiently too often."""
    for n in range(max_retries + 1):
        try:
            return attempt()
        except _Transient as exc:
            if n == max_retries:
                tries = "attempt" if n == 0 else "attempts"
                raise LLMError(f"{backend}: gave up after {n + 1} {tries}: {exc}") from exc
            delay = min(_BACKOFF_CAP, _BACKOFF_BASE * 2**n) * random.uniform(0.5, 1.0)
            if exc.retry_after is not None:
                delay = max(delay, min(exc.retry_after, _RETRY_AFTER_CAP))
            sleep(delay)
    raise AssertionError("unreachable")


def _check_retry_args(max_retries: int, timeout: float) -> None:
    if max_retries < 0:
        raise ConfigError(f"max_retries must be 0 or more, got {max_retries}")
    if not timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout}")


def _fatal_message(backend: str, status: int, detail: str, key_hint: str) -> str:
    """The LLMError text for a non-retryable HTTP status."""
    detail = f": {detail}" if detail else ""
    if status in (401, 403) or (status == 400 and "api key" in detail.lower()):
        return f"{backend}: the API key was rejected (HTTP {status}){detail}. {key_hint}"
    if status == 404:
        return f"{backend}: model or endpoint not found (HTTP 404){detail}"
    return f"{backend}: the request was invalid (HTTP {status}){detail}"


# --------------------------------------------------------------------------- Gemini


def _gemini_key(api_key: str | None) -> str | None:
    if api_key:
        return api_key
    for var in _GEMINI_KEY_VARS:
        if os.environ.get(var):
            return os.environ[var]
    return None


def _gemini_retry_delay(details: Any) -> float | None:
    """The ``RetryInfo.retryDelay`` ("17s") in a Gemini error body, in seconds."""
    error = details.get("error", details) if isinstance(details, dict) else None
    for item in (error or {}).get("details") or []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None


@functools.cache
def _sdk_transport_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """(timeout, network) exception types of the HTTP clients google-genai may use.

    google-genai 3.x defaults to ``httpx2``, a fork whose exceptions are not httpx's.
    """
    modules: list[Any] = [httpx]
    try:
        import httpx2

        modules.append(httpx2)
    except ImportError:
        pass
    return (
        tuple(m.TimeoutException for m in modules),
        tuple(m.TransportError for m in modules),
    )


class GeminiLLM:
    """Google Gemini through the ``google-genai`` SDK.

    The key comes from ``api_key``, else ``GEMINI_API_KEY``, else ``GOOGLE_API_KEY``.
    ``base_url`` points the client elsewhere (a proxy, or a fake server in tests).
    ``timeout`` is per attempt, in seconds. Rate limits (429), server errors (5xx) and network
    failures are retried up to ``max_retries`` times with exponential backoff and jitter;
    ``sleep`` is injectable so tests need not wait. The SDK's own retrying is switched off so
    these counts are exact.

    Raises :class:`~proxy_pointer.errors.LLMError` at construction when no key is found, and
    from :meth:`generate` on failure; :class:`~proxy_pointer.errors.ConfigError` on bad
    arguments.
    """

    def __init__(
        self,
        model: str = DEFAULT_GEMINI_MODEL,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float = 0.0,
        max_output_tokens: int | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        from google import genai
        from google.genai import types

        if not model:
            raise ConfigError("GeminiLLM needs a model name, e.g. 'gemini-2.5-flash'")
        _check_retry_args(max_retries, timeout)
        key = _gemini_key(api_key)
        if key is None:
            raise LLMError(
                "Gemini: no API key; pass api_key or set GEMINI_API_KEY (or GOOGLE_API_KEY)"
            )
        self.model = model
        self.model_id = f"gemini:{model}"
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.max_retries = max_retries
        self.timeout = timeout
        self._sleep = sleep
        self._types = types
        self._client = genai.Client(
            api_key=key,
            # Never Vertex AI, even if GOOGLE_GENAI_USE_VERTEXAI is set: an API key is the
            # only credential this class documents.
            vertexai=False,
            http_options=types.HttpOptions(
                base_url=base_url,
                # Pinned: v1beta serves every generation feature, and google-genai 3.x moved
                # its own default to v1, so the SDK version must not decide the endpoint.
                api_version="v1beta",
                timeout=max(1, round(timeout * 1000)),  # the SDK takes milliseconds
                # One attempt per call: the retry loop here owns retrying.
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )

    def __repr__(self) -> str:
        return f"GeminiLLM(model={self.model!r})"

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        """Send one prompt; return the reply text and token counts. Raises LLMError."""
        config = self._types.GenerateContentConfig(
            system_instruction=system,
            temperature=self.temperature,
            max_output_tokens=self.max_output_tokens,
        )
        return _with_retries(
            lambda: self._attempt(prompt, config),
            backend="Gemini",
            max_retries=self.max_retries,
            sleep=self._sleep,
        )

    def _attempt(self, prompt: str, config: Any) -> LLMReply:
        from google.genai import errors as genai_errors

        try:
            response = self._client.models.generate_content(
                model=self.model, contents=prompt, config=config
            )
        except genai_errors.APIError as exc:
            status = exc.code or 0
            detail = exc.message or exc.status or ""
            if status in _TRANSIENT_STATUS or status >= 500:
                raise _Transient(
                    f"HTTP {status}: {detail}", _gemini_retry_delay(exc.details)
                ) from exc
            raise LLMError(
                _fatal_message("Gemini", status, detail, "Check GEMINI_API_KEY / GOOGLE_API_KEY.")
            ) from exc
        except Exception as exc:
            timeouts, network = _sdk_transport_errors()
            if isinstance(exc, timeouts):
                raise _Transient(f"no reply within {self.timeout:g} s") from exc
            if isinstance(exc, network):
                raise _Transient(f"network error: {exc!r}") from exc
            if isinstance(exc, ValueError):  # UnknownApiResponseError, pydantic's errors
                raise LLMError(f"Gemini: malformed reply: {exc}") from exc
            raise
        return self._reply(response)

    def _reply(self, response: Any) -> LLMReply:
        candidates = response.candidates or []
        parts = (candidates[0].content.parts or []) if candidates and candidates[0].content else []
        # Thought summaries are not part of the answer.
        text = "".join(p.text for p in parts if p.text and not p.thought)
        if not text.strip():
            if candidates and candidates[0].finish_reason:
                reason = getattr(candidates[0].finish_reason, "value", candidates[0].finish_reason)
            elif response.prompt_feedback and response.prompt_feedback.block_reason:
                block = response.prompt_feedback.block_reason
                reason = f"prompt blocked: {getattr(block, 'value', block)}"
            else:
                reason = "unknown"
            raise LLMError(f"Gemini returned no text (finish reason: {reason})")
        usage = response.usage_metadata
        output = None
        if usage and usage.candidates_token_count is not None:
            output = usage.candidates_token_count + (usage.thoughts_token_count or 0)
        return LLMReply(
            text=text,
            input_tokens=usage.prompt_token_count if usage else None,
            output_tokens=output,
            model=response.model_version or self.model,
        )


# --------------------------------------------------------------------------- OpenAI-compatible


def _chat_completions_url(base_url: str) -> str:
    """``base_url`` + the chat-completions path.

    ``http://host:11434`` and ``http://host:11434/v1`` both mean ``.../v1/chat/completions``;
    any other path is taken as the API root (``.../v1beta/openai`` → ``.../chat/completions``),
    and a URL that already ends in ``/chat/completions`` is used as is.
    """
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"base_url must be an http(s) URL like http://localhost:11434/v1, got {base_url!r}"
        )
    url = base_url.rstrip("/")
    if url.endswith("/chat/completions"):
        return url
    if not parts.path.strip("/"):
        url += "/v1"
    return url + "/chat/completions"


def _retry_after_header(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None


def _openai_error_detail(response: httpx.Response) -> tuple[str, str]:
    """(message, code) from an OpenAI-style error body, or the raw text."""
    try:
        body = response.json()
    except ValueError:
        return response.text.strip()[:300], ""
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or ""), str(error.get("code") or error.get("type") or "")
    if isinstance(error, str):
        return error, ""
    return json.dumps(body)[:300], ""


def _message_text(content: Any) -> str:
    """The text of a chat message ``content``: a string, or a list of typed parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return ""


class OpenAICompatibleLLM:
    """Any server that speaks OpenAI's ``POST /v1/chat/completions``, over plain httpx.

    ``base_url`` may be given with or without the trailing ``/v1``
    (``http://localhost:11434`` for Ollama, ``http://localhost:8000/v1`` for vLLM,
    ``https://api.openai.com/v1``). The bearer key comes from ``api_key``, else
    ``OPENAI_API_KEY``; without one no ``Authorization`` header is sent, which local servers
    accept. Retries and errors as :class:`GeminiLLM`; a 429 that means an exhausted quota
    rather than a rate limit fails at once.

    Raises :class:`~proxy_pointer.errors.ConfigError` on a malformed ``base_url`` or empty
    ``model``; :meth:`generate` raises :class:`~proxy_pointer.errors.LLMError`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_output_tokens: int | None = None,
        max_retries: int = 5,
        timeout: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not model:
            raise ConfigError("OpenAICompatibleLLM needs a model name, e.g. 'llama3.1'")
        _check_retry_args(max_retries, timeout)
        self.url = _chat_completions_url(base_url)
        self.model = model
        self.model_id = f"openai:{model}"
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.max_retries = max_retries
        self.timeout = timeout
        self._sleep = sleep
        key = api_key or os.environ.get("OPENAI_API_KEY")
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM(url={self.url!r}, model={self.model!r})"

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        """Send one prompt; return the reply text and token counts. Raises LLMError."""
        messages = [{"role": "system", "content": system}] if system else []
        messages.append({"role": "user", "content": prompt})
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
        }
        if self.max_output_tokens is not None:
            body["max_tokens"] = self.max_output_tokens
        with httpx.Client(timeout=self.timeout, headers=self._headers) as client:
            return _with_retries(
                lambda: self._attempt(client, body),
                backend=f"OpenAI-compatible server {self.url}",
                max_retries=self.max_retries,
                sleep=self._sleep,
            )

    def _attempt(self, client: httpx.Client, body: dict[str, Any]) -> LLMReply:
        try:
            response = client.post(self.url, json=body)
        except httpx.TimeoutException as exc:
            raise _Transient(f"no reply within {self.timeout:g} s") from exc
        except httpx.TransportError as exc:
            raise _Transient(f"network error: {exc!r}") from exc
        status = response.status_code
        if status >= 400:
            detail, code = _openai_error_detail(response)
            if status == 429 and code == "insufficient_quota":
                raise LLMError(f"OpenAI-compatible server: quota exhausted (HTTP 429): {detail}")
            if status in _TRANSIENT_STATUS or status >= 500:
                raise _Transient(f"HTTP {status}: {detail}", _retry_after_header(response))
            raise LLMError(
                _fatal_message("OpenAI-compatible server", status, detail, "Check OPENAI_API_KEY.")
            )
        try:
            data = response.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMError(
                f"OpenAI-compatible server: malformed reply: {response.text[:300]!r}"
            ) from exc
        text = _message_text((choice.get("message") or {}).get("content"))
        if not text.strip():
            reason = choice.get("finish_reason") or "unknown"
            raise LLMError(f"OpenAI-compatible server returned no text (finish reason: {reason})")
        usage = data.get("usage") or {}
        return LLMReply(
            text=text,
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
            model=data.get("model") or self.model,
        )


# --------------------------------------------------------------------------- factory


def make_llm(
    spec: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **options: Any,
) -> LLM | None:
    """Build an LLM from a CLI-friendly spec: ``gemini[:MODEL]``, ``openai:MODEL`` or ``none``.

    ``spec`` None means ``PROXY_POINTER_LLM``, else ``gemini``. ``base_url`` is the server
    for ``openai`` (else ``OPENAI_BASE_URL``, else ``https://api.openai.com/v1``) and an
    optional endpoint override for ``gemini``; ``openai:<base_url>|<model>`` puts both in one
    string. ``options`` go to the backend's constructor (``temperature``, ``max_retries``,
    ``timeout``...).

    Returns ``None`` for ``none``, and for ``gemini`` when no key is configured, so the caller
    can show the retrieved context with :data:`ENABLE_SYNTHESIS_HINT` instead. Raises
    :class:`~proxy_pointer.errors.ConfigError` on an unknown or incomplete spec, and when
    ``openai`` would go to api.openai.com without ``OPENAI_API_KEY``.
    """
    if spec is None:
        spec = os.environ.get("PROXY_POINTER_LLM") or "gemini"
    kind, _, model = spec.strip().partition(":")
    kind, model = kind.strip().lower(), model.strip()
    if kind in ("none", "off", ""):
        return None
    if kind == "gemini":
        if _gemini_key(api_key) is None:
            return None
        return GeminiLLM(
            model or DEFAULT_GEMINI_MODEL, api_key=api_key, base_url=base_url, **options
        )
    if kind == "openai":
        if "|" in model:
            url_part, _, model = model.rpartition("|")
            base_url, model = base_url or url_part.strip(), model.strip()
        if not model:
            raise ConfigError("--llm openai needs a model: openai:<model>, e.g. openai:llama3.1")
        url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_OPENAI_BASE_URL
        if url == DEFAULT_OPENAI_BASE_URL and not (api_key or os.environ.get("OPENAI_API_KEY")):
            raise ConfigError(
                "openai: set OPENAI_API_KEY for api.openai.com, or give --llm-base-url "
                "(or OPENAI_BASE_URL) for a local server such as http://localhost:11434/v1"
            )
        return OpenAICompatibleLLM(url, model, api_key=api_key, **options)
    raise ConfigError(f"unknown LLM {spec!r}; use gemini, gemini:<model>, openai:<model> or none")


def llm_from_env() -> LLM | None:
    """The LLM named by ``PROXY_POINTER_LLM`` (default ``gemini``); see :func:`make_llm`.

    Also reads ``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``GEMINI_API_KEY`` /
    ``GOOGLE_API_KEY``. Returns ``None`` when synthesis is off or Gemini has no key; raises
    :class:`~proxy_pointer.errors.ConfigError` on a malformed spec.
    """
    return make_llm(None)


# --------------------------------------------------------------------------- prompt

_SYSTEM = f"""\
You answer questions about a collection of documents using ONLY the sections given to you \
in <section> blocks. Do not use outside knowledge, and do not guess.

Rules:
1. Every factual claim must be supported by the sections. After each claim, cite the \
section it comes from in square brackets, using the section's id exactly as given and the \
line numbers shown at the left of its lines: [doc_id#node_id, lines a-b]. For a single line \
write [doc_id#node_id, line a]. Several sources go in one bracket separated by "; ": \
[doc_a#0001, lines 3-5; doc_b#0007, line 12]. A section shown without line numbers (one \
marked trimmed="true", where […] stands for omitted text) is cited by id alone: \
[doc_id#node_id].
2. Cite only section ids that appear in the sections, and only lines inside that section's \
line range.
3. If the sections do not contain the answer, reply with exactly this sentence and nothing \
else: "{NOT_IN_SECTIONS}" If they answer only part of the question, answer that part with \
citations and say which part is not covered.
4. Be concise. Quote numbers, names and definitions as the sections state them."""


def _numbered(section: Section) -> str:
    """The section text with its 1-based line numbers, when they can be trusted."""
    lines = [line.rstrip("\r\n") for line in split_lines(section.text)]
    if len(lines) != section.end_line - section.start_line + 1:
        # The text does not map one-to-one onto the stated range (e.g. an edited copy):
        # numbering it would invite wrong citations, so give it plain.
        return "\n".join(lines)
    width = len(str(section.end_line))
    return "\n".join(
        f"{n:>{width}} | {line}" for n, line in enumerate(lines, start=section.start_line)
    )


def build_prompt(question: str, sections: Sequence[Section]) -> tuple[str, str]:
    """The (system, user) prompt that asks ``question`` over ``sections``.

    Each section is given as a ``<section>`` block with its citation id (``Section.ref``),
    breadcrumb and 1-based inclusive line range, followed by its text with line numbers. The
    system prompt demands grounded, cited answers and the fixed sentence
    :data:`NOT_IN_SECTIONS` when the answer is not there. Raises ConfigError on an empty
    question.
    """
    if not question.strip():
        raise ConfigError("the question is empty")
    blocks = []
    for section in sections:
        attrs = f'id="{section.ref}" lines="{section.start_line}-{section.end_line}"'
        if section.trimmed:
            attrs += ' trimmed="true"'
        breadcrumb = section.breadcrumb or section.title or section.doc_id
        blocks.append(f"<section {attrs}>\nPath: {breadcrumb}\n{_numbered(section)}\n</section>")
    prompt = (
        f"Sections ({len(blocks)}):\n\n"
        + "\n\n".join(blocks)
        + f"\n\nQuestion: {question.strip()}\n\n"
        "Answer from the sections above only, citing each claim as "
        "[doc_id#node_id, lines a-b]."
    )
    return _SYSTEM, prompt


# --------------------------------------------------------------------------- citations


@dataclass(frozen=True)
class Citation:
    """One citation found in an answer.

    ``start_line`` / ``end_line`` are 1-based and inclusive, as the model wrote them (``None``
    when it cited the section without lines; equal for a single line). ``raw`` is the whole
    bracket as it appears in the text, e.g. ``"[a.md#0003, lines 3-5; b.md#0001]"``, shared
    by all citations in one bracket.
    """

    doc_id: str
    node_id: str
    start_line: int | None
    end_line: int | None
    raw: str

    @property
    def ref(self) -> str:
        """``doc_id#node_id``, comparable with ``Section.ref``."""
        return f"{self.doc_id}#{self.node_id}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "doc_id": self.doc_id,
            "node_id": self.node_id,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "raw": self.raw,
        }

    def __str__(self) -> str:
        if self.start_line is None:
            return f"[{self.ref}]"
        if self.start_line == self.end_line:
            return f"[{self.ref}, line {self.start_line}]"
        return f"[{self.ref}, lines {self.start_line}-{self.end_line}]"


_BRACKET_RE = re.compile(r"\[([^\[\]\n]*#[^\[\]\n]*)\]")
# A ref: a doc id (a relative path: letters, digits, / . - _ and even spaces) then '#' and a
# node id ("0003", "preamble", or "L12" for a fallback window). Optional line part after it.
_REF_RE = re.compile(
    r"""^[`'"*\s]*(?P<doc>[^\s#`'"*][^#`'"*]*?)
        \s*\#(?P<node>[A-Za-z0-9](?:[\w.-]*[A-Za-z0-9])?)[`'"*]*
        (?:\s*[,:]?\s*(?:lines?|ll?\.|L)\s*(?P<a>\d+)(?:\s*(?:-|–|—|to)\s*L?(?P<b>\d+))?)?
        [\s.]*$""",
    re.VERBOSE | re.IGNORECASE,
)
_LINES_RE = re.compile(
    r"^\s*(?:lines?|ll?\.|L)\s*(?P<a>\d+)(?:\s*(?:-|–|—|to)\s*L?(?P<b>\d+))?[\s.]*$",
    re.IGNORECASE,
)


def _citation(doc: str, node: str, a: str | None, b: str | None, raw: str) -> Citation:
    start = int(a) if a else None
    end = int(b) if b else start
    if start is not None and end is not None and end < start:
        start, end = end, start
    return Citation(doc.strip(), node, start, end, raw)


def parse_citations(text: str) -> list[Citation]:
    """Every citation in ``text``, in order of appearance, duplicates kept.

    Understands ``[a#b, lines 3-5]``, ``[a#b, line 3]``, ``[a#b]``, several refs in one
    bracket separated by ``;`` (or by ``,`` before another ref), doc ids that are paths
    (``papers/1503.00841.md``), fallback refs ``[doc#L12]``, and en dashes or "to" in ranges.
    Brackets that hold no ref (``[1]``, a link's text) are ignored. Never raises.
    """
    found: list[Citation] = []
    for match in _BRACKET_RE.finditer(text):
        raw = match.group(0)
        for piece in match.group(1).split(";"):
            current: Citation | None = None
            for token in piece.split(","):
                ref = _REF_RE.match(token)
                if ref:
                    if current is not None:
                        found.append(current)
                    current = _citation(ref["doc"], ref["node"], ref["a"], ref["b"], raw)
                    continue
                lines = _LINES_RE.match(token)
                if lines and current is not None and current.start_line is None:
                    current = _citation(
                        current.doc_id, current.node_id, lines["a"], lines["b"], raw
                    )
            if current is not None:
                found.append(current)
    return found


def check_citation(citation: Citation, sections: Iterable[Section]) -> str | None:
    """Why ``citation`` is not backed by ``sections``, or ``None`` when it is.

    A citation is backed when its ref is a given section's ``ref`` and its lines (if any) lie
    within that section's 1-based inclusive range.
    """
    matches = [s for s in sections if s.ref == citation.ref]
    if not matches:
        return f"{citation} cites a section that was not retrieved"
    if citation.start_line is None or citation.end_line is None:
        return None
    if any(
        s.start_line <= citation.start_line and citation.end_line <= s.end_line for s in matches
    ):
        return None
    ranges = ", ".join(f"{s.start_line}-{s.end_line}" for s in matches)
    return f"{citation} cites lines outside the section (lines {ranges})"


# --------------------------------------------------------------------------- answer

_NOT_IN_SECTIONS_RE = re.compile(
    r"sections?\s+do(?:es)?(?:\s+not|n['’]t)\s+contain\s+"
    r"(?:the|an|any|enough information to)\s+answer",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Answer:
    """A synthesized answer and how well it is grounded in the sections it was given.

    ``citations`` holds every citation in ``text`` in order; ``invalid_citations`` the subset
    that cite a section not given or lines outside it, with one reason per entry in
    ``warnings``. ``grounded`` is true when the answer cites at least once and every citation
    is valid. ``unanswerable`` is true when the model said the sections do not contain the
    answer (or nothing was retrieved). Token counts are the LLM's (``None`` if not reported
    or no call was made).
    """

    question: str
    text: str
    sections: tuple[Section, ...]
    citations: tuple[Citation, ...]
    invalid_citations: tuple[Citation, ...]
    grounded: bool
    unanswerable: bool
    input_tokens: int | None
    output_tokens: int | None
    model: str
    warnings: tuple[str, ...] = ()

    @property
    def cited_sections(self) -> tuple[Section, ...]:
        """The given sections that at least one valid citation points to, in given order."""
        refs = {c.ref for c in self.citations if c not in self.invalid_citations}
        return tuple(s for s in self.sections if s.ref in refs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``ask --json``): sections as ``Section.to_dict``, each citation
        with a ``valid`` flag, and the reasons for invalid ones in ``warnings``."""
        invalid = set(self.invalid_citations)
        return {
            "question": self.question,
            "text": self.text,
            "model": self.model,
            "grounded": self.grounded,
            "unanswerable": self.unanswerable,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "citations": [c.to_dict() | {"valid": c not in invalid} for c in self.citations],
            "warnings": list(self.warnings),
            "sections": [s.to_dict() for s in self.sections],
        }


def synthesize(question: str, sections: Sequence[Section], llm: LLM) -> Answer:
    """Ask ``llm`` to answer ``question`` from ``sections`` and check the citations.

    With no sections the LLM is not called and the answer says nothing was retrieved.
    Raises :class:`~proxy_pointer.errors.LLMError` when the LLM fails and ConfigError on an
    empty question.
    """
    sections = tuple(sections)
    if not question.strip():
        raise ConfigError("the question is empty")
    if not sections:
        return Answer(
            question,
            NOTHING_RETRIEVED,
            (),
            (),
            (),
            grounded=False,
            unanswerable=True,
            input_tokens=None,
            output_tokens=None,
            model=llm.model_id,
        )
    system, prompt = build_prompt(question, sections)
    reply = llm.generate(prompt, system=system)
    citations = tuple(parse_citations(reply.text))
    invalid: list[Citation] = []
    warnings: list[str] = []
    for citation in citations:
        problem = check_citation(citation, sections)
        if problem is not None:
            invalid.append(citation)
            warnings.append(problem)
    return Answer(
        question=question,
        text=reply.text,
        sections=sections,
        citations=citations,
        invalid_citations=tuple(invalid),
        grounded=bool(citations) and not invalid,
        unanswerable=bool(_NOT_IN_SECTIONS_RE.search(reply.text)),
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        model=reply.model,
        warnings=tuple(warnings),
    )
