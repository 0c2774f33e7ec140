"""Pages of a converted document: the 1-based lines each page starts on (a converter's
``page_starts``) turned into a line's page, a span's pages and their labels. Read by the
tree, refs, packing, sections, synthesis, the service and the CLI; nothing here depends on
how a document was converted. Each call is a binary search or one pass over the text.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

__all__ = ["page_fields", "page_label", "page_of", "page_span", "with_page_markers"]


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
