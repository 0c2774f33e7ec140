"""The Milvus store's collections: their schemas, and how documents become their rows.

The layout itself is documented in :mod:`.milvus`; this module creates the collections
(:func:`ensure_collections`) and turns chunks and long strings into rows (:func:`chunk_row`,
:func:`blob_rows`), so that the store's module holds only generations, locking and writes.
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import ConfigError, IndexMismatchError
from ...parse.chunking import Chunk
from ...vocab.keys import heading_key
from ..segments import chunk_crumbs
from ..vectors import VectorIndexConfig
from .segment import MilvusConnection, row_key

__all__ = ["PART_BYTES", "blob_rows", "chunk_row", "ensure_blobs", "ensure_collections",
           "split_text"]

#: Bytes per part of a long string (a VARCHAR holds at most 65,535).
PART_BYTES = 60_000
_VARCHAR = 65_535


def _schema(client: Any, fields: list[tuple[str, Any, dict[str, Any]]]) -> Any:
    schema = client.create_schema(auto_id=False)
    for name, dtype, kwargs in fields:
        schema.add_field(name, dtype, **kwargs)
    return schema


def _ensure_side(c: MilvusConnection, name: str, fields: list[tuple[str, Any, dict[str, Any]]]
                 ) -> None:
    """A collection of plain rows (Milvus wants a vector field: a 2-d zero one), if missing."""
    from pymilvus import DataType

    client = c.client()
    if c.call("listing collections", client.has_collection, name):
        return
    schema = _schema(client, [*fields, ("_", DataType.FLOAT_VECTOR, {"dim": 2})])
    index = client.prepare_index_params()
    index.add_index("_", index_type="FLAT", metric_type="L2")
    c.call(f"creating {name}", client.create_collection, name, schema=schema,
           index_params=index, consistency_level="Strong")


def ensure_blobs(c: MilvusConnection, name: str) -> None:
    """A side collection of string parts (blobs, generations, the lease), if missing."""
    from pymilvus import DataType

    _ensure_side(c, name, [
        ("pk", DataType.VARCHAR, {"is_primary": True, "max_length": 8192}),
        ("key", DataType.VARCHAR, {"max_length": 8192}),
        ("part", DataType.INT64, {}),
        ("first_line", DataType.INT64, {}),
        ("segment", DataType.VARCHAR, {"max_length": 64}),
        ("data", DataType.VARCHAR, {"max_length": _VARCHAR}),
    ])


def ensure_collections(c: MilvusConnection, dimension: int, config: VectorIndexConfig) -> None:
    """Create the index's collections if missing; :class:`IndexMismatchError` when its
    chunks collection holds vectors of another dimension. The vector index is FLAT (exact,
    as the local store below 200k chunks per segment) unless ``config.kind`` asks for
    ``"ivf"`` (IVF_FLAT) or ``"hnsw"``."""
    from pymilvus import DataType, Function, FunctionType

    client = c.client()
    if c.call("listing collections", client.has_collection, c.chunks):
        info = c.call("describing chunks", client.describe_collection, c.chunks)
        dims = [f.get("params", {}).get("dim") for f in info.get("fields", [])
                if f.get("name") == "vector"]
        if dims and int(dims[0]) != dimension:
            raise IndexMismatchError(f"{c.location}: holds vectors of dimension {dims[0]}, "
                                     f"this index has {dimension}; use another #NAME")
    else:
        text = {"max_length": _VARCHAR}
        schema = _schema(client, [
            ("pk", DataType.INT64, {"is_primary": True}),
            ("segment", DataType.VARCHAR, {"max_length": 64}),
            ("row", DataType.INT64, {}),
            ("doc_id", DataType.VARCHAR, {"max_length": 8192}),
            ("node_id", DataType.VARCHAR, {"max_length": 1024}),
            ("title", DataType.VARCHAR, text), ("path", DataType.VARCHAR, text),
            *[(f, DataType.INT64, {}) for f in (
                "start_char", "end_char", "start_line", "end_line", "own_start", "own_end",
                "section_start", "section_end")],
            ("crumbs", DataType.VARCHAR, text), ("norm", DataType.VARCHAR, text),
            ("embed_text", DataType.VARCHAR, text),
            ("terms", DataType.VARCHAR, {**text, "enable_analyzer": True,
                                         "analyzer_params": {"tokenizer": "standard"}}),
            ("sparse", DataType.SPARSE_FLOAT_VECTOR, {}),
            ("vector", DataType.FLOAT_VECTOR, {"dim": dimension}),
        ])
        schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                     input_field_names=["terms"],
                                     output_field_names=["sparse"]))
        index = client.prepare_index_params()
        # "auto" and "flat" search exactly (FLAT); Milvus builds IVF or HNSW when asked.
        kind = config.kind
        if kind == "ivf":
            index.add_index("vector", index_type="IVF_FLAT", metric_type="IP",
                            params={"nlist": config.nlist or 1024})
        elif kind == "hnsw":
            index.add_index("vector", index_type="HNSW", metric_type="IP",
                            params={"M": config.hnsw_m, "efConstruction": config.ef_construction})
        else:
            index.add_index("vector", index_type="FLAT", metric_type="IP")
        index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25",
                        params={"bm25_k1": 1.5, "bm25_b": 0.75})
        c.call("creating chunks", client.create_collection, c.chunks, schema=schema,
               index_params=index, consistency_level="Strong")
    _ensure_side(c, c.docs, [
        ("pk", DataType.VARCHAR, {"is_primary": True, "max_length": 8300}),
        ("segment", DataType.VARCHAR, {"max_length": 64}),
        ("doc_id", DataType.VARCHAR, {"max_length": 8192}),
        ("sha256", DataType.VARCHAR, {"max_length": 64}),
        ("row_lo", DataType.INT64, {}), ("row_hi", DataType.INT64, {}),
    ])
    _ensure_side(c, c.terms, [
        ("pk", DataType.VARCHAR, {"is_primary": True, "max_length": 1100}),
        ("segment", DataType.VARCHAR, {"max_length": 64}),
        ("term", DataType.VARCHAR, {"max_length": 1024}),
        ("df", DataType.INT64, {}),
    ])
    ensure_blobs(c, c.blobs)


def _fit(text: str, what: str, doc_id: str) -> str:
    if len(text.encode("utf-8")) > _VARCHAR:
        raise ConfigError(f"{doc_id}: a chunk's {what} is over {_VARCHAR} bytes, more than a "
                          "Milvus VARCHAR holds")
    return text


def _truncate(text: str) -> str:
    data = text.encode("utf-8")
    return text if len(data) <= _VARCHAR else data[:_VARCHAR].decode("utf-8", "ignore")


def chunk_row(segment: str, number: int, row: int, ch: Chunk, doc_title: str, vec: Any,
               toks: list[str]) -> dict[str, Any]:
    crumbs = chunk_crumbs(ch, doc_title)
    d = ch.doc_id
    return {
        "pk": row_key(number, row), "segment": segment, "row": row, "doc_id": ch.doc_id,
        "node_id": ch.node_id or "", "title": _fit(ch.title, "title", d),
        "path": _fit(json.dumps(list(ch.path)), "path", d), "start_char": ch.start_char,
        "end_char": ch.end_char, "start_line": ch.start_line, "end_line": ch.end_line,
        "own_start": ch.own_start, "own_end": ch.own_end, "section_start": ch.section_start,
        "section_end": ch.section_end, "crumbs": _fit(json.dumps(list(crumbs)), "breadcrumb", d),
        "norm": _fit("\x1f".join(heading_key(t) for t in crumbs), "breadcrumb", d),
        "embed_text": _fit(ch.embed_text, "embedded text", d),
        "terms": _truncate(" ".join(toks)), "vector": [float(x) for x in vec],
    }


def split_text(text: str) -> list[tuple[str, int]]:
    """``text`` in parts of at most :data:`PART_BYTES` UTF-8 bytes, cut at line ends where
    lines allow: ``[(part, first line)]``."""
    parts: list[tuple[str, int]] = []
    buf: list[str] = []
    size, first = 0, 0
    for i, line in enumerate(text.splitlines(keepends=True)):
        n = len(line.encode("utf-8"))
        if buf and size + n > PART_BYTES:
            parts.append(("".join(buf), first))
            buf, size = [], 0
        if not buf:
            first = i
        while n > PART_BYTES:  # one line longer than a part: cut it between characters
            head = line.encode("utf-8")[:PART_BYTES].decode("utf-8", "ignore")
            parts.append(("".join(buf) + head, first))
            buf, size, first = [], 0, i
            line = line[len(head):]
            n = len(line.encode("utf-8"))
        buf.append(line)
        size += n
    if buf or not parts:
        parts.append(("".join(buf), first))
    return parts


def blob_rows(key: str, text: str, segment: str) -> list[dict[str, Any]]:
    return [{"pk": f"{key}#{i}", "key": key, "part": i, "first_line": first, "data": part,
             "segment": segment, "_": [0.0, 0.0]}
            for i, (part, first) in enumerate(split_text(text))]
