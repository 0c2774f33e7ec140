"""A local OpenAI-compatible endpoint that records every request and sends placeholders.

It lets PageIndex's real LLM code path (litellm -> openai SDK -> HTTP) run without a paid
model, so the *number* of calls and the size of the prompts it sends can be measured. The
replies are placeholders, so nothing about answer quality can be read from such a run.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["PLACEHOLDER_SUMMARY", "RecordedCall", "RecordingLLMServer"]

PLACEHOLDER_SUMMARY = "placeholder summary"
_PLACEHOLDER_SEARCH = '{"thinking": "placeholder reply", "node_list": []}'


@dataclass(frozen=True)
class RecordedCall:
    """One chat-completion request: its model, the concatenated message texts, the reply."""

    model: str
    prompt: str
    reply: str
    at: float


class RecordingLLMServer:
    """Serve ``POST */chat/completions`` on 127.0.0.1 (a free port) in a daemon thread.

    Use as a context manager; ``base_url`` is the ``.../v1`` URL to give an OpenAI client,
    ``calls`` the recorded requests in arrival order. A prompt that asks for a JSON
    ``node_list`` (a tree search) gets an empty node list; any other gets
    :data:`PLACEHOLDER_SUMMARY`.
    """

    def __init__(self) -> None:
        self.calls: list[RecordedCall] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                prompt = "\n".join(_content_text(m.get("content"))
                                   for m in body.get("messages") or [] if isinstance(m, dict))
                reply = _PLACEHOLDER_SEARCH if '"node_list"' in prompt else PLACEHOLDER_SUMMARY
                model = str(body.get("model", ""))
                with server._lock:
                    server.calls.append(RecordedCall(model, prompt, reply, time.time()))
                self._send(200, {
                    "id": f"chatcmpl-{len(server.calls)}", "object": "chat.completion",
                    "created": int(time.time()), "model": model,
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                })

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # requests are recorded, not logged

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> RecordingLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # the multi-part message form
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""
