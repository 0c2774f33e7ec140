"""Growth tests' one measure: the best of several repeats of a call, so a test compares the
ratio of two sizes' costs (10x the input, about 10x the time), never a clock limit."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(call: Callable[[], object], repeats: int = 5) -> float:
    """The fastest of ``repeats`` runs of ``call``, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    return best
