"""The embedded default store: an index directory of segments and atomic generations.

Layout of an index directory::

    DIR/
      CURRENT              name of the committed generation, e.g. "gen-000007"
      lock                 advisory lock file held by a writer
      gen-000007/
        manifest.json      schema version, library version, embedder id and dimension,
                           chunking and vector-index settings, counts, and the generation's
                           segments: each segment's name and its deleted document ids
      segments/seg-000012/ one immutable segment (see :mod:`proxy_pointer.stores.disk`)
      sources/<sha256>     the exact text of each document as indexed, shared by all
      .staging-PID-N/      a segment an update is streaming (see :mod:`.staging`), linked
                           into ``segments/`` when committed, then deleted

A generation is a small manifest naming immutable segments (:mod:`.segments`). A save
writes only what changed: new documents become a new segment, replaced and removed ones
are listed as deleted in the manifest, and small segments are merged once there are more
than :data:`~.segments.MAX_SMALL_SEGMENTS` of them (or a segment is mostly deleted; the
policy every store shares, :func:`~.segments.plan_write`). New files are written and
flushed first; then the manifest; then ``CURRENT`` is swapped with an atomic ``os.replace``.
A crash at any point leaves the previous generation committed and loadable; the next
writer collects what the dead one left. Files of superseded generations are kept while the
generation is the previous one or was superseded less than :data:`GRACE_SECONDS` ago, so a
reader that opened it keeps a consistent view.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import IndexCorruptError, IndexLockedError, IndexMismatchError, IndexNotFoundError
from .base import SCHEMA_VERSION, Manifest, OpenedIndex
from .disk import DiskSegment
from .segments import MemorySegment, PlannedSegment, Segment, SegmentSet, plan_write
from .writer import fsync_path, read_source, store_source, write_segment

__all__ = ["GRACE_SECONDS", "JOIN_ROWS", "LocalStore", "current_generation",
           "index_size_bytes", "write_lock"]

_CURRENT = "CURRENT"
_SEGMENTS, _SOURCES = "segments", "sources"
_MAX_NAME = 64  # a generation's or segment's name ("gen-000007"); longer is not a file name
#: Seconds a superseded generation's files are kept for readers that still use it.
GRACE_SECONDS = 600.0
#: Rows of a staged segment that are rewritten with segments being merged rather than
#: linked in beside them (a few seconds of work).
JOIN_ROWS = 50_000


# --- locking ----------------------------------------------------------------------------
@contextlib.contextmanager
def write_lock(directory: str | os.PathLike[str], *, timeout: float = 0.0) -> Iterator[None]:
    """Hold the index's writer lock; a second writer waits ``timeout`` seconds, then fails.

    Raises :class:`IndexLockedError` naming the directory. The lock is advisory (``flock``)
    and released by the OS if the holder dies, so a crash never leaves a stale lock.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise IndexLockedError(
                        f"{directory}: another process is writing this index; "
                        "wait for it to finish (or pass a lock timeout)"
                    ) from None
                time.sleep(0.1)
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# --- files ------------------------------------------------------------------------------
def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def current_generation(directory: str | os.PathLike[str]) -> Path | None:
    """The committed generation folder, or ``None`` when the directory holds no index."""
    directory = Path(directory)
    try:
        name = (directory / _CURRENT).read_text().strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise IndexCorruptError(f"{directory}: cannot read {_CURRENT}: {e}") from e
    if not name.startswith("gen-") or "/" in name or len(name) > _MAX_NAME:
        raise IndexCorruptError(f"{directory}/{_CURRENT}: unexpected content {name!r}")
    return directory / name


def _generation_number(name: str) -> int:
    tail = name.split("-", 1)[1] if "-" in name else ""
    return int(tail) if tail.isdigit() else 0


def _segment_list(raw: dict[str, Any], source: str) -> list[tuple[str, list[str]]]:
    try:
        out = [(str(s["name"]), [str(d) for d in s.get("deleted", [])])
               for s in raw["segments"]]
    except (KeyError, TypeError) as e:
        raise IndexCorruptError(f"{source}: bad segment list ({e!r})") from None
    for name, _ in out:
        if not name.startswith("seg-") or "/" in name or len(name) > _MAX_NAME:
            raise IndexCorruptError(f"{source}: bad segment name {name!r}")
    return out


def _commit_generation(directory: Path, name: str, manifest: Manifest,
                       listed: list[tuple[str, list[str]]]) -> Path:
    """Write generation ``name`` (its manifest naming the ``listed`` segments) and point
    ``CURRENT`` at it, each step atomic and synced; returns the generation's folder."""
    gen = directory / name
    tmp = directory / f".tmp-{gen.name}-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    body = {**manifest.to_dict(),
            "segments": [{"name": n, "deleted": d} for n, d in listed]}
    _write_file(tmp / "manifest.json", json.dumps(body, indent=1, sort_keys=True).encode())
    fsync_path(tmp)
    os.rename(tmp, gen)
    pointer = directory / f".{_CURRENT}.tmp"
    _write_file(pointer, (gen.name + "\n").encode())
    os.replace(pointer, directory / _CURRENT)
    fsync_path(directory)
    return gen

class LocalStore:
    """An index directory on the local file system (see the module docstring for layout).

    >>> store = LocalStore(".proxy-pointer-index")        # doctest: +SKIP
    >>> opened = store.open()                              # doctest: +SKIP
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"LocalStore({str(self.directory)!r})"

    @property
    def location(self) -> str:
        return str(self.directory)

    def exists(self) -> bool:
        return current_generation(self.directory) is not None

    def generation(self) -> str:
        gen = current_generation(self.directory)
        return gen.name if gen is not None else ""

    def lock(self, *, timeout: float = 0.0) -> contextlib.AbstractContextManager[None]:
        return write_lock(self.directory, timeout=timeout)

    def size_bytes(self) -> int:
        """Bytes on disk of the committed generation (what a reader may read)."""
        return index_size_bytes(self.directory)

    # --- reading ------------------------------------------------------------------------
    def read_manifest(self) -> Manifest:
        """The committed generation's manifest.

        Raises :class:`IndexNotFoundError` (no such directory, or no committed index in
        it), :class:`IndexCorruptError` (a file missing or unparsable) or
        :class:`IndexMismatchError` (a schema version this library does not read).
        """
        return self._manifest()[1]

    def _manifest(self) -> tuple[Path, Manifest, dict[str, Any]]:
        directory = self.directory
        gen = current_generation(directory) if directory.is_dir() else None
        if gen is None:
            raise IndexNotFoundError(f"no index at {directory}: build one with "
                                     f"`proxy-pointer index DOCS --index {directory}`")
        if not gen.is_dir():
            raise IndexCorruptError(
                f"{directory}/{_CURRENT}: names generation {gen.name}, which is missing"
            )
        raw = _read_manifest(gen / "manifest.json")
        schema = raw.get("schema_version")
        if schema != SCHEMA_VERSION:
            how = ("it predates segmented indexes (0.x); rebuild it: proxy-pointer index "
                   f"DOCS --index {directory} after removing it, or --index NEW_DIR"
                   if schema == 1 else
                   "rebuild it in a new directory: proxy-pointer index DOCS --index NEW_DIR")
            raise IndexMismatchError(
                f"{directory}: index schema version {schema!r}, this library reads "
                f"{SCHEMA_VERSION}; {how}"
            )
        return gen, Manifest.from_dict(raw, source=f"{gen}/manifest.json"), raw

    def open(self, *, expect_embedder: str | None = None,
             expect_dimension: int | None = None) -> OpenedIndex:
        """Open the committed generation without reading its contents.

        Raises :class:`IndexNotFoundError` where there is no index, :class:`IndexCorruptError`
        for a missing or damaged file and :class:`IndexMismatchError` for an unknown schema
        or another embedder than expected.
        """
        gen, manifest, raw = self._manifest()
        manifest.check_embedder(self.location, expect_embedder=expect_embedder,
                                expect_dimension=expect_dimension)
        emb = manifest.embedder
        slots = []
        for name, deleted in _segment_list(raw, f"{gen}/manifest.json"):
            folder = self.directory / _SEGMENTS / name
            if not folder.is_dir():
                raise IndexCorruptError(f"{folder}: segment named by {gen.name} is missing")
            slots.append((DiskSegment(folder, source=self._source, dimension=emb.dimension),
                          deleted))
        segments = SegmentSet(slots, emb.dimension)
        if segments.n_rows != manifest.n_chunks:
            raise IndexCorruptError(f"{gen}/manifest.json: {manifest.n_chunks} chunks, its "
                                    f"segments hold {segments.n_rows}")
        return OpenedIndex(manifest=manifest, segments=segments, generation=gen.name)

    def _source(self, sha256: str) -> str:
        return read_source(self.directory / _SOURCES, sha256)

    # --- writing ------------------------------------------------------------------------
    def scratch(self) -> Path:
        """The index directory itself: a staged segment there is linked into place."""
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory

    def write(self, manifest: Manifest, segments: SegmentSet) -> tuple[str, SegmentSet]:
        """Write what is new in ``segments`` and commit it as a generation (lock held).

        Returns the generation's name and the committed segments, reopened from disk.
        """
        directory = self.directory
        seg_dir, src_dir = directory / _SEGMENTS, directory / _SOURCES
        seg_dir.mkdir(parents=True, exist_ok=True)
        src_dir.mkdir(exist_ok=True)
        previous = current_generation(directory)
        gen_num = max([_generation_number(p.name) for p in directory.glob("gen-*")]
                      + [_generation_number(previous.name) if previous else 0]) + 1
        listed = self._write_segments(manifest, segments)
        fsync_path(src_dir)
        fsync_path(seg_dir)

        opened = {name: DiskSegment(seg_dir / name, source=self._source,
                                    dimension=manifest.embedder.dimension)
                  for name, _ in listed}
        committed = SegmentSet([(opened[n], gone) for n, gone in listed],
                               manifest.embedder.dimension)
        n_docs, n_chunks = committed.n_documents(), committed.n_rows
        manifest = dataclasses.replace(manifest, schema_version=SCHEMA_VERSION,
                                       n_documents=n_docs, n_chunks=n_chunks)
        gen = _commit_generation(directory, f"gen-{gen_num:06d}", manifest, listed)
        self._collect_garbage(gen, previous, opened)
        return gen.name, committed

    def _write_segments(self, manifest: Manifest, segments: SegmentSet
                        ) -> list[tuple[str, list[str]]]:
        """Bring ``segments`` into ``segments/``: keep the ones there, link in finished ones
        staged elsewhere, rewrite the rest (and their sources) as one new segment.

        Returns ``(segment name, deleted doc ids)`` of every segment of the generation.
        """
        seg_dir = self.directory / _SEGMENTS
        next_seg = max([_generation_number(p.name) for p in seg_dir.glob("seg-*")] + [0]) + 1
        listed: list[tuple[str, list[str]]] = []
        merge: list[tuple[str, Segment]] = []  # (doc_id, segment) of documents to rewrite
        rewritten = 0  # their rows
        adoptable: list[PlannedSegment] = []
        for planned in plan_write(segments, lambda s: isinstance(s, DiskSegment)
                                  and s.folder.parent == seg_dir):
            seg = planned.segment
            fits = (isinstance(seg, DiskSegment) and seg.approximate
                    == manifest.vector_index.approximate_kind(seg.n_rows))
            if planned.keep and fits:
                listed.append((seg.name, sorted(planned.deleted)))
            elif (isinstance(seg, DiskSegment) and not planned.ours and fits
                  and not planned.deleted and not planned.merge):
                adoptable.append(planned)  # a finished segment (staged by an update)
            else:
                merge.extend((d, seg) for d in planned.live_ids())
                rewritten += planned.live
        # A segment written elsewhere is linked in as it is, unless segments are being
        # rewritten anyway and it is small (JOIN_ROWS) or no bigger than they are: it then
        # joins them, so an update that rewrites gives one segment in doc id order.
        for planned in adoptable:
            if rewritten and planned.live <= max(rewritten, JOIN_ROWS):
                merge.extend((d, planned.segment) for d in planned.live_ids())
                continue
            name = f"seg-{next_seg:06d}"
            next_seg += 1
            assert isinstance(planned.segment, DiskSegment)
            self._adopt(planned.segment, seg_dir / name)
            listed.append((name, []))
        if merge:
            merge.sort(key=lambda m: m[0])
            for d, seg in merge:
                self._store_source(seg.record(d).sha256, seg.text(d))
            name = f"seg-{next_seg:06d}"
            mem = [s for s, _ in segments.slots if isinstance(s, MemorySegment)]
            lexical = (mem[0].built_lexical() if len(mem) == 1 and _same_order(mem[0], merge)
                       else None)
            write_segment(seg_dir / name, (seg.parts(d) for d, seg in merge),
                          dimension=manifest.embedder.dimension,
                          config=manifest.vector_index, lexical=lexical)
            listed.append((name, []))
        return listed

    def _store_source(self, sha256: str, text: str) -> None:
        store_source(self.directory / _SOURCES, sha256, text)

    def _adopt(self, seg: DiskSegment, folder: Path) -> None:
        """Bring a segment of another index directory here (hard links where possible)."""
        tmp = folder.with_name(f".tmp-{folder.name}-{os.getpid()}")
        shutil.copytree(seg.folder, tmp, copy_function=_link_or_copy)
        for d in seg.sha256s():
            self._store_source(seg.record(d).sha256, seg.text(d))
        os.rename(tmp, folder)

    def _collect_garbage(self, current: Path, previous: Path | None,
                         opened: dict[str, DiskSegment]) -> None:
        """Delete generations, segments and sources no kept generation needs, and what
        writers that died left (we hold the writer lock, so nobody writes them now).

        Kept: the new and the previous generation, and older ones superseded less than
        :data:`GRACE_SECONDS` ago. A generation folder that was never committed (its
        writer died before swapping ``CURRENT``) is deleted. ``opened``: the new
        generation's segments by name, already open.
        """
        directory = self.directory
        low = _generation_number(previous.name) if previous is not None else 0
        now = time.time()
        committed = sorted((p for p in directory.glob("gen-*") if p.is_dir()
                            and (_generation_number(p.name) <= low or p == current)),
                           key=lambda p: _generation_number(p.name))
        keep: list[Path] = []
        for i, g in enumerate(committed):
            superseded = (_mtime(committed[i + 1] / "manifest.json")
                          if i + 1 < len(committed) else now)
            if g in (current, previous) or now - superseded < GRACE_SECONDS:
                keep.append(g)
        for g in directory.glob("gen-*"):
            if g not in keep:
                shutil.rmtree(g, ignore_errors=True)
        # segment -> the documents every kept generation listing it has deleted
        deleted_everywhere: dict[str, set[str]] = {}
        for g in keep:
            with contextlib.suppress(IndexCorruptError, OSError, ValueError):
                for n, deleted in _segment_list(_read_manifest(g / "manifest.json"), str(g)):
                    have = deleted_everywhere.get(n)
                    deleted_everywhere[n] = set(deleted) if have is None else have & set(deleted)
        seg_dir, src_dir = directory / _SEGMENTS, directory / _SOURCES
        shas: set[str] = set()
        for p in seg_dir.iterdir():
            if p.name not in deleted_everywhere:
                shutil.rmtree(p, ignore_errors=True)
                continue
            with contextlib.suppress(IndexCorruptError, OSError, ValueError):
                seg = opened.get(p.name) or DiskSegment(p, source=self._source,
                                                        dimension=_dim(p))
                gone = deleted_everywhere[p.name]
                shas.update(h for d, h in seg.sha256s().items() if d not in gone)
                if p.name not in opened:
                    seg.close()
        for p in src_dir.iterdir():
            if p.name not in shas:
                p.unlink(missing_ok=True)
        for p in directory.glob(".tmp-gen-*"):
            shutil.rmtree(p, ignore_errors=True)
        # Segments staged by writers that died (ours are deleted once committed).
        for p in directory.glob(".staging-*"):
            if p.name.split("-")[1] != str(os.getpid()):
                shutil.rmtree(p, ignore_errors=True)


def _same_order(seg: MemorySegment, merge: list[tuple[str, Segment]]) -> bool:
    """Whether ``merge`` is exactly ``seg``'s documents in its row order."""
    return [d for d, _ in merge] == [p.record.doc_id for p in seg.documents]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _dim(folder: Path) -> int:
    return int(json.loads((folder / "segment.json").read_text())["dimension"])


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _read_manifest(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IndexCorruptError(f"{path}: missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise IndexCorruptError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("embedder", {}), dict):
        raise IndexCorruptError(f"{path}: not an index manifest")
    return raw


def index_size_bytes(directory: str | os.PathLike[str]) -> int:
    """Bytes on disk of the committed generation: its manifest, segments and sources."""
    directory = Path(directory)
    gen = current_generation(directory)
    if gen is None:
        return 0
    total = (gen / "manifest.json").stat().st_size
    raw = _read_manifest(gen / "manifest.json")
    shas: set[str] = set()
    for name, _ in _segment_list(raw, str(gen)):
        folder = directory / _SEGMENTS / name
        total += sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        seg = DiskSegment(folder, source=lambda h: "", dimension=_dim(folder))
        shas.update(seg.sha256s().values())
        seg.close()
    return total + sum((directory / _SOURCES / h).stat().st_size for h in shas)
