"""Servers on 127.0.0.1 for tests: the lifecycle shared by the local protocol stand-ins
(Gemini, OpenAI-compatible), and :func:`serve_asgi` for our own HTTP app under uvicorn.

A :class:`LoopbackServer` subclass supplies ``_handler_class()``; the class binds a free
port on 127.0.0.1, serves in a daemon thread and stops without waiting for handlers that
sleep in a delay.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

__all__ = ["LoopbackServer", "serve_asgi"]


@contextmanager
def serve_asgi(app: Any) -> Iterator[str]:
    """``app`` served by a real uvicorn on a free 127.0.0.1 port in a daemon thread; yields
    its base URL once it accepts connections and stops it on exit."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


class LoopbackServer:
    """Start with ``with Server() as s:`` (or ``start``/``stop``); ``s.base_url`` to use."""

    # A short poll keeps stop() (which waits for the next poll) from costing 0.5 s a test.
    poll_interval = 0.02

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a background thread; returns self."""
        self._stopping.clear()
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        # Handler threads that sleep for a timeout test must not hold up stop().
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": self.poll_interval},
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port; replies still in a delay are dropped."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port."""
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (no API version path)."""
        return f"http://127.0.0.1:{self.port}"
