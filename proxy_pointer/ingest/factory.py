"""Executors by name, for the command line's ``--executor``: the library takes objects."""

from __future__ import annotations

from ..errors import ConfigError
from .executor import Executor, LocalExecutor
from .ray import RayExecutor

__all__ = ["EXECUTORS", "make_executor"]

#: The names :func:`make_executor` knows.
EXECUTORS = ("local", "ray")


def make_executor(name: str, *, workers: int | None = None) -> Executor:
    """``LocalExecutor(workers)`` for ``"local"``, ``RayExecutor(workers)`` for ``"ray"``.

    Raises :class:`~proxy_pointer.errors.ConfigError` for another name or a bad ``workers``.

    >>> type(make_executor("ray", workers=2)).__name__   # Ray is imported when a run starts
    'RayExecutor'
    """
    if name == "local":
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(workers)
    raise ConfigError(f"executor must be 'local' or 'ray', got {name!r}")
