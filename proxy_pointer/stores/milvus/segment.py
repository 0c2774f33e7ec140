"""One segment held in Milvus, read on demand: the reading half of :mod:`.milvus`.

:class:`MilvusConnection` is a client for one store location with its collection names
(the layout is documented in :mod:`.milvus`); every Milvus failure it sees becomes a
:class:`~proxy_pointer.errors.StoreError` naming the location. :class:`MilvusSegment`
answers the :class:`~.segments.Segment` protocol from those collections: point reads by
primary key (``segment number << 32 | row``), dense search with a ``segment == name``
filter, and BM25 through Milvus's own BM25 function over the chunk's terms.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from ...errors import DocumentError, IndexCorruptError, ProxyPointerError, StoreError
from ...package import require
from ...parse.chunking import Chunk
from ...parse.tree import Tree
from ..lexical import ViewCache
from ..records import DocumentRecord
from ..segments import DocumentParts, Pointer, remember
from ..vectors import VectorIndexConfig
from .search import MilvusLexical, MilvusVectors

__all__ = ["DEFAULT_NAME", "LENGTH_TERM", "MilvusConnection", "MilvusSegment", "is_server_uri",
           "row_key", "segment_number"]

DEFAULT_NAME = "proxy_pointer"
#: The term under which a segment's total length in terms is stored beside its document
#: frequencies (no text tokenizes to a space).
LENGTH_TERM = " "
_IN_LIST = 1000  # ids per "in [...]" filter or get() call
_TEXT_CACHE_CHARS = 64_000_000  # stored sources kept per segment (characters)
_T = TypeVar("_T")


def segment_number(name: str) -> int:
    """``7`` for ``"seg-000007"``; :class:`IndexCorruptError` for another name."""
    tail = name[4:] if name.startswith("seg-") else ""
    if not tail.isdigit():
        raise IndexCorruptError(f"bad segment name {name!r}")
    return int(tail)


def row_key(segment: int, row: int) -> int:
    """The primary key of a chunk row: its segment's number in the high 32 bits."""
    return (segment << 32) | row


class _QuietIterators(logging.Filter):
    """Drops the two log lines every query iterator on Milvus Lite causes: Lite's server
    lacks the timestamp call (logged with a traceback) and pymilvus then says it uses the
    client's clock. Harmless here: the rows a reader scans never change."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        return "mvccTs" not in msg and "Method not implemented" not in msg


for _name in ("pymilvus.client.iterator.query_iterator", "grpc._server"):
    logging.getLogger(_name).addFilter(_QuietIterators())


def is_server_uri(uri: str) -> bool:
    """Whether ``uri`` names a Milvus server (a URL) rather than a Milvus Lite file."""
    return uri.startswith(("http://", "https://", "tcp://", "grpc://"))


def _reason(e: BaseException) -> str:
    msg = getattr(e, "message", None) or str(e) or type(e).__name__
    return " ".join(str(msg).split())[:300]


class MilvusConnection:
    """A Milvus client for one store: ``uri`` (a Milvus Lite ``.db`` file or a server URL),
    ``name`` (the collections' prefix and the alias of the committed generation)."""

    def __init__(self, uri: str, name: str = DEFAULT_NAME, token: str | None = None,
                 timeout: float = 30.0) -> None:
        self.uri, self.name, self.timeout = uri, name, timeout
        self._token = token or ""
        self.chunks, self.docs = f"{name}_chunks", f"{name}_docs"
        self.blobs, self.terms, self.locks = f"{name}_blobs", f"{name}_terms", f"{name}_lock"
        self._client: Any = None
        self._lock = threading.Lock()
        self._loaded: set[str] = set()

    @property
    def location(self) -> str:
        return f"milvus:{self.uri}" + ("" if self.name == DEFAULT_NAME else f"#{self.name}")

    @property
    def is_lite(self) -> bool:
        return not is_server_uri(self.uri)

    def client(self) -> Any:
        """The connected ``MilvusClient`` (connects on first use)."""
        with self._lock:
            if self._client is None:
                MilvusClient = require("pymilvus", what="a milvus: index",
                                       library="pymilvus and Milvus Lite",
                                       extra="milvus").MilvusClient
                # Milvus Lite logs a traceback of its own when it cannot open a file; the
                # StoreError below says it in one line.
                lite_log = logging.getLogger("milvus_lite.server_manager")
                was, lite_log.disabled = lite_log.disabled, True
                try:
                    self._client = MilvusClient(uri=self.uri, token=self._token,
                                                timeout=self.timeout)
                except Exception as e:  # pymilvus raises many types; say which store
                    hint = ("; the file is not a Milvus Lite database or another process "
                            "has it open (Milvus Lite serves one process)" if self.is_lite
                            else "; is the server up and the token right?")
                    raise StoreError(f"{self.location}: cannot open ({_reason(e)}){hint}"
                                     ) from None
                finally:
                    lite_log.disabled = was
                # pymilvus imports scipy.sparse inside its search calls; two threads
                # importing it first at once can see it half-initialized ("partially
                # initialized module 'scipy.sparse._lil'", seen in the crash benchmark).
                with contextlib.suppress(ImportError):
                    import scipy.sparse  # type: ignore[import-untyped]  # noqa: F401
            return self._client

    def call(self, what: str, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """``fn(*args, **kwargs)``, a Milvus failure raised as :class:`StoreError`.

        A collection found released (another client of the same Milvus Lite file swapped
        its handle for an unloaded one) is loaded again and the call retried once."""
        for attempt in (0, 1):
            try:
                return fn(*args, **kwargs)
            except ProxyPointerError:
                raise
            except Exception as e:
                reason = _reason(e)
                if (attempt == 0 and "released" in reason and args
                        and isinstance(args[0], str) and args[0] in self._loaded):
                    self._loaded.discard(args[0])
                    self.load(args[0])
                    continue
                raise StoreError(f"{self.location}: {what} failed ({reason})") from None
        raise AssertionError("unreachable")

    def load(self, collection: str) -> None:
        """Load a collection for search and query (once per process)."""
        if collection not in self._loaded:
            self.call(f"loading {collection}", self.client().load_collection, collection)
            self._loaded.add(collection)

    def get(self, collection: str, ids: Sequence[Any], fields: list[str]) -> list[dict[str, Any]]:
        """Rows by primary key (any order, missing ones absent)."""
        self.load(collection)
        out: list[dict[str, Any]] = []
        for lo in range(0, len(ids), _IN_LIST):
            out.extend(self.call(f"reading {collection}", self.client().get, collection,
                                 ids=list(ids[lo:lo + _IN_LIST]), output_fields=fields))
        return out

    def scan(self, collection: str, filter: str, fields: list[str]) -> Iterator[dict[str, Any]]:
        """Every row matching ``filter`` (in batches, any number of rows)."""
        self.load(collection)
        it = self.call(f"reading {collection}", self.client().query_iterator, collection,
                       batch_size=1000, filter=filter, output_fields=fields)
        try:
            while True:
                batch = self.call(f"reading {collection}", it.next)
                if not batch:
                    return
                yield from batch
        finally:
            it.close()

    def blob(self, key: str) -> str | None:
        """A long string stored in parts (see :mod:`.milvus`); ``None`` when absent."""
        return self.blobs_of([key])[key]

    def blobs_of(self, keys: Sequence[str]) -> dict[str, str | None]:
        """Several long strings in one round trip: ``key -> text`` (``None``: absent)."""
        self.load(self.blobs)
        found = self.call(f"reading {keys[0]}", self.client().query, self.blobs,
                          filter=in_list("key", list(keys)),
                          output_fields=["key", "part", "data"], limit=16_384)
        parts: dict[str, list[tuple[int, str]]] = {}
        for r in found:
            parts.setdefault(r["key"], []).append((int(r["part"]), r["data"]))
        out: dict[str, str | None] = {}
        for key in keys:
            got = sorted(parts.get(key, []))
            if got and [p for p, _ in got] != list(range(len(got))):
                raise IndexCorruptError(f"{self.location}: {key} has parts missing")
            out[key] = "".join(d for _, d in got) if got else None
        return out


def quote(text: str) -> str:
    """A Milvus filter string literal."""
    return json.dumps(text, ensure_ascii=False)


def in_list(field: str, values: Sequence[Any]) -> str:
    """``field in [...]`` as a filter expression."""
    items = ", ".join(quote(v) if isinstance(v, str) else str(int(v)) for v in values)
    return f"{field} in [{items}]"


def row_filter(rows: np.ndarray) -> str:
    """``rows`` as a filter expression: runs of consecutive rows as ranges where that is
    shorter (a document's chunks are one run, so filters by document or access stay short
    however many chunks they hold), else ``row in [...]``."""
    rows = np.unique(rows)
    if not len(rows):
        return "row in []"
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts, ends = rows[np.r_[0, breaks]], rows[np.r_[breaks - 1, len(rows) - 1]]
    if 3 * len(starts) >= len(rows):
        return in_list("row", rows.tolist())
    return "(" + " or ".join(f"(row >= {a} and row <= {b})" if a != b else f"row == {a}"
                             for a, b in zip(starts.tolist(), ends.tolist(), strict=True)) + ")"


_CHUNK_FIELDS = ["row", "doc_id", "node_id", "title", "path", "start_char", "end_char",
                 "start_line", "end_line", "own_start", "own_end", "section_start",
                 "section_end", "embed_text"]


class MilvusSegment:
    """A segment stored in Milvus (see the module docstring); ``rows``: its row count, from
    the generation's manifest. Read-only and safe for concurrent readers."""

    def __init__(self, conn: MilvusConnection, name: str, *, rows: int, dimension: int) -> None:
        self.conn, self.name, self.dimension = conn, name, dimension
        self.number = segment_number(name)
        self._rows = rows
        self._docs: dict[str, tuple[str, int, int]] | None = None
        self._meta: dict[str, dict[str, Any]] | None = None
        self._cards: dict[str, dict[str, Any]] | None = None
        self._lock = threading.Lock()
        self._records: OrderedDict[str, DocumentRecord] = OrderedDict()
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._text_chars = 0
        self._filter = f"segment == {quote(name)}"
        self._length: int | None = None
        self._counts = ViewCache(8)  # a caller's view's term counts: term_counts

    def __repr__(self) -> str:
        return f"MilvusSegment({self.conn.location!r}, {self.name!r}, rows={self._rows})"

    @property
    def n_rows(self) -> int:
        return self._rows

    # --- documents ----------------------------------------------------------------------
    def _doc_table(self) -> dict[str, tuple[str, int, int]]:
        if self._docs is None:
            table = {r["doc_id"]: (r["sha256"], int(r["row_lo"]), int(r["row_hi"]))
                     for r in self.conn.scan(self.conn.docs, self._filter,
                                             ["doc_id", "sha256", "row_lo", "row_hi"])}
            if sum(hi - lo for _, lo, hi in table.values()) != self._rows:
                raise IndexCorruptError(f"{self.conn.location}: segment {self.name} is "
                                        f"incomplete (its documents do not hold {self._rows} rows)")
            self._docs = table
        return self._docs

    def sha256s(self) -> dict[str, str]:
        return {d: v[0] for d, v in self._doc_table().items()}

    def record(self, doc_id: str) -> DocumentRecord:
        with self._lock:
            rec = self._records.get(doc_id)
        if rec is None:
            self._doc_table()[doc_id]  # KeyError for an unknown document
            raw = self.conn.blob(f"rec/{self.name}/{doc_id}")
            if raw is None:
                raise IndexCorruptError(f"{self.conn.location}: record of {doc_id} is missing")
            rec = DocumentRecord.from_dict(json.loads(raw), source=self.conn.location)
            with self._lock:
                remember(self._records, doc_id, rec, 4096)
        return rec

    def metadata(self) -> dict[str, dict[str, Any]]:
        """Every document's metadata, from their records (read in batches, kept)."""
        if self._meta is None:
            self._read_records()
        assert self._meta is not None
        return self._meta

    def cards(self) -> dict[str, dict[str, Any]]:
        """Every document's card, from their records (read with the metadata, kept)."""
        if self._cards is None:
            self._read_records()
        assert self._cards is not None
        return self._cards

    def _read_records(self) -> None:
        """Every record's metadata and card, in batches of 256 documents."""
        out: dict[str, dict[str, Any]] = {}
        cards: dict[str, dict[str, Any]] = {}
        docs = list(self._doc_table())
        for i in range(0, len(docs), 256):
            batch = docs[i:i + 256]
            found = self.conn.blobs_of([f"rec/{self.name}/{d}" for d in batch])
            for d in batch:
                raw = found[f"rec/{self.name}/{d}"]
                if raw is None:
                    raise IndexCorruptError(
                        f"{self.conn.location}: record of {d} is missing")
                rec = DocumentRecord.from_dict(json.loads(raw), source=self.conn.location)
                out[d], cards[d] = rec.metadata, rec.card
        self._meta, self._cards = out, cards

    def text(self, doc_id: str) -> str:
        return self._text_and_tree(doc_id, tree=False)[0]

    def _text_and_tree(self, doc_id: str, *, tree: bool) -> tuple[str, str]:
        """The stored source (cached) and, when asked, the tree's JSON: one round trip."""
        with self._lock:
            text = self._texts.get(doc_id)
            if text is not None:
                self._texts.move_to_end(doc_id)
        if text is not None and not tree:
            return text, ""
        src, tree_key = f"src/{self._doc_table()[doc_id][0]}", f"tree/{self.name}/{doc_id}"
        found = self.conn.blobs_of(([tree_key] if tree else []) + ([src] if text is None else []))
        if text is None:
            text = found[src]
            if text is None:
                raise IndexCorruptError(
                    f"{self.conn.location}: stored copy of {doc_id} ({src}) is missing")
            with self._lock:
                # A miss costs a round trip: keep up to ~64 MB of sources, not a count.
                if doc_id not in self._texts:
                    self._texts[doc_id] = text
                    self._text_chars += len(text)
                while self._text_chars > _TEXT_CACHE_CHARS and len(self._texts) > 1:
                    self._text_chars -= len(self._texts.popitem(last=False)[1])
        return text, (found.get(tree_key) or "") if tree else ""

    def _tree_json(self, doc_id: str) -> str:
        return self._text_and_tree(doc_id, tree=True)[1]

    def tree(self, doc_id: str) -> Tree | None:
        text, raw = self._text_and_tree(doc_id, tree=True)
        if not raw:
            return None
        try:
            return Tree.from_json(raw, text=text)
        except (IndexCorruptError, DocumentError) as e:
            raise IndexCorruptError(f"{self.conn.location}: tree of {doc_id}: {e}") from None

    def doc_rows(self, doc_id: str) -> np.ndarray:
        _, lo, hi = self._doc_table()[doc_id]
        return np.arange(lo, hi, dtype=np.int64)

    # --- rows ---------------------------------------------------------------------------
    def _get(self, rows: Sequence[int], fields: list[str]) -> dict[int, dict[str, Any]]:
        want = sorted({int(r) for r in rows})
        found = self.conn.get(self.conn.chunks, [row_key(self.number, r) for r in want],
                              ["row", *fields])
        out = {int(f["row"]): f for f in found}
        if len(out) != len(want):
            raise IndexCorruptError(f"{self.conn.location}: chunk rows of segment "
                                    f"{self.name} are missing")
        return out

    def pointers(self, rows: Sequence[int]) -> list[Pointer]:
        found = self._get(rows, ["doc_id", "node_id", "start_char", "start_line", "end_line"])
        return [(f["doc_id"], f["node_id"] or None, int(f["start_char"]),
                 int(f["start_line"]), int(f["end_line"]))
                for f in (found[int(r)] for r in rows)]

    def chunks(self, rows: Sequence[int]) -> list[Chunk]:
        found = self._get(rows, _CHUNK_FIELDS)
        out = []
        for r in rows:
            f = found[int(r)]
            out.append(Chunk(
                doc_id=f["doc_id"], node_id=f["node_id"] or None, title=f["title"],
                path=tuple(json.loads(f["path"])), start_char=int(f["start_char"]),
                end_char=int(f["end_char"]), start_line=int(f["start_line"]),
                end_line=int(f["end_line"]), own_start=int(f["own_start"]),
                own_end=int(f["own_end"]), section_start=int(f["section_start"]),
                section_end=int(f["section_end"]),
                text=self.text(f["doc_id"])[int(f["start_char"]):int(f["end_char"])],
                embed_text=f["embed_text"]))
        return out

    def embed_texts(self, rows: Sequence[int]) -> list[str]:
        found = self._get(rows, ["embed_text"])
        return [found[int(r)]["embed_text"] for r in rows]

    def crumbs(self, rows: Sequence[int]) -> list[tuple[str, ...]]:
        found = self._get(rows, ["crumbs"])
        return [tuple(json.loads(found[int(r)]["crumbs"])) for r in rows]

    def rows_mentioning(self, needle: str) -> np.ndarray:
        # LIKE treats % and _ as wildcards: a superset, checked exactly below.
        flt = f"{self._filter} and norm like {quote('%' + needle + '%')}"
        rows = [int(r["row"]) for r in self.conn.scan(self.conn.chunks, flt, ["row", "norm"])
                if needle in r["norm"]]
        return np.asarray(sorted(rows), np.int64)

    def vectors(self, rows: np.ndarray | None = None) -> np.ndarray:
        if rows is None:
            out = np.zeros((self._rows, self.dimension), np.float32)
            for r in self.conn.scan(self.conn.chunks, self._filter, ["row", "vector"]):
                out[int(r["row"])] = r["vector"]
            return out
        found = self._get(np.asarray(rows).tolist(), ["vector"])
        if not len(rows):
            return np.zeros((0, self.dimension), np.float32)
        return np.asarray([found[int(r)]["vector"] for r in rows], np.float32)

    def search(self, what: str, method: str, *args: Any,
               score: Callable[[float], float] = float, **kwargs: Any
               ) -> list[tuple[int, float]]:
        """One Milvus search (``method`` of the client) over the chunks collection:
        ``[(row, score(distance))]``, best first."""
        conn = self.conn
        conn.load(conn.chunks)
        hits = conn.call(what, getattr(conn.client(), method), conn.chunks, *args,
                         output_fields=["row"], **kwargs)[0]
        found = [(int(h.entity.get("row")), score(float(h.distance))) for h in hits]
        found.sort(key=lambda t: (-t[1], t[0]))
        return found

    # --- term statistics ----------------------------------------------------------------
    def terms_of(self, rows: Sequence[int]) -> list[list[str]]:
        """Each row's BM25 terms, as stored for Milvus's BM25 function."""
        found = self._get(rows, ["terms"])
        return [str(found[int(r)]["terms"]).split() for r in rows]

    def total_length(self) -> int:
        """Terms in all the segment's rows: stored with its document frequencies (under the
        term " ", which no text has), or counted once for a segment written without it."""
        if self._length is None:
            conn = self.conn
            got = conn.get(conn.terms, [f"{self.name}/{LENGTH_TERM}"], ["df"])
            self._length = (int(got[0]["df"]) if got else sum(
                len(str(r["terms"]).split())
                for r in conn.scan(conn.chunks, self._filter, ["terms"])))
        return self._length

    def term_counts(self, rows: np.ndarray) -> tuple[bool, Counter[str], int]:
        """Document frequencies and total length over ``rows`` (sorted local rows) or
        over the segment's other rows, whichever are fewer: ``(inside, df, length)``,
        ``inside`` when over ``rows``. Made once per row array (a caller's view)."""
        def make() -> tuple[bool, Counter[str], int]:
            local = np.asarray(rows, np.int64)
            inside = 2 * len(local) <= self._rows
            side = local if inside else np.setdiff1d(np.arange(self._rows), local,
                                                     assume_unique=True)
            df: Counter[str] = Counter()
            length = 0
            for lo in range(0, len(side), _IN_LIST):
                for words in self.terms_of(side[lo:lo + _IN_LIST].tolist()):
                    df.update(set(words))
                    length += len(words)
            return inside, df, length
        return self._counts.get(rows, make)

    def vector_index(self, config: VectorIndexConfig) -> MilvusVectors:
        return MilvusVectors(self, config)

    def lexical(self) -> MilvusLexical:
        return MilvusLexical(self)

    def parts(self, doc_id: str) -> DocumentParts:
        rows = self.doc_rows(doc_id)
        return DocumentParts(self.record(doc_id), self.text(doc_id),
                             tuple(self.chunks(rows.tolist())), self.vectors(rows),
                             self._tree_json(doc_id))

    def search_filter(self, rows: np.ndarray | None, exclude: np.ndarray | None) -> str:
        """This segment's rows, within ``rows`` and not in ``exclude``, as a filter."""
        flt = self._filter
        if rows is not None:
            flt += " and " + row_filter(np.asarray(rows, np.int64))
        if exclude is not None and len(exclude):
            flt += " and not (" + in_list("row", np.asarray(exclude).tolist()) + ")"
        return flt
