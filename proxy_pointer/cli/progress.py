"""Indexing progress for people, from :class:`~proxy_pointer.ingest.IngestProgress` events
(``Index.update(progress=...)``, the CLI's ``index``): a redrawn bar on a terminal, a plain
line now and then where stderr is a log; both say the same thing (:func:`describe`): pages
done of all, files, chunks, time so far and time left.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..ingest import IngestProgress

__all__ = ["PROGRESS_EVERY", "Bar", "Lines", "describe", "display"]

#: Seconds between progress lines when stderr is not a terminal (the first line that shows
#: work done and the last are printed whenever they come).
PROGRESS_EVERY = 30.0


def _clock(seconds: float) -> str:
    """``m:ss``, or ``h:mm:ss`` from an hour on."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"
    return f"{s // 60}:{s % 60:02d}"


def describe(event: IngestProgress) -> str:
    """One line of progress: ``120/1,153 pages (10%), 3/22 files, 1,204 chunks, 0:45,
    about 6:30 left`` (``time left: measuring`` until a page is done)."""
    total = max(event.pages_total, 1)
    left = event.seconds_left
    return (f"{event.pages_done:,.0f}/{event.pages_total:,} pages "
            f"({100 * event.pages_done / total:.0f}%), "
            f"{event.documents_done}/{event.documents_total} files, "
            f"{event.chunks_done:,} chunks, {_clock(event.elapsed)}, "
            + ("time left: measuring" if left is None else f"about {_clock(left)} left"))


class Bar:
    """Indexing progress on stderr, redrawn: a bar of pages and :func:`describe`'s line."""

    def __init__(self) -> None:
        from tqdm import tqdm

        self._bar = tqdm(total=1, desc="indexing", file=sys.stderr, leave=False,
                         bar_format="{bar:20}| {desc}")

    def __call__(self, event: IngestProgress) -> None:
        self._bar.total = max(event.pages_total, 1)
        self._bar.n = event.pages_done
        self._bar.set_description_str(f"indexing: {describe(event)}", refresh=False)
        self._bar.refresh()

    @property
    def text(self) -> str:
        """What the bar shows now."""
        return str(self._bar)

    def close(self) -> None:
        self._bar.close()


class Lines:
    """Indexing progress where stderr is a log (CI, nohup, Docker), not a terminal: the
    totals, the first line that shows work done, then one every :data:`PROGRESS_EVERY`
    seconds and the last, each :func:`describe`'s line."""

    def __init__(self) -> None:
        self._last: float | None = None
        self._moved = False

    def __call__(self, event: IngestProgress) -> None:
        first_move = event.pages_done > 0 and not self._moved
        last = event.pages_done >= event.pages_total and event.documents_done > 0
        if not (self._last is None or first_move or last
                or event.elapsed - self._last >= PROGRESS_EVERY):
            return
        self._last, self._moved = event.elapsed, self._moved or event.pages_done > 0
        print(f"indexing: {describe(event)}", file=sys.stderr, flush=True)

    def close(self) -> None:
        pass


def display(*, quiet: bool) -> Bar | Lines | None:
    """What shows progress on stderr: a :class:`Bar` on a terminal, else :class:`Lines`;
    None when ``quiet``."""
    if quiet:
        return None
    return Bar() if sys.stderr.isatty() else Lines()
