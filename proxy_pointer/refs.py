"""Refs: the one pointer to a piece of a document that search hands out and every interface
opens (the API, the CLI, HTTP, MCP, citations).

A ref is a doc id, ``#``, and what to open in that document:

=====================  ==================================================================
``doc.md#0003``        a node of the document's tree: its whole section, subsections included
``doc.md#preamble``    (node ids are PageIndex's ``0000``, ``0001``… and ``preamble``)
``doc.md#L12-30``      lines 12 to 30, 1-based and inclusive (``doc.md#L12``: line 12 alone);
                       a fallback window's ref, or any range of lines
``doc.md#p3-5``        pages 3 to 5, 1-based and inclusive (``doc.md#p3``: page 3), for
                       documents converted from a paged format (PDF)
=====================  ==================================================================

Doc ids are paths and may hold ``#``, so a ref splits on its *last* ``#``. Every ref has
one spelling: :meth:`Ref.parse` accepts only what :meth:`Ref.format` writes (surrounding
whitespace aside), so ``str(Ref.parse(s)) == s.strip()`` and refs compare as strings.

A part after ``#`` that starts with ``L`` or ``p`` and a digit (or ``-``) is a line or page
range, and one that is not well formed is an error, never a node id. The
library's node ids never look like that (they are digits or ``preamble``, also for topical
segments), so :class:`Ref` refuses such a node id. Should a tree still hold one (a tree
made elsewhere), :func:`open_ref` gives the node precedence: a node id that exists in the
tree wins over the line or page reading of the same text.

>>> r = Ref.parse("notes/a.md#L12-30")
>>> r.lines, str(r), str(Ref("paper.md", "0003"))
((12, 30), 'notes/a.md#L12-30', 'paper.md#0003')
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any, Literal

from .documents import resolve_doc_id
from .errors import ConfigError, NotFoundError
from .parse.tree import Tree
from .text.pages import page_span

__all__ = ["FORMS", "Location", "Ref", "SectionText", "open_ref", "resolve"]

#: Every form a ref may take, for error messages.
FORMS = ("doc_id#node_id (a section: doc.md#0003, doc.md#preamble), doc_id#L<a>-<b> "
         "(lines a to b, 1-based: doc.md#L12-30, or doc.md#L12 for one line) or "
         "doc_id#p<a>-<b> (pages: doc.md#p3-5, doc.md#p3)")

_SPAN_LIKE = re.compile(r"[Lp][-0-9]")  # a line or page range, maybe malformed
_SPAN = re.compile(r"(?P<kind>[Lp])(?P<a>[1-9][0-9]*)(?:-(?P<b>[1-9][0-9]*))?")


@dataclass(frozen=True)
class Ref:
    """A pointer into one document: a node, a line range or a page range (exactly one).

    ``lines`` and ``pages`` are ``(first, last)``, 1-based and inclusive. Build one with
    ``Ref(doc_id, node_id)``, ``Ref(doc_id, lines=(12, 30))`` or ``Ref(doc_id,
    pages=(3, 5))``, or read one with :meth:`parse`. Raises :class:`ConfigError` when the
    parts do not make a ref that :meth:`parse` would read back the same.
    """

    doc_id: str
    node_id: str | None = None
    lines: tuple[int, int] | None = None
    pages: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        problem = _problem(self)
        if problem is not None:
            raise ConfigError(f"bad ref parts {self.doc_id!r}, node_id={self.node_id!r}, "
                              f"lines={self.lines!r}, pages={self.pages!r}: {problem}")

    @classmethod
    def parse(cls, text: str) -> Ref:
        """The ref ``text`` spells (surrounding whitespace ignored); :class:`ConfigError`
        naming ``text`` and the accepted forms when it is not one."""
        if not isinstance(text, str):
            raise ConfigError(f"a ref is a string like doc.md#0003, got {text!r}")
        doc_id, sep, fragment = text.strip().rpartition("#")
        if not sep:
            raise _bad(text, "no '#'")
        return cls._read(doc_id, fragment, text)

    @classmethod
    def of(cls, doc_id: str, fragment: str) -> Ref:
        """The ref of ``doc_id`` and the part after its ``#`` (``"0003"``, ``"L12-30"``,
        ``"p3"``), e.g. from a URL path; raises as :meth:`parse`."""
        if not isinstance(doc_id, str) or not isinstance(fragment, str):
            raise ConfigError(f"a doc id and a node id, lines or pages are strings, got "
                              f"{doc_id!r} and {fragment!r}")
        return cls._read(doc_id, fragment, f"{doc_id}#{fragment}")

    @classmethod
    def of_section(cls, doc_id: str, node_id: str | None, first: int, last: int) -> Ref:
        """The ref of a retrieved section: its node, or for a fallback window (no node) its
        1-based inclusive lines ``first`` to ``last``."""
        if node_id is None:
            return cls(doc_id, lines=(first, last))
        return cls(doc_id, node_id)

    @classmethod
    def _read(cls, doc_id: str, fragment: str, text: str) -> Ref:
        if not doc_id:
            raise _bad(text, "no doc id before '#'")
        if not fragment:
            raise _bad(text, "nothing after '#'")
        if _SPAN_LIKE.match(fragment):
            m = _SPAN.fullmatch(fragment)
            if m is None:
                raise _bad(text, f"{fragment!r} is not a range like L12-30 or p3 (whole "
                                 "numbers from 1, no leading zeros or spaces)")
            a = int(m["a"])
            b = a if m["b"] is None else int(m["b"])
            if b < a:
                raise _bad(text, f"the range {fragment} ends before it starts")
            if m["b"] is not None and b == a:
                raise _bad(text, f"write {m['kind']}{a} for a range of one")
            span = (a, b)
            parts: dict[str, Any] = {"lines": span} if m["kind"] == "L" else {"pages": span}
        else:
            parts = {"node_id": fragment}
        problem = _problem_doc(doc_id) or (_problem_node(fragment) if "node_id" in parts
                                           else None)
        if problem is not None:
            raise _bad(text, problem)
        return cls(doc_id, **parts)

    @property
    def kind(self) -> Literal["node", "lines", "pages"]:
        """What the ref points at."""
        if self.lines is not None:
            return "lines"
        return "pages" if self.pages is not None else "node"

    @property
    def fragment(self) -> str:
        """The part after ``#``: ``"0003"``, ``"L12-30"``, ``"L12"``, ``"p3-5"``."""
        if self.node_id is not None:
            return self.node_id
        letter, span = ("L", self.lines) if self.lines is not None else ("p", self.pages)
        a, b = span or (0, 0)  # one of them is set (checked when built)
        return f"{letter}{a}" if a == b else f"{letter}{a}-{b}"

    def format(self) -> str:
        """The ref as text, ``doc_id#fragment``; :meth:`parse` reads it back."""
        return f"{self.doc_id}#{self.fragment}"

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class Location:
    """Where a piece of a stored document is, with its text: the location fields that a
    retrieved :class:`~proxy_pointer.search.sections.Section` and an opened
    :class:`SectionText` share. ``start_line``/``end_line`` are 1-based and inclusive;
    ``path`` is the breadcrumb (document title, then headings); ``node_id`` is None for
    lines that are not one node's section."""

    doc_id: str
    node_id: str | None
    title: str
    path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str

    @property
    def breadcrumb(self) -> str:
        """The path as people read it: ``"Paper > Methods > Training"``."""
        return " > ".join(self.path)


@dataclass(frozen=True)
class SectionText(Location):
    """What a ref opens: ``text`` from the stored copy of the document.

    ``start_line``/``end_line`` are 1-based and inclusive. For a node ref, ``node_id``,
    ``title`` (empty for the preamble) and ``path`` (breadcrumb: document title, then
    headings) are the node's and ``text`` is its whole section with subsections; for a line
    ref ``node_id`` is None, ``text`` is exactly those lines and ``title``/``path`` are those
    of the section holding the first line (the document title where it has none); a page
    ref opens the lines of those pages. ``ref`` is the ref as opened, with the doc id as
    indexed. ``pages``: the first and last page the text came from (converted PDFs only).
    """

    pages: tuple[int, int] | None = None
    ref: Ref = field(kw_only=True)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the HTTP and MCP payload): ``ref`` as text, ``path`` a list."""
        return {"doc_id": self.doc_id, "node_id": self.node_id, "ref": str(self.ref),
                "title": self.title, "path": list(self.path), "start_line": self.start_line,
                "end_line": self.end_line, "text": self.text,
                "pages": list(self.pages) if self.pages is not None else None}


def resolve(ref: Ref | str, known: Container[str]) -> Ref:
    """``ref`` (read with :meth:`Ref.parse` when it is text) with its doc id as ``known``
    holds it, also when it was given without its file suffix (``"1908.05828#0003"``).

    Raises :class:`ConfigError` for a malformed ref and :class:`NotFoundError` when no
    document of ``known`` matches.
    """
    r = ref if isinstance(ref, Ref) else Ref.parse(ref)
    key = resolve_doc_id(r.doc_id, known)
    if key is None:
        raise NotFoundError(f"no document {r.doc_id!r} in the index")
    return r if key == r.doc_id else dataclasses.replace(r, doc_id=key)


def open_ref(tree: Tree, ref: Ref, pages: tuple[int, ...] = ()) -> SectionText:
    """The text ``ref`` points at in ``tree`` (the document ``ref`` names; the result
    carries ``tree.doc_id``). ``pages``: the document's page map (the line on which each
    page starts, ``DocumentRecord.pages``), for documents converted from PDF.

    A node ref opens the node's whole section, a line ref those lines (validated against
    the document's line count), a page ref the lines of those pages. Raises
    :class:`NotFoundError` for a node the tree lacks, lines or pages past the end, pages
    that hold no text, or a page ref into a document without pages.
    """
    ref = ref if ref.doc_id == tree.doc_id else dataclasses.replace(ref, doc_id=tree.doc_id)
    n = len(tree.lines)
    if ref.node_id is not None or ref.fragment in tree:  # a node named like a range wins
        try:
            found = tree.get(ref.fragment)
        except KeyError:
            raise NotFoundError(f"{tree.doc_id}: no section {ref.fragment!r}") from None
        return SectionText(tree.doc_id, found.node_id, found.title, tree.breadcrumb(found),
                           found.start + 1, found.end, tree.section_text(found),
                           page_span(pages, found.start + 1, found.end), ref=ref)
    if ref.pages is not None:
        a, b = _page_lines(tree.doc_id, ref, pages, n)
    else:
        assert ref.lines is not None
        a, b = ref.lines
        if b > n:
            raise NotFoundError(f"{ref}: {tree.doc_id} has {n} line{'s' * (n != 1)}, so no "
                                f"line {b}")
    node = tree.node_at(a - 1) if tree.nodes else None
    title = (node.title if node is not None else "") or tree.title
    path = tree.breadcrumb(node) if node is not None else (tree.title,)
    return SectionText(tree.doc_id, None, title, path, a, b, tree.slice(a - 1, b),
                       page_span(pages, a, b), ref=ref)


def _page_lines(doc_id: str, ref: Ref, pages: tuple[int, ...], n: int) -> tuple[int, int]:
    """The 1-based lines ``(first, last)`` of ``ref``'s pages."""
    assert ref.pages is not None
    if not pages:
        raise NotFoundError(f"{ref}: {doc_id} has no pages (only documents converted from "
                            "PDF do); open it by section or by lines, e.g. doc.md#0003 or "
                            "doc.md#L12-30")
    a, b = ref.pages
    if b > len(pages):
        raise NotFoundError(f"{ref}: {doc_id} has {len(pages)} page"
                            f"{'s' * (len(pages) != 1)}, so no page {b}")
    first, last = pages[a - 1], (pages[b] - 1 if b < len(pages) else n)
    if last < first:
        raise NotFoundError(f"{ref}: " + (f"page {a} of {doc_id} holds" if a == b else
                            f"pages {a}-{b} of {doc_id} hold") + " no text")
    return first, last


# --- validation ----------------------------------------------------------------------------
def _bad(text: str, problem: str) -> ConfigError:
    return ConfigError(f"bad ref {text!r}: {problem}; a ref is {FORMS}")


def _problem_doc(doc_id: object) -> str | None:
    if not isinstance(doc_id, str) or not doc_id:
        return "no doc id before '#'"
    if doc_id != doc_id.strip():
        return f"the doc id {doc_id!r} starts or ends with a space"
    return None


def _problem_node(node_id: str) -> str | None:
    if any(c.isspace() for c in node_id):
        return f"the node id {node_id!r} holds a space"
    if "#" in node_id:
        return f"the node id {node_id!r} holds '#'"
    if _SPAN_LIKE.match(node_id):
        return f"the node id {node_id!r} would read as a line or page range"
    return None


def _span_problem(span: object, what: str) -> str | None:
    if not (isinstance(span, tuple) and len(span) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in span)):
        return f"{what} must be a pair of whole numbers (first, last)"
    a, b = span
    if not 1 <= a <= b:
        return f"{what} must be 1-based and in order, got {a}-{b}"
    return None


def _problem(ref: Ref) -> str | None:
    """Why ``ref``'s fields make no ref, or None."""
    given = [x for x in (ref.node_id, ref.lines, ref.pages) if x is not None]
    if len(given) != 1:
        return "give exactly one of node_id, lines and pages"
    if ref.node_id is not None:
        if not isinstance(ref.node_id, str) or not ref.node_id:
            return "the node id must be a non-empty string"
        problem = _problem_node(ref.node_id)
    elif ref.lines is not None:
        problem = _span_problem(ref.lines, "lines")
    else:
        problem = _span_problem(ref.pages, "pages")
    return problem or _problem_doc(ref.doc_id)
