"""The retrieved section: the one result type that every interface hands over.

The packer (:mod:`.packing`) makes :class:`Section` s and the retriever
(:mod:`.retrieval`) adds each one's relevance and metadata; synthesis, the service, the
HTTP and MCP servers and the LangChain / LlamaIndex adapters read them. It lives in a
module of its own so that those readers depend on the type, not on the packer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ..refs import Location, Ref
from ..text.pages import page_label

__all__ = ["Section"]


@dataclass(frozen=True)
class Section(Location):
    """One retrieved piece of context: a whole section (or a fallback window) of a document.

    ``start_line`` and ``end_line`` are 1-based and inclusive, as shown to people, and refer
    to the stored copy of the source. ``matched_spans`` are the (1-based, inclusive) line
    spans of the chunks that hit this section. ``trimmed`` is true when the section did not
    fit the token budget whole and only its heading and a window around its matched chunks
    are in ``text``. ``also_in`` names the refs of the same (or a nearly identical) section in
    other documents, handed over once here. ``pages`` are the first and last page (1-based)
    the section's lines came from, for documents converted from a paged format (PDF);
    a trimmed section's are the pages of the lines its ``text`` holds. ``page_breaks``: the
    lines of the section on which its later pages start, so that a citation of some of its
    lines gets its own pages (:meth:`pages_of`). ``packed_spans`` are the (1-based,
    inclusive) line spans that ``text`` holds: the heading and every block or piece of a
    line taken (a whole section: one span). ``relevance`` is the cosine similarity of the
    question and the section's best-matching chunk, clipped to 0-1: unlike ``score`` (a
    rank fusion, ~0.01-0.03) it can be compared across the questions to one corpus and
    cut at a threshold (whose cost depends on the corpus: benchmarks/quality/bench_relevance.py).
    """

    score: float
    tokens: int = 0
    trimmed: bool = False
    matched_spans: tuple[tuple[int, int], ...] = ()
    also_in: tuple[str, ...] = ()
    pages: tuple[int, int] | None = None  # (first, last) 1-based pages, converted PDFs only
    page_breaks: tuple[int, ...] = ()  # lines inside the section on which a new page starts
    packed_spans: tuple[tuple[int, int], ...] = ()  # lines ``text`` holds, 1-based, inclusive
    relevance: float = 0.0  # cosine of question and best chunk, 0-1 (set by the retriever)
    # The document's metadata without its access list (access.public_metadata; set by the
    # retriever).
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def ref(self) -> str:
        """The citation key (:class:`~proxy_pointer.refs.Ref`): ``doc_id#node_id``, or for a
        fallback window its lines, ``doc_id#L<start_line>-<end_line>``."""
        return str(Ref.of_section(self.doc_id, self.node_id, self.start_line, self.end_line))

    @property
    def where(self) -> str:
        """Where the section is, for people: ``"lines 12-30"``, and for a PDF's section
        ``"p. 37-38, lines 12-30"``."""
        lines = f"lines {self.start_line}-{self.end_line}"
        return lines if self.pages is None else f"{page_label(self.pages)}, {lines}"

    def pages_of(self, first: int, last: int) -> tuple[int, int] | None:
        """First and last page of this section's 1-based lines ``first..last``."""
        if self.pages is None:
            return None
        start = self.pages[0]
        return (start + sum(1 for b in self.page_breaks if b <= first),
                start + sum(1 for b in self.page_breaks if b <= max(first, last)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (a result payload's ``contexts`` entries): ``ref`` first, then
        every field."""
        d: dict[str, Any] = {"ref": self.ref}
        d.update((f.name, getattr(self, f.name)) for f in fields(self))
        d["path"] = list(self.path)
        d["matched_spans"] = [list(s) for s in self.matched_spans]
        d["also_in"] = list(self.also_in)
        d["pages"] = list(self.pages) if self.pages is not None else None
        d["page_breaks"] = list(self.page_breaks)
        d["packed_spans"] = [list(s) for s in self.packed_spans]
        return d
