"""Retrying remote calls: one backoff formula for every backend that talks to a server.

Delays grow as ``initial * 2**attempt`` up to ``cap``, each scaled by a random factor in
``[0.5, 1)`` so that clients that failed together do not retry together. A server's own
hint (``Retry-After``, Gemini's ``RetryInfo``) is honoured up to ``hint_cap`` seconds; beyond
that failing beats hanging a CLI call for minutes.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ..errors import ConfigError

__all__ = ["Backoff", "Transient", "check_retry_args", "with_retries"]

T = TypeVar("T")


class Transient(Exception):
    """A failure worth retrying; ``retry_after`` is the server's hint in seconds, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Backoff:
    """The delay before retry number ``attempt`` (0-based)."""

    initial: float = 1.0
    cap: float = 30.0
    hint_cap: float = 60.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def delay(self, attempt: int, hint: float | None = None) -> float:
        delay = min(self.cap, self.initial * 2.0**attempt) * self.rng.uniform(0.5, 1.0)
        if hint is not None:
            delay = max(delay, min(max(0.0, hint), self.hint_cap))
        return delay


def check_retry_args(max_retries: int, timeout: float) -> None:
    """Raise :class:`ConfigError` unless ``max_retries >= 0`` and ``timeout > 0``."""
    if not isinstance(max_retries, int) or isinstance(max_retries, bool) or max_retries < 0:
        raise ConfigError(f"max_retries must be 0 or more, got {max_retries!r}")
    if not timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")


def with_retries(attempt: Callable[[], T], *, max_retries: int, sleep: Callable[[float], None],
                 backoff: Backoff, give_up: Callable[[Transient, int], Exception]) -> T:
    """Run ``attempt`` until it returns, raises something other than :class:`Transient`, or
    has failed transiently ``max_retries + 1`` times; then raise ``give_up(last, attempts)``.
    """
    for n in range(max_retries + 1):
        try:
            return attempt()
        except Transient as exc:
            if n == max_retries:
                raise give_up(exc, n + 1) from exc
            sleep(backoff.delay(n, exc.retry_after))
    raise AssertionError("unreachable")
