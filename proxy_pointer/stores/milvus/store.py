"""Milvus as the index store: the local store's segments and generations, in collections.

Location: ``milvus:URI[#NAME]``. ``URI`` is a Milvus Lite file (``milvus:./pp.db``: the same
engine embedded in a local file, one process at a time) or a server or cluster
(``milvus:http://HOST:19530``, token from ``token=`` or ``MILVUS_TOKEN``). ``NAME`` (default
``proxy_pointer``) prefixes the collections, so one Milvus holds several indexes:

``NAME_chunks``
    One row per chunk row of every segment. ``pk`` = segment number << 32 | row; ``segment``,
    ``row``; the pointers (``doc_id``, ``node_id``, character offsets, line ranges, the
    node's own and subtree lines), ``title``, ``path``, ``crumbs`` (JSON) and ``norm``
    (normalized breadcrumb, for ``like`` prefilters), ``embed_text``; ``terms``: the
    chunk's BM25 terms as :func:`proxy_pointer.stores.analyzer.terms` writes them, which Milvus's
    BM25 function (whitespace analyzer, k1 1.5, b 0.75 like bm25s) turns into ``sparse``;
    ``vector`` (FLOAT_VECTOR, inner product; FLAT index, or the manifest's IVF/HNSW).
``NAME_docs``
    One row per document of every segment: ``segment``, ``doc_id``, ``sha256`` and its
    rows ``row_lo:row_hi``.
``NAME_blobs``
    Long strings in parts of at most 60,000 bytes (a VARCHAR holds 65,535): the stored copy
    of each source (``src/<sha256>``), each document's record (``rec/<segment>/<doc_id>``)
    and skeleton tree (``tree/<segment>/<doc_id>``). Sources are cut at line ends and each
    part records its first line, so slicing stays exact and a document stays in the same
    engine as its chunks: a query process needs the connection string and nothing else
    (an object store behind fsspec would need a second set of credentials and a second
    system to keep consistent).
``NAME_terms``
    Per segment, each BM25 term's document frequency, and under the term ``" "`` (which no
    text has) the segment's total length in terms: the statistics its BM25 scores use
    (:class:`~.search.MilvusLexical`), and term weights for packing.
``NAME_gen_000007``
    One small collection per generation: its manifest (the local store's, with each
    segment's name, row count and deleted documents), in parts.
alias ``NAME``
    Points at the committed generation's collection. Committing is ``alter_alias``, which
    Milvus applies atomically: a failed or interrupted update never moved the alias, so
    readers keep the previous generation, and the next writer deletes what it left.

Every collection has a vector field because Milvus requires one; the side collections
carry a 2-d zero vector. Writers take a lease row in ``NAME_lock`` (advisory: Milvus has
no compare-and-set; Milvus Lite serves one process anyway, so there a lease another process
took is a dead writer's and free at once).
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
import os
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from ...errors import (
    ConfigError,
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
)
from ..analyzer import terms as terms_of
from ..base import SCHEMA_VERSION, Manifest, OpenedIndex
from ..segments import DocumentParts, Segment, SegmentSet, plan_write
from .schema import blob_rows, chunk_row, ensure_blobs, ensure_collections
from .segment import (
    DEFAULT_NAME,
    LENGTH_TERM,
    MilvusConnection,
    MilvusSegment,
    in_list,
    is_server_uri,
    quote,
    segment_number,
)

__all__ = ["GRACE_SECONDS", "MilvusStore", "parse_location"]

#: Seconds a superseded generation (and what only it uses) is kept for its readers.
GRACE_SECONDS = 600.0
_PART_BYTES = 60_000
_VARCHAR = 65_535
_INSERT_ROWS = 500
_LOG_ROWS = 50 * _INSERT_ROWS
log = logging.getLogger(__name__)
_LEASE_SECONDS = 120.0
#: Marks the leases this process takes (with its pid, as a forked child is another process).
_PROCESS = uuid.uuid4().hex[:8]
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,150}")


def parse_location(location: str) -> tuple[str, str]:
    """``(uri, name)`` of ``milvus:URI[#NAME]``; :class:`ConfigError` when malformed."""
    if not location.startswith("milvus:"):
        raise ConfigError(f"{location!r} is not a milvus: location")
    uri, _, name = location[len("milvus:"):].partition("#")
    name = name or DEFAULT_NAME
    if not uri:
        raise ConfigError(f"{location!r}: give a Milvus Lite file (milvus:./pp.db) or a "
                          "server (milvus:http://HOST:19530)")
    if not _NAME_RE.fullmatch(name):
        raise ConfigError(f"{location!r}: the collection name {name!r} must be letters, "
                          "digits and underscores, not starting with a digit")
    return uri, name


class MilvusStore:
    """An index in Milvus (see the module docstring for the collections).

    >>> store = MilvusStore("milvus:./pp.db")        # doctest: +SKIP
    >>> Index.load(store).retrieve("...")            # doctest: +SKIP
    """

    def __init__(self, location: str, *, token: str | None = None,
                 timeout: float = 30.0) -> None:
        uri, name = parse_location(location)
        if is_server_uri(uri):
            token = token if token is not None else os.environ.get("MILVUS_TOKEN")
        elif not uri.endswith(".db"):
            raise ConfigError(f"{location}: a Milvus Lite file name must end in .db (or give "
                              "a server URL, milvus:http://HOST:19530)")
        else:
            uri = os.path.abspath(os.path.expanduser(uri))
        self.conn = MilvusConnection(uri, name, token, timeout)

    def __repr__(self) -> str:
        return f"MilvusStore({self.location!r})"

    @property
    def location(self) -> str:
        return self.conn.location

    # --- reading ------------------------------------------------------------------------
    def _current(self) -> str | None:
        """The committed generation's collection (the alias's target), or ``None``."""
        c = self.conn
        if c.is_lite and not os.path.exists(c.uri):
            return None  # never create a Milvus Lite file by reading
        if c.name not in _all_aliases(c):
            return None
        found = c.call("reading the alias", c.client().describe_alias, c.name)
        return str(found["collection_name"])

    def _generations(self) -> list[str]:
        prefix = f"{self.conn.name}_gen_"
        names = self.conn.call("listing collections", self.conn.client().list_collections)
        return sorted(n for n in names if n.startswith(prefix) and n[len(prefix):].isdigit())

    def exists(self) -> bool:
        return self._current() is not None

    def generation(self) -> str:
        return self._current() or ""

    def _read_generation(self, gen: str) -> dict[str, Any]:
        c = self.conn
        parts = sorted(c.scan(gen, "part >= 0", ["part", "data"]), key=lambda r: r["part"])
        try:
            raw = json.loads("".join(p["data"] for p in parts))
            if not isinstance(raw, dict):
                raise ValueError("not an object")
        except ValueError as e:
            raise IndexCorruptError(f"{self.location}: manifest {gen} unreadable ({e})") from None
        return raw

    def _manifest(self) -> tuple[str, Manifest, dict[str, Any]]:
        gen = self._current()
        if gen is None:
            raise IndexNotFoundError(f"no index at {self.location}: build one with "
                                     f"`proxy-pointer index DOCS --index {self.location}`")
        raw = self._read_generation(gen)
        schema = raw.get("schema_version")
        if schema != SCHEMA_VERSION:
            raise IndexMismatchError(
                f"{self.location}: index schema version {schema!r}, this library reads "
                f"{SCHEMA_VERSION}; rebuild it under another name: --index milvus:URI#NEW")
        return gen, Manifest.from_dict(raw, source=f"{self.location} {gen}"), raw

    def read_manifest(self) -> Manifest:
        return self._manifest()[1]

    def open(self, *, expect_embedder: str | None = None,
             expect_dimension: int | None = None) -> OpenedIndex:
        gen, manifest, raw = self._manifest()
        manifest.check_embedder(self.location, expect_embedder=expect_embedder,
                                expect_dimension=expect_dimension)
        emb = manifest.embedder
        segments = SegmentSet(
            [(MilvusSegment(self.conn, name, rows=rows, dimension=emb.dimension), deleted)
             for name, rows, deleted in _segment_list(raw, f"{self.location} {gen}")],
            emb.dimension)
        if segments.n_rows != manifest.n_chunks:
            raise IndexCorruptError(f"{self.location} {gen}: {manifest.n_chunks} chunks, its "
                                    f"segments hold {segments.n_rows}")
        return OpenedIndex(manifest=manifest, segments=segments, generation=gen)

    # --- locking ------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, *, timeout: float = 0.0) -> Iterator[None]:
        """Hold the writer lease; :class:`IndexLockedError` after ``timeout`` seconds.

        A lease row (owner, expiry) renewed while held: a writer that dies loses it within
        two minutes; on a Milvus Lite file at once, as Lite serves the file to one process
        (it holds a lock on it), so a lease another process took is a dead one's. Advisory,
        as Milvus has no compare-and-set: two writers starting in the same instant could
        both pass; the loser's commit then still leaves a consistent (the other's or its
        own) generation.
        """
        c = self.conn
        ensure_blobs(c, c.locks)
        me = f"{os.getpid()}-{_PROCESS}-{uuid.uuid4().hex[:8]}"
        deadline = time.monotonic() + timeout
        while not self._try_lease(me):
            if time.monotonic() >= deadline:
                raise IndexLockedError(f"{self.location}: another process is writing this "
                                       "index; wait for it to finish (or pass a lock timeout)")
            time.sleep(0.2)
        stop = threading.Event()
        renew = threading.Thread(target=self._renew, args=(me, stop), daemon=True)
        renew.start()
        try:
            yield
        finally:
            stop.set()
            renew.join()
            with contextlib.suppress(Exception):
                if self._holder() == me:
                    c.client().delete(c.locks, filter='key == "writer"')

    def _holder(self) -> str | None:
        self.conn.load(self.conn.locks)
        rows = self.conn.call("reading the lease", self.conn.client().query, self.conn.locks,
                              filter='key == "writer"', output_fields=["data"])
        if not rows:
            return None
        owner, _, expires = rows[0]["data"].partition(" ")
        if self.conn.is_lite and not owner.startswith(f"{os.getpid()}-{_PROCESS}-"):
            return None  # taken by a process that had this Lite file open and is gone
        return owner if float(expires or 0) > time.time() else None

    def _try_lease(self, me: str) -> bool:
        holder = self._holder()
        if holder not in (None, me):
            return False
        self._write_lease(me)
        return self._holder() == me

    def _write_lease(self, me: str) -> None:
        c = self.conn
        c.call("taking the lease", c.client().upsert, c.locks,
               blob_rows("writer", f"{me} {time.time() + _LEASE_SECONDS}", ""))

    def _renew(self, me: str, stop: threading.Event) -> None:
        while not stop.wait(_LEASE_SECONDS / 4):
            with contextlib.suppress(Exception):
                self._write_lease(me)

    # --- writing ------------------------------------------------------------------------
    def scratch(self) -> Path:
        """The system's temporary folder: a staged segment is read from there and inserted."""
        import tempfile

        return Path(tempfile.gettempdir())

    def write(self, manifest: Manifest, segments: SegmentSet) -> tuple[str, SegmentSet]:
        """Write what is new in ``segments`` as one Milvus segment and commit a generation
        by moving the alias (lock held)."""
        c = self.conn
        dim = manifest.embedder.dimension
        ensure_collections(c, dim, manifest.vector_index)
        previous = self._current()
        gen_no = max([int(g.rsplit("_", 1)[1]) for g in self._generations()] + [0]) + 1
        # Every segment a generation lists has document rows, so the highest one found
        # there is past every listed segment (and past a dead writer's, whose rows the
        # new segment's write clears if it left chunks without documents).
        next_seg = self._max_segment() + 1

        listed: list[tuple[str, int, list[str]]] = []
        merge: list[tuple[str, Segment]] = []  # (doc_id, segment) of documents to rewrite
        total = 0  # their rows
        for planned in plan_write(segments, lambda s: isinstance(s, MilvusSegment)
                                  and s.conn.location == c.location):
            seg = planned.segment
            if planned.keep:
                listed.append((seg.name, seg.n_rows, sorted(planned.deleted)))
            else:
                merge.extend((d, seg) for d in planned.live_ids())
                total += planned.live
        if merge:
            merge.sort(key=lambda m: m[0])
            name = f"seg-{next_seg:06d}"
            have = self._stored_sources({seg.record(d).sha256 for d, seg in merge})
            rows = self._write_segment(name, next_seg, (seg.parts(d) for d, seg in merge),
                                       have=have, total=total)
            listed.append((name, rows, []))
        for coll in (c.chunks, c.docs, c.blobs, c.terms):
            c.call(f"flushing {coll}", c.client().flush, coll)

        committed = SegmentSet(
            [(MilvusSegment(c, n, rows=r, dimension=dim), gone) for n, r, gone in listed], dim)
        manifest = dataclasses.replace(manifest, schema_version=SCHEMA_VERSION,
                                       n_documents=committed.n_documents(),
                                       n_chunks=committed.n_rows)
        body = {**manifest.to_dict(), "committed_at": time.time(), "previous": previous,
                "segments": [{"name": n, "rows": r, "deleted": d} for n, r, d in listed]}
        gen = f"{c.name}_gen_{gen_no:06d}"
        ensure_blobs(c, gen)
        c.call("writing the manifest", c.client().insert, gen,
               blob_rows("manifest", json.dumps(body, sort_keys=True), ""))
        c.call("flushing the manifest", c.client().flush, gen)
        client = c.client()
        if previous is None and c.name not in _all_aliases(c):
            c.call("creating the alias", client.create_alias, gen, c.name)
        else:
            c.call("moving the alias", client.alter_alias, gen, c.name)
        self._collect_garbage(gen)
        return gen, committed

    def _max_segment(self) -> int:
        """The highest segment number with rows in Milvus (a dead writer's included)."""
        best = 0
        for r in self.conn.scan(self.conn.docs, "row_lo >= 0", ["segment"]):
            best = max(best, segment_number(r["segment"]))
        return best

    def _write_segment(self, name: str, number: int, docs: Iterable[DocumentParts], *,
                       have: set[str], total: int = 0) -> int:
        """Insert ``docs`` (in row order, read one at a time) as segment ``name``, in
        batches of :data:`_INSERT_ROWS` chunks, logging progress (INFO, every
        :data:`_LOG_ROWS`) against ``total`` rows; returns its row count. ``have``: the
        sources already stored."""
        c = self.conn
        client = c.client()
        for coll in (c.chunks, c.docs, c.terms):  # rows a dead writer left under this name
            c.call(f"cleaning {coll}", client.delete, coll, filter=f"segment == {quote(name)}")
        c.call("cleaning blobs", client.delete, c.blobs, filter=f"segment == {quote(name)}")
        row = 0
        pending: list[dict[str, Any]] = []
        df: dict[str, int] = {}
        length = 0  # terms in all rows, stored as the df of LENGTH_TERM
        doc_rows, blobs = [], []
        for d in docs:
            r = d.record
            doc_rows.append({"pk": f"{name}/{r.doc_id}", "segment": name, "doc_id": r.doc_id,
                             "sha256": r.sha256, "row_lo": row, "row_hi": row + len(d.chunks),
                             "_": [0.0, 0.0]})
            blobs += blob_rows(f"rec/{name}/{r.doc_id}", json.dumps(r.to_dict()), name)
            if d.tree_json:
                blobs += blob_rows(f"tree/{name}/{r.doc_id}", d.tree_json, name)
            if r.sha256 not in have:
                blobs += blob_rows(f"src/{r.sha256}", d.text, "")
                have.add(r.sha256)
            words = terms_of([ch.embed_text for ch in d.chunks])
            for ch, vec, toks in zip(d.chunks, d.vectors, words, strict=True):
                for t in set(toks):
                    df[t] = df.get(t, 0) + 1
                length += len(toks)
                pending.append(chunk_row(name, number, row, ch, r.title, vec, toks))
                row += 1
                if len(pending) >= _INSERT_ROWS:
                    c.call("inserting chunks", client.insert, c.chunks, pending)
                    pending = []
                    if row % _LOG_ROWS == 0:
                        log.info("%s: %s of %s chunk rows inserted", self.location,
                                 f"{row:,}", f"{total:,}" if total else "?")
            if len(blobs) >= _INSERT_ROWS // 10:
                c.call("inserting blobs", client.insert, c.blobs, blobs)
                blobs = []
        if pending:
            c.call("inserting chunks", client.insert, c.chunks, pending)
        if blobs:
            c.call("inserting blobs", client.insert, c.blobs, blobs)
        for lo in range(0, len(doc_rows), _INSERT_ROWS):
            c.call("inserting documents", client.insert, c.docs, doc_rows[lo:lo + _INSERT_ROWS])
        term_rows = [{"pk": f"{name}/{t}", "segment": name, "term": t, "df": n, "_": [0.0, 0.0]}
                     for t, n in [*df.items(), (LENGTH_TERM, length)] if len(t.encode()) < 1000]
        for lo in range(0, len(term_rows), 5 * _INSERT_ROWS):
            c.call("inserting terms", client.insert, c.terms, term_rows[lo:lo + 5 * _INSERT_ROWS])
        return row

    def _stored_sources(self, shas: set[str]) -> set[str]:
        keys = [f"src/{h}#0" for h in shas]
        return {r["key"][4:] for r in self.conn.get(self.conn.blobs, keys, ["key"])}

    def _collect_garbage(self, current: str) -> None:
        """Drop generations no reader needs and delete the rows only they used: kept are
        the current and the previous generation and any superseded less than
        :data:`GRACE_SECONDS` ago (generations link to the one they replaced); one a
        failed writer made but never committed is dropped."""
        c = self.conn
        client = c.client()
        gens = self._generations()
        raws: dict[str, dict[str, Any] | None] = {}
        for gen in gens:
            try:
                raws[gen] = self._read_generation(gen)
            except Exception:  # a generation whose writer died mid-way: dropped below
                raws[gen] = None
        chain: list[str] = []  # committed generations, newest first, linked by "previous"
        link: str | None = current
        while link is not None and raws.get(link) is not None and link not in chain:
            chain.append(link)
            link = (raws[link] or {}).get("previous")
        now = time.time()
        keep = set(chain[:2])
        for newer, older in itertools.pairwise(chain[1:]):
            if now - float((raws[newer] or {}).get("committed_at", now)) < GRACE_SECONDS:
                keep.add(older)
        for g in gens:  # superseded ones past their grace, and any never committed
            if g not in keep:
                c.call("dropping an old generation", client.drop_collection, g)
        live: dict[str, set[str]] = {}  # segment -> documents deleted in every kept generation
        for g in keep:
            for name, _, deleted in _segment_list(raws[g] or {}, g):
                have = live.get(name)
                live[name] = set(deleted) if have is None else have & set(deleted)
        names = sorted(live)
        keep_rows = f"not ({in_list('segment', names)})" if names else 'segment != ""'
        for coll in (c.chunks, c.docs, c.terms):
            c.call(f"deleting from {coll}", client.delete, coll, filter=keep_rows)
        c.call("deleting blobs", client.delete, c.blobs,
               filter=f'segment != "" and {keep_rows}')
        shas = {r["sha256"] for r in c.scan(c.docs, "row_lo >= 0", ["segment", "doc_id", "sha256"])
                if r["doc_id"] not in live.get(r["segment"], set())}
        stale = sorted({r["key"] for r in c.scan(c.blobs, 'segment == "" and part == 0', ["key"])
                        if r["key"][4:] not in shas})
        for lo in range(0, len(stale), 500):
            c.call("deleting sources", client.delete, c.blobs,
                   filter=in_list("key", stale[lo:lo + 500]))

def _all_aliases(c: MilvusConnection) -> list[str]:
    out: list[str] = c.call("listing aliases", c.client().list_aliases).get("aliases", [])
    return out


def _segment_list(raw: dict[str, Any], source: str) -> list[tuple[str, int, list[str]]]:
    try:
        out = [(str(s["name"]), int(s["rows"]), [str(d) for d in s.get("deleted", [])])
               for s in raw.get("segments", [])]
        for name, _, _ in out:
            segment_number(name)
    except (KeyError, TypeError, ValueError, IndexCorruptError) as e:
        raise IndexCorruptError(f"{source}: bad segment list ({e})") from None
    return out


