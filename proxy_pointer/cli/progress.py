"""Indexing progress for people, from :class:`~proxy_pointer.ingest.IngestProgress` events
(``Index.update(progress=...)``, the CLI's ``index``): a redrawn bar on a terminal, a plain
line now and then where stderr is a log.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ingest import IngestProgress

__all__ = ["PROGRESS_EVERY", "Bar", "Lines", "display"]

#: Seconds between progress lines when stderr is not a terminal.
PROGRESS_EVERY = 30.0


class Bar:
    """Indexing progress on stderr: bytes read (with MB/s and an ETA), documents, chunks."""

    def __init__(self) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=0, unit="B", unit_scale=True, desc="indexing",
                         file=sys.stderr, leave=False)

    def __call__(self, event: IngestProgress) -> None:
        self._bar.total = event.bytes_total
        self._bar.set_postfix_str(
            f"docs {event.documents_done}/{event.documents_total}, "
            f"chunks {event.chunks_done} ({event.chunks_embedded} embedded)", refresh=False)
        # update(), not assigning n: tqdm's rate and ETA follow the increments.
        self._bar.update(event.bytes_done - self._bar.n)

    def close(self) -> None:
        self._bar.close()


class Lines:
    """Indexing progress where stderr is a log (CI, nohup, Docker), not a terminal: a plain
    line every :data:`PROGRESS_EVERY` seconds instead of a redrawn bar."""

    def __init__(self) -> None:
        self._last = 0.0

    def __call__(self, event: IngestProgress) -> None:
        if event.elapsed - self._last < PROGRESS_EVERY:
            return
        self._last = event.elapsed
        print(f"indexing: {event.documents_done}/{event.documents_total} files, "
              f"{event.bytes_done / 1e6:.1f}/{event.bytes_total / 1e6:.1f} MB, "
              f"{event.chunks_done} chunks ({event.chunks_embedded} embedded), "
              f"{event.elapsed:.0f}s", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


def display(*, quiet: bool) -> Bar | Lines | None:
    """What shows progress on stderr: a :class:`Bar` on a terminal, else :class:`Lines`;
    None when ``quiet``."""
    if quiet:
        return None
    return Bar() if sys.stderr.isatty() else Lines()
