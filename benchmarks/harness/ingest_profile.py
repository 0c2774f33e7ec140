"""What indexing a folder embeds: chunks, distinct texts and word pieces per page, by kind.

Run as a script (``python benchmarks/harness/ingest_profile.py DOCS``) with ``PYTHONPATH``
pointing at
the library to profile: it imports only ``proxy_pointer``, through APIs that older versions
have too, so :mod:`benchmarks.speed.bench_ingest` runs this same file against a baseline checkout.
Prints one JSON object.

``duplicates`` counts chunks whose text is embedded again elsewhere in the folder: exactly
(what the pipeline already embeds once), with whitespace normalised, with the breadcrumb
set aside (the same body under another filing's breadcrumb), and with figures masked too
(the same boilerplate with other years and amounts). Only the first two may share a vector
as they are; the others would need a vector made for another text.

Each chunk's ``embed_text`` is split into its breadcrumb (the first line, ``[...]``), table
rows (body lines the PDF converter would write as a table row that hold an amount, or
Markdown pipe rows) and the rest (prose, headers, labels). Word pieces are MiniLM's
(:data:`proxy_pointer.tokens.WORD_PIECES`), counted on the text as embedded, so a text past
the model's 256 word pieces counts what the model reads. Pages are PDF pages; a format
without pages counts as one page per file.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from proxy_pointer.documents import CONVERTED_SUFFIXES
from proxy_pointer.ingest.parsing import ReadDocument, bytes_digest, text_digest
from proxy_pointer.parse.chunking import ChunkConfig
from proxy_pointer.text.rows import is_table_row
from proxy_pointer.tokens import WORD_PIECES

_AMOUNT = re.compile(r"\d")
_SPACE = re.compile(r"\s+")
_FIGURES = re.compile(r"\d[\d,.]*")


def _is_row(line: str) -> bool:
    s = line.strip()
    if s.startswith("|") and s.endswith("|"):
        return True
    return bool(_AMOUNT.search(s)) and is_table_row(s)


def chunk_texts(folder: Path) -> tuple[int, int, list[str]]:
    """``(files, pages, embed texts)`` of every file of ``folder`` parsed with the default
    chunk config (files that fail to parse left out)."""
    pages = files = 0
    texts: list[str] = []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        data = path.read_bytes()
        if path.suffix.lower() in CONVERTED_SUFFIXES:
            doc = ReadDocument(path.stem, str(path), None, "", bytes_digest(data, path.name),
                               data=data)
        else:
            text = data.decode("utf-8", "replace")
            doc = ReadDocument(path.stem, str(path), None, text, text_digest(text))
        parsed = doc.parse(ChunkConfig(), True, tokenizer=WORD_PIECES)
        chunks = getattr(parsed, "chunks", None)
        if chunks is None:
            continue
        files += 1
        pages += max(1, len(parsed.record.pages))
        texts.extend(c.embed_text for c in chunks)
    return files, pages, texts


def profile(folder: Path) -> dict:
    """Counts for every file of ``folder`` (:func:`chunk_texts`)."""
    window = 256 - 2
    files, pages, texts = chunk_texts(folder)
    distinct = sorted(set(texts))
    spaced = {_SPACE.sub(" ", t).strip() for t in texts}
    bodies = {_SPACE.sub(" ", t.partition("\n")[2]).strip() for t in texts}
    masked = {_FIGURES.sub("#", b) for b in bodies}
    n = len(texts)
    duplicates = {"exact": n - len(distinct), "whitespace": n - len(spaced),
                  "body": n - len(bodies), "body, figures masked": n - len(masked)}
    kinds = {"breadcrumb": 0, "table rows": 0, "other": 0}
    crumbs, rows, rest = [], [], []
    for text in distinct:
        head, _, body = text.partition("\n")
        crumbs.append(head)
        lines = body.split("\n")
        rows.append("\n".join(x for x in lines if _is_row(x)))
        rest.append("\n".join(x for x in lines if not _is_row(x)))
    whole = WORD_PIECES.count_many(distinct)
    for name, part in (("breadcrumb", crumbs), ("table rows", rows), ("other", rest)):
        kinds[name] = sum(WORD_PIECES.count_many(part))
    read = sum(min(n, window) for n in whole)
    # Scale the parts to what the model reads (a text past its window is cut at the end).
    scale = read / max(1, sum(kinds.values()))
    return {"files": files, "pages": pages, "chunks": len(texts), "distinct": len(distinct),
            "word_pieces": read, "duplicates": duplicates,
            "per_page": {"chunks": len(texts) / max(1, pages),
                         "embedded texts": len(distinct) / max(1, pages),
                         "word pieces": read / max(1, pages),
                         **{k: v * scale / max(1, pages) for k, v in kinds.items()}}}


if __name__ == "__main__":
    print(json.dumps(profile(Path(sys.argv[1]))))
