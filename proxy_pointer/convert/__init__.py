"""Converters from the formats users hold (PDF, HTML, Word) to Markdown, one module each.

:func:`converter_for` picks the converter of a file name; :func:`convert_file` reads and
converts a file. Each backend module is imported only when a file of its format is met. A new
format is a module here with its :class:`Converter` class, plus one line in
:data:`proxy_pointer.documents.CONVERTED_FORMATS`, from which every list of endings derives.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from ..documents import CONVERTED_FORMATS, read_bytes
from .base import ConversionError, Converted, Converter

__all__ = [
    "CONVERTERS",
    "ConversionError",
    "Converted",
    "Converter",
    "convert_bytes",
    "convert_file",
    "converter_for",
    "converter_id",
    "count_pages",
]

#: File ending -> ``module:Class`` of its converter; declared per converter in
#: :data:`proxy_pointer.documents.CONVERTED_FORMATS`.
CONVERTERS: dict[str, str] = {
    suffix: spec for spec, suffixes in CONVERTED_FORMATS.items() for suffix in suffixes
}

_LOADED: dict[str, Converter] = {}
_PDF = "pdf:PdfConverter"  # the paged converter, which reports its pages as it reads them


def converter_for(name: str) -> Converter | None:
    """The converter for a file called ``name`` (by its ending), ``None`` for text formats."""
    suffix = os.path.splitext(name)[1].lower()
    spec = CONVERTERS.get(suffix)
    if spec is None:
        return None
    conv = _LOADED.get(spec)
    if conv is None:
        module, cls = spec.split(":")
        conv = getattr(importlib.import_module(f"{__name__}.{module}"), cls)()
        _LOADED[spec] = conv
    return conv


def count_pages(path: str) -> int | None:
    """A PDF's page count without converting it (pdfium reads its page tree, not its
    pages), for progress; None for other formats and for a file pdfium cannot open (its
    conversion reports the problem)."""
    if not _is_pdf(path):
        return None
    from .pdf.converter import count_pages as pdf_pages

    return pdf_pages(path)


def converter_id(conv: Converter) -> str:
    """``name/version``: stored with a converted document; a change converts it again."""
    return f"{conv.name}/{conv.version}"


def convert_bytes(data: bytes, name: str, *,
                  on_page: Callable[[], None] | None = None) -> Converted:
    """Convert ``data``, the bytes of a file called ``name``; :class:`ConversionError`.
    ``on_page``: called after each page a paged converter (PDF) reads, for progress."""
    conv = converter_for(name)
    if conv is None:
        raise ConversionError(name, "is not a format proxy-pointer converts "
                              f"(converted: {', '.join(sorted(CONVERTERS))})")
    if on_page is not None and _is_pdf(name):
        from .pdf.converter import PdfConverter

        if isinstance(conv, PdfConverter):
            return conv.convert(data, name, on_page=on_page)
    return conv.convert(data, name)


def _is_pdf(name: str) -> bool:
    """Whether ``name`` is read by the paged converter, which reports pages as it reads."""
    return CONVERTERS.get(os.path.splitext(name)[1].lower()) == _PDF


def convert_file(path: str | os.PathLike[str]) -> Converted:
    """Read and convert the file at ``path``; :class:`DocumentError` naming it."""
    name = os.fspath(path)
    return convert_bytes(read_bytes(name), name)
