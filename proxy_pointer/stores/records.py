"""What an index keeps about one source document: :class:`DocumentRecord`.

Its own module so that segments (which hold records) and the store protocol (whose
generations hold segments) both import it without importing each other.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from ..errors import IndexCorruptError

__all__ = ["DocumentRecord"]


@dataclass(frozen=True)
class DocumentRecord:
    """What the index keeps about one source document.

    ``doc_id`` is the path relative to the indexed root (POSIX separators), so an index
    built on one machine means the same on another. ``sha256`` is over the UTF-8 text, or
    for a converted file (PDF, HTML, Word) over its bytes and the converter's id, so either
    change converts it again.
    """

    doc_id: str
    source_path: str
    size: int
    sha256: str
    kind: str = "markdown"  # "markdown" or "text" (sliding-window only)
    title: str = ""
    n_chunks: int = 0
    # Word pieces of each line of the stored copy (tokens.py), so that a section's size is a
    # sum at query time rather than a tokenizer pass; () for indexes saved without them.
    line_tokens: tuple[int, ...] = ()
    # For a converted paged file (PDF): the 1-based line of the stored Markdown on which each
    # page starts (convert.base.Converted.page_starts); () for formats without pages.
    pages: tuple[int, ...] = ()
    converter: str = ""  # "pdf/1": the converter (and version) the stored copy came from
    # The user's metadata (access.py): ``access`` (groups allowed to read it) and any other
    # fields; changing it alone re-embeds nothing.
    metadata: dict[str, Any] = field(default_factory=dict)
    # What the document is, read from its first pages (parse/cards.py, ``Card.to_dict``):
    # title, entity and its names, kind, period; {} for indexes saved before cards.
    card: dict[str, Any] = field(default_factory=dict)

    @property
    def format(self) -> str:
        """The file's format: the converter's name for a converted file (``pdf``, ``html``,
        ``docx``), else ``markdown`` or ``text``; ``kind`` is how the stored copy parses."""
        return self.converter.split("/")[0] if self.converter else self.kind

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (one line of ``documents.jsonl``)."""
        d = dataclasses.asdict(self)
        d["line_tokens"] = list(self.line_tokens)
        d["pages"] = list(self.pages)
        return d

    @classmethod
    def from_dict(cls, row: Any, *, source: str) -> DocumentRecord:
        """Inverse of :meth:`to_dict`; :class:`IndexCorruptError` naming ``source``."""
        try:
            if not isinstance(row, dict):
                raise TypeError(f"expected an object, got {type(row).__name__}")
            row = dict(row)
            for key in ("line_tokens", "pages"):
                if isinstance(row.get(key), list):
                    row[key] = tuple(row[key])
            return cls(**row)
        except TypeError as e:
            raise IndexCorruptError(f"{source}: bad record ({e})") from None
