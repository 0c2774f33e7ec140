"""The library's exception types.

Every error proxy-pointer raises on purpose derives from :class:`ProxyPointerError`, so a
caller can catch one type; the CLI turns any of them into one readable line and a non-zero
exit status.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DocumentError",
    "EmbeddingError",
    "ExecutorError",
    "IndexCorruptError",
    "IndexLockedError",
    "IndexMismatchError",
    "IndexNotFoundError",
    "LLMError",
    "NotFoundError",
    "ProxyPointerError",
    "StoreError",
]


class ProxyPointerError(Exception):
    """Base class of every error the library raises deliberately."""


class ConfigError(ProxyPointerError, ValueError):
    """An argument or setting is out of range or inconsistent."""


class DocumentError(ProxyPointerError):
    """A source document cannot be read: missing, not text, wrong encoding.

    ``path`` names the file (or the doc id when the text came from memory) so the message
    always says which document is at fault.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class NotFoundError(ProxyPointerError, KeyError):
    """No such document, section, line range or page in the index; the message says which
    is missing."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class IndexNotFoundError(NotFoundError):
    """No index at a location: the directory does not exist or holds no committed index.
    The message says how to build one."""


class IndexCorruptError(ProxyPointerError):
    """An index directory is missing files or holds files that do not parse."""


class IndexMismatchError(ProxyPointerError):
    """An index was built with another embedder, dimension or schema than requested."""


class IndexLockedError(ProxyPointerError):
    """Another process is writing the same index directory."""


class StoreError(ProxyPointerError):
    """An index store cannot be reached or refused an operation (a Milvus server down,
    a Milvus Lite file another process holds); the message names the location."""


class ExecutorError(ProxyPointerError):
    """An executor cannot start or reach its workers (a Ray that does not start in time, a
    ``RAY_ADDRESS`` nobody answers at); the message says which and what to try."""


class EmbeddingError(ProxyPointerError):
    """An embedding backend failed (bad key, quota, network, wrong shape)."""


class LLMError(ProxyPointerError):
    """A language-model backend failed (bad key, quota, network, malformed reply)."""
