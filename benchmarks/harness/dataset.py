"""Evaluation datasets in the project's FORMAT.md layout.

A dataset is a folder with ``docs/<doc_id>.md``, ``questions.jsonl`` and ``SOURCE.md``.
:func:`load_dataset` reads it, checks every row against the format and returns a
:class:`Dataset`; gold passages that do not occur in their document are reported in
``Dataset.warnings`` rather than fatal, since the format promises they do.

**PDF documents** (``financebench-dev``): a doc id ending in ``.pdf`` names the file
``docs/<doc_id>`` itself. Its text in :attr:`Dataset.docs` is the plain pypdfium2 text of
each page (``get_text_range()``, line endings made ``\n``), pages joined with a line break,
and :attr:`Dataset.pages` says where each page starts in it, so a method that reads that
text can say which pages a passage came from (:meth:`Dataset.page_marks`). Gold passages of
such a dataset were written by another extractor, so it is matched loosely
(:mod:`.matching`); ``Dataset.matching`` says which rule applies.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proxy_pointer.errors import ConfigError, DocumentError

from .matching import flatten, loose_found, shingles

__all__ = ["PDF_SUFFIX", "Dataset", "Question", "load_dataset", "read_pdf_text"]

#: Doc ids with this ending are PDF files, read as plain page text.
PDF_SUFFIX = ".pdf"

_FIELDS = {"id", "doc_id", "question", "evidence", "sections", "answers", "meta"}
_DOC_ID = re.compile(r"^[A-Za-z0-9._-]+$")


@dataclass(frozen=True)
class Question:
    """One question with its gold passages (one tuple per annotator) and gold section paths."""

    id: str
    doc_id: str
    question: str
    evidence: tuple[tuple[str, ...], ...]
    sections: tuple[tuple[str, ...], ...]
    answers: tuple[str, ...]
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class Dataset:
    """Documents (doc_id -> Markdown text, or a PDF's plain page text) and the questions
    about them.

    ``matching`` is how gold passages are found in a context (``"exact"`` or ``"loose"``,
    see :mod:`.metrics`). ``pages`` maps each PDF's doc id to the character offsets in its
    text at which its pages start (page 1 at offset 0); documents without pages are absent.
    """

    name: str
    root: Path
    docs: dict[str, str]
    questions: tuple[Question, ...]
    warnings: tuple[str, ...] = ()
    matching: str = "exact"
    pages: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def docs_dir(self) -> Path:
        return self.root / "docs"

    @property
    def paged(self) -> bool:
        """Whether the documents have pages (PDFs), so methods can report page hits."""
        return bool(self.pages)

    def doc_file(self, doc_id: str) -> str:
        """The file name of a document in ``docs/``, which is also its id in an index
        built over that folder."""
        return doc_id if doc_id.endswith(PDF_SUFFIX) else f"{doc_id}.md"

    def doc_path(self, doc_id: str) -> Path:
        return self.docs_dir / self.doc_file(doc_id)

    def page_text(self, doc_id: str, page: int) -> str:
        """The plain text of 1-based ``page`` of a PDF document ("" when out of range)."""
        starts = self.pages.get(doc_id, ())
        if not 1 <= page <= len(starts):
            return ""
        a, b = self._page_range(doc_id, page - 1)
        return self.docs[doc_id][a:b]

    def page_marks(self, doc_id: str, start: int, end: int) -> tuple[tuple[int, int], ...]:
        """Page marks (:attr:`.context.Piece.pages`) of the characters ``start..end`` (end
        excluded) of a document's text: for each page whose own text overlaps them, the
        offset, relative to ``start``, where it begins, and the page. ``()`` without pages.
        """
        starts = self.pages.get(doc_id, ())
        if not starts:
            return ()
        marks = []
        first = max(0, bisect_right(starts, start) - 1)
        for k in range(first, len(starts)):
            a, b = self._page_range(doc_id, k)
            if a >= end:
                break
            if b > start and a < b:  # the page has text inside the span
                marks.append((max(a, start) - start, k + 1))
        return tuple(marks)

    def _page_range(self, doc_id: str, k: int) -> tuple[int, int]:
        # Page k (0-based) runs to the line break that joins it to the next page.
        starts = self.pages[doc_id]
        end = starts[k + 1] - 1 if k + 1 < len(starts) else len(self.docs[doc_id])
        return starts[k], end


def load_dataset(path: str | Path, *, limit: int | None = None,
                 matching: str | None = None, extra: str | Path | None = None) -> Dataset:
    """Read the dataset folder at ``path``; returns a :class:`Dataset`.

    ``limit`` keeps the first ``limit`` questions, and only the documents they are about, so
    a limited run indexes a smaller corpus. ``matching`` overrides the matching rule, which
    is ``"loose"`` when a document is a PDF and ``"exact"`` otherwise. Raises
    :class:`ConfigError` on a malformed ``questions.jsonl`` (unknown or missing fields,
    duplicate ids, bad doc ids) and :class:`DocumentError` when a document is missing, not
    UTF-8 or not a readable PDF.
    """
    root = Path(path)
    qfile = root / "questions.jsonl"
    if not qfile.is_file() or not (root / "docs").is_dir():
        raise ConfigError(f"{root}: not a dataset folder (needs docs/ and questions.jsonl)")
    questions: list[Question] = []
    seen: set[str] = set()
    for source in (qfile, *([Path(extra)] if extra is not None else [])):
        with source.open(encoding="utf-8") as fh:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise ConfigError(f"{source}:{lineno}: not JSON ({exc.msg})") from None
                q = _question(row, f"{source}:{lineno}")
                if q.id in seen:
                    raise ConfigError(f"{source}:{lineno}: duplicate question id {q.id!r}")
                seen.add(q.id)
                questions.append(q)
    if limit is not None:
        questions = questions[: max(0, limit)]
    doc_ids = sorted({q.doc_id for q in questions}) if limit is not None else sorted(
        [p.stem for p in (root / "docs").glob("*.md")]
        + [p.name for p in (root / "docs").glob(f"*{PDF_SUFFIX}")]
    )
    for q in questions:
        if q.doc_id not in doc_ids:
            doc_ids.append(q.doc_id)
    docs: dict[str, str] = {}
    pages: dict[str, tuple[int, ...]] = {}
    for d in sorted(doc_ids):
        if d.endswith(PDF_SUFFIX):
            docs[d], pages[d] = read_pdf_text(root / "docs" / d)
        else:
            docs[d] = _read_doc(root / "docs" / f"{d}.md")
    if matching is None:
        matching = "loose" if pages else "exact"
    elif matching not in ("exact", "loose"):
        raise ConfigError(f"unknown matching {matching!r}; choose exact or loose")
    return Dataset(name=root.resolve().name, root=root, docs=docs, questions=tuple(questions),
                   warnings=tuple(_check_evidence(questions, docs, matching)),
                   matching=matching, pages=pages)


def pdf_page_texts(path: Path) -> list[str]:
    """Each page's plain pypdfium2 text (``get_text_range``, as it comes) of the PDF at
    ``path``, pages opened and closed one at a time; ``pypdfium2.PdfiumError`` when it
    cannot be read."""
    import pypdfium2 as pdfium

    pdf = pdfium.PdfDocument(str(path))
    texts: list[str] = []
    try:
        for i in range(len(pdf)):
            page = pdf[i]
            textpage = page.get_textpage()
            texts.append(textpage.get_text_range())
            textpage.close()
            page.close()
    finally:
        pdf.close()
    return texts


def read_pdf_text(path: Path) -> tuple[str, tuple[int, ...]]:
    """The plain pypdfium2 text of the PDF at ``path``, pages joined with a line break, and
    the offset at which each page starts; :class:`DocumentError` when it cannot be read."""
    import pypdfium2 as pdfium

    if not path.is_file():
        raise DocumentError(str(path), "document named in questions.jsonl does not exist")
    try:
        texts = [t.replace("\r\n", "\n").replace("\r", "\n") for t in pdf_page_texts(path)]
    except pdfium.PdfiumError as exc:
        raise DocumentError(str(path), f"not a readable PDF ({exc})") from None
    starts, offset = [], 0
    for t in texts:
        starts.append(offset)
        offset += len(t) + 1
    return "\n".join(texts), tuple(starts)


def _question(row: Any, where: str) -> Question:
    if not isinstance(row, dict):
        raise ConfigError(f"{where}: a question must be a JSON object")
    missing, extra = _FIELDS - row.keys(), row.keys() - _FIELDS
    if missing or extra:
        raise ConfigError(f"{where}: missing fields {sorted(missing)}, unknown {sorted(extra)}")
    doc_id = row["doc_id"]
    if not isinstance(doc_id, str) or not _DOC_ID.match(doc_id):
        raise ConfigError(f"{where}: doc_id must match [A-Za-z0-9._-]+, got {doc_id!r}")
    evidence = _nested_strings(row["evidence"], where, "evidence")
    sections = _nested_strings(row["sections"], where, "sections")
    if any(not ann for ann in evidence):
        raise ConfigError(f"{where}: an annotator's evidence list is empty")
    if not evidence and not sections:
        raise ConfigError(f"{where}: a question needs evidence or a section path")
    answers = row["answers"]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise ConfigError(f"{where}: answers must be a list of strings")
    if not isinstance(row["question"], str) or not isinstance(row["id"], str):
        raise ConfigError(f"{where}: id and question must be strings")
    meta = row["meta"] if isinstance(row["meta"], dict) else {}
    return Question(id=row["id"], doc_id=doc_id, question=row["question"], evidence=evidence,
                    sections=sections, answers=tuple(answers), meta=meta)


def _nested_strings(value: Any, where: str, name: str) -> tuple[tuple[str, ...], ...]:
    if not isinstance(value, list) or not all(
        isinstance(inner, list) and all(isinstance(s, str) for s in inner) for inner in value
    ):
        raise ConfigError(f"{where}: {name} must be a list of lists of strings")
    return tuple(tuple(inner) for inner in value)


def _read_doc(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DocumentError(str(path), "document named in questions.jsonl does not exist") from None
    except UnicodeDecodeError as exc:
        raise DocumentError(str(path), f"not UTF-8 ({exc.reason})") from None


def _check_evidence(questions: list[Question], docs: dict[str, str],
                    matching: str = "exact") -> list[str]:
    if matching == "loose":
        return _check_loose(questions, docs)
    normalized: dict[str, str] = {}
    out = []
    for q in questions:
        text = normalized.setdefault(q.doc_id, " ".join(docs[q.doc_id].split()))
        for ann in q.evidence:
            for passage in ann:
                if " ".join(passage.split()) not in text:
                    out.append(f"question {q.id}: a gold passage is not in {q.doc_id}.md")
    return out


def _check_loose(questions: list[Question], docs: dict[str, str]) -> list[str]:
    out = []
    by_doc: dict[str, list[Question]] = {}
    for q in questions:
        by_doc.setdefault(q.doc_id, []).append(q)
    for doc_id, qs in by_doc.items():  # one document's shingles in memory at a time
        flat = flatten(docs[doc_id])
        have = shingles(flat)
        for q in qs:
            for ann in q.evidence:
                for passage in ann:
                    if not loose_found(flatten(passage), flat, context_shingles=have):
                        out.append(f"question {q.id}: a gold passage is not (loosely) in "
                                   f"{doc_id}")
    return out
