"""What a converter is and what it returns: :class:`Converter`, :class:`Converted`.

A converter turns one file's bytes (PDF, HTML, Word) into Markdown, the one format the rest
of the library reads. The Markdown is what the index stores as the document's source, so
every line number points into it; for paged formats :attr:`Converted.page_starts` maps those
lines back to the pages they came from (:mod:`proxy_pointer.text.pages` reads it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..errors import DocumentError

__all__ = ["MAX_INPUT_BYTES", "ConversionError", "Converted", "Converter"]

#: The most bytes a file may hold, and a compressed file (a .docx) may unpack to: a larger
#: one is skipped with a warning naming it (``ingest.MAX_FILE_BYTES`` is this bound).
MAX_INPUT_BYTES = 100 * 2**20


class ConversionError(DocumentError):
    """A file that cannot be converted (corrupt, encrypted, truncated, no text layer)."""


@dataclass(frozen=True)
class Converted:
    """One converted document.

    ``markdown``: the text to index (lines end in ``\\n``). ``page_starts``: for paged
    formats, the 1-based line of ``markdown`` on which each page starts (``page_starts[0]``
    is page 1's, so it is ``1``; a page that yields no line starts where the next one does);
    ``()`` when the format has no pages. ``warnings``: things a user should know that did not
    stop the conversion ("page 7 has no text layer"), each naming the file. ``structure``:
    counts of the structure the converter read, as ``(name, count)`` pairs (a PDF's
    ``contents_entries``, ``contents_found``, ``statements``), for benchmarks and reports.
    """

    markdown: str
    page_starts: tuple[int, ...] = ()
    warnings: tuple[str, ...] = ()
    structure: tuple[tuple[str, int], ...] = ()

    @property
    def pages(self) -> int:
        """Number of pages (0 for formats without pages)."""
        return len(self.page_starts)


@runtime_checkable
class Converter(Protocol):
    """Turns a file's bytes into :class:`Converted` Markdown.

    ``name`` and ``version`` together are the converter's id (``"pdf/3"``): a document is
    converted again when its bytes or this id change. ``suffixes`` are the lower-case file
    endings it reads (its entry in :data:`proxy_pointer.documents.CONVERTED_FORMATS`).
    ``convert`` raises :class:`ConversionError` naming ``name`` (the file) for a file it
    cannot read; it never raises anything else on file content.
    """

    name: str
    version: str
    suffixes: tuple[str, ...]

    def convert(self, data: bytes, name: str) -> Converted: ...
