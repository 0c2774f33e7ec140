"""A local stand-in for the Gemini Developer API, for tests (embeddings and generation).

It speaks the protocol google-genai (checked against 3.6) uses with ``api_key=`` and a custom
``base_url``: ``POST /{version}/models/{model}:{action}`` with the key in the
``x-goog-api-key`` header, JSON bodies in, JSON (or SSE) out. Any API version prefix is
accepted. Actions served:

- ``batchEmbedContents`` - body ``{"requests": [{"model", "content": {"parts": [{"text"}]},
  "taskType", "outputDimensionality"}, ...]}`` -> ``{"embeddings": [{"values": [...]}, ...]}``
  (what ``client.models.embed_content`` sends, even for one text)
- ``embedContent`` - one request's fields at top level -> ``{"embedding": {"values": [...]}}``
- ``generateContent`` -> one candidate with ``text`` and ``usageMetadata`` (word counts)
- ``streamGenerateContent`` (``?alt=sse``) -> the same reply as one ``data:`` event

Default vectors are deterministic per text and deliberately *not* unit length (like Gemini's
truncated vectors), sized by ``outputDimensionality`` (else ``dimension``).

API::

    from gemini_server import FakeGemini, Reply, error_reply   # tests/ is on sys.path

    @pytest.fixture
    def gemini():
        with FakeGemini(api_key="test-key") as server:   # 127.0.0.1, random free port
            yield server

    def test_x(gemini):
        client = genai.Client(api_key="test-key",
                              http_options=types.HttpOptions(base_url=gemini.base_url))
        gemini.enqueue(error_reply(429), error_reply(503))   # the next 2 requests fail...
        ...                                                  # ...then defaults again
        assert len(gemini.requests) == 3
        assert gemini.requests[0].action == "batchEmbedContents"

- ``FakeGemini(api_key="test-key", *, text="OK", dimension=768, bad_key_status=400)``:
  ``api_key=None`` accepts any key; a wrong or missing key gets ``bad_key_status`` with an
  ``API_KEY_INVALID`` error, as the real service answers (it does not consume the script).
- ``.enqueue(*replies)``: scripted replies, used first-in first-out by the next requests
  (any action). Each is a :class:`Reply` or a callable ``(Request) -> Reply``.
- ``.text`` (reply text of generate calls) or ``.generate = fn(Request) -> str | Reply``;
  ``.embed = fn(text, dim) -> list[float]`` replaces the default vectors.
- ``.requests``: every request received, in order, as :class:`Request` (``action``,
  ``model``, ``api_version``, ``headers`` lowercased, ``body``, ``api_key``, ``texts``,
  ``task_types``, ``output_dimensionalities``, ``system_text``); ``.requests_for(action)``;
  ``.reset()`` clears requests and script.
- :class:`Reply` ``(status=200, body=None, delay=0.0, headers={}, raw=None, drop=False)``:
  ``body`` None means the default reply; ``delay`` seconds before answering (for client
  timeouts; cut short when the server stops); ``raw`` bytes sent verbatim (malformed JSON);
  ``drop`` closes the connection without an answer.
- :func:`error_reply(status, message=None, *, retry_delay=None, reason=None)`: a Google-style
  error (``{"error": {"code", "message", "status", "details"}}``); ``retry_delay`` (seconds)
  adds a ``google.rpc.RetryInfo`` detail, ``reason`` an ``ErrorInfo`` (e.g.
  ``"API_KEY_INVALID"``).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from loopback import LoopbackServer

__all__ = ["FakeGemini", "Reply", "Request", "error_reply"]

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_PATH = re.compile(r"^/(?P<version>[^/]+)/models/(?P<model>[^/:]+):(?P<action>\w+)$")
_ACTIONS = frozenset(
    {"batchEmbedContents", "embedContent", "generateContent", "streamGenerateContent"}
)


@dataclass(frozen=True)
class Reply:
    """One scripted answer; ``body`` None means the endpoint's default reply."""

    status: int = 200
    body: Any = None
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    drop: bool = False


def error_reply(
    status: int,
    message: str | None = None,
    *,
    retry_delay: float | None = None,
    reason: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """A :class:`Reply` carrying a Google API error body for HTTP ``status``."""
    details: list[dict[str, Any]] = []
    if reason is not None:
        details.append(
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": reason,
                "domain": "googleapis.com",
            }
        )
    if retry_delay is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{retry_delay}s"}
        )
    error: dict[str, Any] = {
        "code": status,
        "message": message or f"fake error {status}",
        "status": _STATUS_NAMES.get(status, "UNKNOWN"),
    }
    if details:
        error["details"] = details
    return Reply(status=status, body={"error": error}, headers=dict(headers or {}))


@dataclass(frozen=True)
class Request:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    api_version: str | None
    model: str | None
    action: str | None
    headers: dict[str, str]
    body: Any

    @property
    def api_key(self) -> str | None:
        """The ``x-goog-api-key`` header (or ``?key=`` query parameter)."""
        return self.headers.get("x-goog-api-key") or (self.query.get("key") or [None])[0]

    def _embed_requests(self) -> list[dict[str, Any]]:
        if not isinstance(self.body, dict):
            return []
        if self.action == "batchEmbedContents":
            return list(self.body.get("requests") or [])
        if self.action == "embedContent":
            return [self.body]
        return []

    @property
    def texts(self) -> list[str]:
        """Texts to embed, or the text parts of ``contents`` of a generate call."""
        if self.action in ("batchEmbedContents", "embedContent"):
            return [_content_text(r.get("content")) for r in self._embed_requests()]
        if isinstance(self.body, dict):
            return [_content_text(c) for c in self.body.get("contents") or []]
        return []

    @property
    def task_types(self) -> list[str | None]:
        """``taskType`` of each embedding request."""
        return [r.get("taskType") for r in self._embed_requests()]

    @property
    def output_dimensionalities(self) -> list[int | None]:
        """``outputDimensionality`` of each embedding request."""
        return [r.get("outputDimensionality") for r in self._embed_requests()]

    @property
    def system_text(self) -> str | None:
        """Text of ``systemInstruction`` of a generate call, if any."""
        if isinstance(self.body, dict) and self.body.get("systemInstruction"):
            return _content_text(self.body["systemInstruction"])
        return None


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, dict):
        return ""
    return "".join(str(p.get("text", "")) for p in content.get("parts") or [])


def default_vector(text: str, dimension: int) -> list[float]:
    """Deterministic pseudo-random vector for ``text`` with norm well above 1."""
    out: list[float] = []
    counter = 0
    while len(out) < dimension:
        digest = hashlib.sha256(f"{counter}\x00{text}".encode()).digest()
        out.extend((b - 127.5) / 32.0 for b in digest)
        counter += 1
    return out[:dimension]


def _words(text: str) -> int:
    return len(text.split())


class FakeGemini(LoopbackServer):
    """A threaded HTTP server on 127.0.0.1 that answers like the Gemini API (see module doc)."""

    def __init__(
        self,
        api_key: str | None = "test-key",
        *,
        text: str = "OK",
        dimension: int = 768,
        bad_key_status: int = 400,
    ) -> None:
        self.api_key = api_key
        self.text = text
        self.dimension = dimension
        self.bad_key_status = bad_key_status
        self.generate: Callable[[Request], str | Reply] | None = None
        self.embed: Callable[[str, int], list[float]] = default_vector
        self._lock = threading.Lock()
        self._script: deque[Reply | Callable[[Request], Reply]] = deque()
        self._requests: list[Request] = []
        super().__init__()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _handler_for(self)

    # -- script and record ---------------------------------------------------------------------

    def enqueue(self, *replies: Reply | Callable[[Request], Reply]) -> None:
        """Answer the next requests with ``replies``, in order, then fall back to defaults."""
        with self._lock:
            self._script.extend(replies)

    @property
    def requests(self) -> list[Request]:
        """A copy of every request received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def requests_for(self, action: str) -> list[Request]:
        """The received requests for one action, e.g. ``"batchEmbedContents"``."""
        return [r for r in self.requests if r.action == action]

    def reset(self) -> None:
        """Forget received requests and pending scripted replies."""
        with self._lock:
            self._requests.clear()
            self._script.clear()

    # -- answering -----------------------------------------------------------------------------

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            self._requests.append(request)
            if request.action not in _ACTIONS:
                return error_reply(404, f"unknown path {request.path}")
            if self.api_key is not None and request.api_key != self.api_key:
                return error_reply(
                    self.bad_key_status,
                    "API key not valid. Please pass a valid API key.",
                    reason="API_KEY_INVALID",
                )
            scripted = self._script.popleft() if self._script else None
        if scripted is not None:
            reply = scripted(request) if callable(scripted) else scripted
        else:
            reply = Reply()
        if reply.body is None and reply.raw is None and reply.status == 200:
            reply = Reply(
                status=200,
                body=self._default_body(request),
                delay=reply.delay,
                headers=reply.headers,
                drop=reply.drop,
            )
        return reply

    def _default_body(self, request: Request) -> Any:
        if request.action == "batchEmbedContents":
            return {"embeddings": [{"values": self._vector(r)} for r in request._embed_requests()]}
        if request.action == "embedContent":
            return {"embedding": {"values": self._vector(request.body)}}
        answer: str | Reply = self.generate(request) if self.generate else self.text
        if isinstance(answer, Reply):
            return answer.body
        prompt_words = sum(_words(t) for t in request.texts) + _words(request.system_text or "")
        return {
            "candidates": [
                {
                    "content": {"parts": [{"text": answer}], "role": "model"},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": prompt_words,
                "candidatesTokenCount": _words(answer),
                "totalTokenCount": prompt_words + _words(answer),
            },
            "modelVersion": request.model,
        }

    def _vector(self, embed_request: dict[str, Any]) -> list[float]:
        dim = embed_request.get("outputDimensionality") or self.dimension
        return self.embed(_content_text(embed_request.get("content")), int(dim))


def _handler_for(fake: FakeGemini) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

        def do_GET(self) -> None:
            self._handle()

        def do_POST(self) -> None:
            self._handle()

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            match = _PATH.match(parts.path)
            request = Request(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                api_version=match["version"] if match else None,
                model=match["model"] if match else None,
                action=match["action"] if match else None,
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
            )
            reply = fake._answer(request)
            if reply.delay and fake._stopping.wait(reply.delay):
                return
            if reply.drop:
                self.close_connection = True
                return
            if reply.raw is not None:
                data, ctype = reply.raw, "application/json"
            elif request.action == "streamGenerateContent" and reply.status == 200:
                data = f"data: {json.dumps(reply.body)}\r\n\r\n".encode()
                ctype = "text/event-stream"
            else:
                data, ctype = json.dumps(reply.body).encode(), "application/json"
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (its timeout); nothing to tell it

    return Handler
