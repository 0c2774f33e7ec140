"""PDF to Markdown with pages: text lines read by pdfium (:mod:`.lines`), headings from the
printed contents (:mod:`.contents`) or from the layout (:mod:`.layout`), tables from aligned
columns (:mod:`.tables`), put together by :class:`PdfConverter` (:mod:`.converter`)."""

from __future__ import annotations

from .converter import PdfConverter

__all__ = ["PdfConverter"]
