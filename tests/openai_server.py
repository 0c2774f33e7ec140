"""A local fake of an OpenAI-compatible chat-completions server, for tests.

It listens on 127.0.0.1 at a random port in a background thread, records every request, and
answers from a script of replies (then a default completion once the script runs out)::

    with FakeOpenAIServer() as server:
        server.script(Reply.error(503), Reply.completion("Hello"))
        llm = OpenAICompatibleLLM(server.base_url + "/v1", "m", sleep=lambda s: None)
        llm.generate("hi")
        assert len(server.requests) == 2

Only ``POST /v1/chat/completions`` (or ``/chat/completions``) is served; any other path
gets 404, like a real server, so a wrong URL shows up as an error in a test.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import LoopbackServer

__all__ = ["FakeOpenAIServer", "RecordedRequest", "Reply"]

_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it; header names are lower-case."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any  # parsed JSON, or the raw text when it is not JSON


@dataclass(frozen=True)
class Reply:
    """One scripted reply: status, JSON (or text) body, extra headers, and a delay first."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0

    @classmethod
    def completion(
        cls,
        text: str | None = "ok",
        *,
        model: str = "fake-model",
        prompt_tokens: int | None = 11,
        completion_tokens: int | None = 7,
        finish_reason: str = "stop",
        delay: float = 0.0,
    ) -> Reply:
        """A 200 chat completion whose message content is ``text``."""
        body: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish_reason,
                }
            ],
        }
        if prompt_tokens is not None and completion_tokens is not None:
            body["usage"] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
        return cls(200, body, delay=delay)

    @classmethod
    def error(
        cls,
        status: int,
        message: str = "fake error",
        *,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """An OpenAI-style error body: ``{"error": {"message", "type", "code"}}``."""
        body = {"error": {"message": message, "type": "fake_error", "code": code}}
        return cls(status, body, headers=dict(headers or {}))


class FakeOpenAIServer(LoopbackServer):
    """The fake server; use as a context manager (or call ``start`` and ``stop``)."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        super().__init__()

    def script(self, *replies: Reply) -> None:
        """Queue replies, served in order; afterwards every request gets a default completion."""
        with self._lock:
            self._script.extend(replies)

    def _next(self) -> Reply:
        with self._lock:
            return self._script.pop(0) if self._script else Reply.completion()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode("utf-8")
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw
                headers = {k.lower(): v for k, v in self.headers.items()}
                with server._lock:
                    server.requests.append(RecordedRequest("POST", self.path, headers, body))
                if self.path not in _PATHS:
                    self._send(Reply.error(404, f"no route {self.path}"))
                    return
                self._send(server._next())

            def _send(self, reply: Reply) -> None:
                if reply.delay and server._stopping.wait(reply.delay):
                    return  # stopping: end the delay at once
                is_text = isinstance(reply.body, str)
                data = (reply.body if is_text else json.dumps(reply.body)).encode("utf-8")
                try:
                    self.send_response(reply.status)
                    content_type = "text/plain" if is_text else "application/json"
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler
