"""Evaluation datasets in the project's FORMAT.md layout.

A dataset is a folder with ``docs/<doc_id>.md``, ``questions.jsonl`` and ``SOURCE.md``.
:func:`load_dataset` reads it, checks every row against the format and returns a
:class:`Dataset`; gold passages that do not occur in their document are reported in
``Dataset.warnings`` rather than fatal, since the format promises they do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proxy_pointer.errors import ConfigError, DocumentError

__all__ = ["Dataset", "Question", "load_dataset"]

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
    """Documents (doc_id -> Markdown text) and the questions about them."""

    name: str
    root: Path
    docs: dict[str, str]
    questions: tuple[Question, ...]
    warnings: tuple[str, ...] = ()

    @property
    def docs_dir(self) -> Path:
        return self.root / "docs"

    def doc_path(self, doc_id: str) -> Path:
        return self.docs_dir / f"{doc_id}.md"


def load_dataset(path: str | Path, *, limit: int | None = None) -> Dataset:
    """Read the dataset folder at ``path``; returns a :class:`Dataset`.

    ``limit`` keeps the first ``limit`` questions, and only the documents they are about, so
    a limited run indexes a smaller corpus. Raises :class:`ConfigError` on a malformed
    ``questions.jsonl`` (unknown or missing fields, duplicate ids, bad doc ids) and
    :class:`DocumentError` when a document is missing or not UTF-8.
    """
    root = Path(path)
    qfile = root / "questions.jsonl"
    if not qfile.is_file() or not (root / "docs").is_dir():
        raise ConfigError(f"{root}: not a dataset folder (needs docs/ and questions.jsonl)")
    questions: list[Question] = []
    seen: set[str] = set()
    with qfile.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{qfile}:{lineno}: not JSON ({exc.msg})") from None
            q = _question(row, f"{qfile}:{lineno}")
            if q.id in seen:
                raise ConfigError(f"{qfile}:{lineno}: duplicate question id {q.id!r}")
            seen.add(q.id)
            questions.append(q)
    if limit is not None:
        questions = questions[: max(0, limit)]
    doc_ids = sorted({q.doc_id for q in questions}) if limit is not None else sorted(
        p.stem for p in (root / "docs").glob("*.md")
    )
    docs = {d: _read_doc(root / "docs" / f"{d}.md") for d in doc_ids}
    for q in questions:
        if q.doc_id not in docs:
            docs[q.doc_id] = _read_doc(root / "docs" / f"{q.doc_id}.md")
    return Dataset(name=root.resolve().name, root=root, docs=dict(sorted(docs.items())),
                   questions=tuple(questions), warnings=tuple(_check_evidence(questions, docs)))


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


def _check_evidence(questions: list[Question], docs: dict[str, str]) -> list[str]:
    normalized: dict[str, str] = {}
    out = []
    for q in questions:
        text = normalized.setdefault(q.doc_id, " ".join(docs[q.doc_id].split()))
        for ann in q.evidence:
            for passage in ann:
                if " ".join(passage.split()) not in text:
                    out.append(f"question {q.id}: a gold passage is not in {q.doc_id}.md")
    return out
