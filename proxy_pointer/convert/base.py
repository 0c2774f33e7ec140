"""What a converter is and what it returns: :class:`Converter`, :class:`Converted`.

A converter turns one file's bytes (PDF, HTML, Word) into Markdown, the one format the rest
of the library reads. The Markdown is what the index stores as the document's source, so
every line number points into it; for paged formats :attr:`Converted.page_starts` maps those
lines back to the pages they came from.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import DocumentError

__all__ = ["MAX_INPUT_BYTES", "ConversionError", "Converted", "Converter", "page_fields",
           "page_label", "page_of", "page_span", "with_page_markers"]

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


def page_of(page_starts: tuple[int, ...], line: int) -> int | None:
    """The 1-based page of 1-based ``line`` (``None`` without a page map)."""
    if not page_starts:
        return None
    return max(1, bisect_right(page_starts, line))


def page_span(page_starts: tuple[int, ...], first: int, last: int
              ) -> tuple[int, int] | None:
    """``(first page, last page)`` that 1-based lines ``first..last`` came from."""
    if not page_starts:
        return None
    a, b = page_of(page_starts, first), page_of(page_starts, max(first, last))
    assert a is not None and b is not None
    return a, b


def page_fields(page_starts: tuple[int, ...], first: int, last: int, end: int | None = None
                ) -> dict[str, Any]:
    """A section's ``pages`` (of 1-based lines ``first..last``) and ``page_breaks`` (page
    starts after ``first`` up to the section's ``end``); none without a page map."""
    span = page_span(page_starts, first, last)
    if span is None:
        return {}
    end = last if end is None else end
    return {"pages": span, "page_breaks": tuple(b for b in page_starts if first < b <= end)}


def page_label(span: tuple[int, int]) -> str:
    """A page span as people write it: ``"p. 37"``, ``"p. 37-38"``."""
    a, b = span
    return f"p. {a}" if a == b else f"p. {a}-{b}"


def with_page_markers(markdown: str, page_starts: tuple[int, ...]) -> str:
    """``markdown`` with a ``<!-- page N -->`` line before the line each page starts on
    (several where pages hold no text), as ``proxy-pointer convert`` prints it."""
    marks: dict[int, list[int]] = {}
    for page, start in enumerate(page_starts, 1):
        marks.setdefault(start, []).append(page)
    out: list[str] = []
    for n, text in enumerate(markdown.splitlines(keepends=True), 1):
        out.extend(f"<!-- page {p} -->\n" for p in marks.get(n, ()))
        out.append(text)
    return "".join(out)
