"""Tests for the local store: generations, atomic commit, crash safety, locking, errors."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import proxy_pointer.stores.local as local_store
import proxy_pointer.stores.segments as segments_module
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import (
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
)
from proxy_pointer.index import Index, update_directory
from proxy_pointer.stores import (
    SCHEMA_VERSION,
    LocalStore,
    current_generation,
    index_size_bytes,
    write_lock,
)

REPO = Path(__file__).resolve().parents[2]


def _gen(target: Path) -> Path:
    gen = current_generation(target)
    assert gen is not None
    return gen


# --- generations ------------------------------------------------------------------------
def _manifest(target: Path) -> dict:
    return json.loads((_gen(target) / "manifest.json").read_text())


def _segments(target: Path) -> list[Path]:
    return [target / "segments" / s["name"] for s in _manifest(target)["segments"]]


def _files(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


def test_layout_and_generations(saved: Path, docs: Path, monkeypatch) -> None:
    gen1 = _gen(saved)
    assert gen1.name == "gen-000001"
    assert sorted(p.name for p in gen1.iterdir()) == ["manifest.json"]
    manifest = _manifest(saved)
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["embedder"] == {"model_id": "hash:64", "dimension": 64}
    assert manifest["n_documents"] == 3
    [seg] = _segments(saved)
    assert sorted(p.name for p in seg.iterdir()) == [
        "bm25", "meta.sqlite", "segment.json", "vectors.npy"]
    # Pickle-free: the vectors load with allow_pickle=False as plain float32.
    vectors = np.load(seg / "vectors.npy", allow_pickle=False)
    assert vectors.dtype == np.float32 and vectors.shape == (manifest["n_chunks"], 64)
    assert len(list((saved / "sources").iterdir())) == 3
    assert index_size_bytes(saved) == (
        (gen1 / "manifest.json").stat().st_size
        + sum(p.stat().st_size for p in seg.rglob("*") if p.is_file())
        + sum(p.stat().st_size for p in (saved / "sources").iterdir()))

    # An update writes only the changed document: a new small segment; the old segment's
    # files are untouched and its replaced document is listed as deleted.
    before = _files(seg)
    (docs / "harbor.md").write_text((docs / "harbor.md").read_text() + "\nMore.\n")
    update_directory(saved, [docs], embedder=HashEmbedder(64))
    gen2 = _gen(saved)
    assert gen2.name == "gen-000002" and gen1.is_dir()
    assert [s["deleted"] for s in _manifest(saved)["segments"]] == [["harbor.md"], []]
    old, new = _segments(saved)
    assert old == seg and _files(seg) == before
    assert json.loads((new / "segment.json").read_text())["documents"] == 1
    assert len(list((saved / "sources").iterdir())) == 4  # the old harbor kept for gen 1

    # Superseded generations are kept for GRACE_SECONDS (readers may use them), then
    # collected with the files only they needed.
    monkeypatch.setattr(local_store, "GRACE_SECONDS", 0.0)
    (docs / "harbor.md").write_text((docs / "harbor.md").read_text() + "\nAgain.\n")
    update_directory(saved, [docs], embedder=HashEmbedder(64))
    assert sorted(p.name for p in saved.glob("gen-*")) == ["gen-000002", "gen-000003"]
    assert len(list((saved / "sources").iterdir())) == 4
    assert Index.load(saved).reader.text("harbor.md").endswith("Again.\n")


def test_small_segments_are_merged_and_big_ones_kept(saved: Path, docs: Path,
                                                     monkeypatch) -> None:
    monkeypatch.setattr(segments_module, "MAX_SMALL_SEGMENTS", 2)
    monkeypatch.setattr(segments_module, "SMALL_SHARE", 0.5)  # the sample documents are tiny
    [first] = _segments(saved)
    base = Index.load(saved)
    for i in range(3):
        (docs / f"extra{i}.md").write_text(f"# Extra {i}\n\n" + f"Note {i} on lanterns. " * 8)
        update_directory(saved, [docs], embedder=HashEmbedder(64))
    names = [p.name for p in _segments(saved)]
    # Three one-document segments are more than two small ones: merged into one.
    assert len(names) == 2 and names[0] == first.name
    assert json.loads((_segments(saved)[1] / "segment.json").read_text())["documents"] == 3
    idx = Index.load(saved)
    assert sorted(idx.reader.documents) == sorted([*base.reader.documents, "extra0.md", "extra1.md",
                                            "extra2.md"])
    assert idx.retrieve("lanterns", doc_ids=["extra1.md"]).sections


def test_a_reader_keeps_its_generation_while_writers_commit(saved: Path, docs: Path) -> None:
    reader = Index.load(saved)
    expected = [s.ref for s in reader.retrieve("Which ships may enter at high tide?").sections]
    harbor = reader.reader.text("harbor.md")
    (docs / "harbor.md").unlink()
    (docs / "canal.md").write_text("# Canal\n\nBarges carry grain through the locks. " * 3)
    update_directory(saved, [docs], embedder=HashEmbedder(64), prune=True)
    (docs / "orchard.md").write_text("# Orchard\n\nRewritten entirely about pears. " * 3)
    update_directory(saved, [docs], embedder=HashEmbedder(64), prune=True)
    assert "harbor.md" not in Index.load(saved).reader.documents
    # The reader opened generation 1: same documents, same text, same answers.
    assert "harbor.md" in reader.reader.documents and "canal.md" not in reader.reader.documents
    assert reader.reader.text("harbor.md") == harbor
    assert [s.ref for s in reader.retrieve("Which ships may enter at high tide?").sections] \
        == expected


def test_empty_index_round_trips(tmp_path: Path) -> None:
    Index(embedder=HashEmbedder(16)).save(tmp_path / "idx")
    idx = Index.load(tmp_path / "idx")
    assert len(idx) == 0 and idx.reader.vectors.shape == (0, 16)
    assert idx.retrieve("anything").sections == ()


def test_unusual_characters_survive(tmp_path: Path) -> None:
    """Line/paragraph separators and NEL stay inside JSON strings; CRLF stays CRLF."""
    text = ("# Title\r\n\r\nA first paragraph with a line\u2028separator, a para\u2029graph mark "
            "and a next\x85line, long enough to be chunked on its own here.\r\n"
            "\r\n## Émoji 🚢\r\n\r\n" + "Ünïcödé words and more words. " * 6 + "\r\n")
    idx = Index(embedder=HashEmbedder(32))
    idx.add_text("odd name #1.md", text)
    idx.save(tmp_path / "idx")
    loaded = Index.load(tmp_path / "idx")
    assert loaded.reader.text("odd name #1.md") == text
    assert loaded.reader.chunks == idx.reader.chunks


# --- locking -----------------------------------------------------------------------------
def test_write_lock_excludes_a_second_writer(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    with write_lock(target):
        assert (target / "lock").read_text() == str(os.getpid())
        start = time.monotonic()
        with pytest.raises(IndexLockedError, match=r"another process is writing") as e:
            with write_lock(target, timeout=0.3):
                pass
        assert time.monotonic() - start >= 0.3
        assert str(target) in str(e.value)
    with write_lock(target, timeout=0):  # released on exit
        pass


def test_write_lock_waits_for_release(tmp_path: Path) -> None:
    target = tmp_path / "idx"
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with write_lock(target):
            held.set()
            release.wait(10)

    t = threading.Thread(target=holder)
    t.start()
    assert held.wait(10)
    threading.Timer(0.3, release.set).start()
    with write_lock(target, timeout=10):
        assert release.is_set()
    t.join()


# --- crash safety ------------------------------------------------------------------------
_KILLED_WRITER = r"""
import os, sys, time
import proxy_pointer.stores.writer as writer
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import update_directory

stage, target, docs = sys.argv[1:4]
real_fsync, real_replace = writer.fsync_path, os.replace

def pause():
    print("WRITING", flush=True)
    time.sleep(120)

def fsync_path(path):
    real_fsync(path)
    if stage == "partial" and path.name == "meta.sqlite":
        with open(path, "r+b") as f:
            f.truncate(path.stat().st_size // 2)  # half a file on disk when we die
        pause()

def replace(src, dst):
    if stage == "commit" and os.path.basename(dst) == "CURRENT":
        pause()  # the new generation is complete and renamed, CURRENT not swapped yet
    real_replace(src, dst)

writer.fsync_path = fsync_path
os.replace = replace
update_directory(target, [docs], embedder=HashEmbedder(64), prune=True)
print("DONE", flush=True)
"""


@pytest.mark.parametrize("stage", ["partial", "commit"])
def test_killed_writer_leaves_previous_generation(stage: str, saved: Path, docs: Path,
                                                  monkeypatch) -> None:
    before = Index.load(saved)
    old_harbor = before.reader.text("harbor.md")
    (docs / "harbor.md").write_text(old_harbor.replace("Tides", "Tide windows"))
    (docs / "orchard.md").unlink()
    (docs / "new.md").write_text("# Lanterns\n\n" + "Paper lanterns float on the river. " * 5)

    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED_WRITER, stage, str(saved), str(docs)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line == "WRITING", proc.stderr.read() if proc.stderr else ""
        # The child holds the writer lock while it writes.
        with pytest.raises(IndexLockedError):
            update_directory(saved, [docs], embedder=HashEmbedder(64), lock_timeout=0)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL

    segs = sorted(p.name for p in (saved / "segments").iterdir())
    if stage == "partial":  # the update's segment, half written where it was staged
        assert list(saved.glob(".staging-*/.tmp-seg-*/meta.sqlite"))
    else:
        assert "gen-000002" in {p.name for p in saved.glob("gen-*")} and "seg-000002" in segs
    assert _gen(saved).name == "gen-000001"

    after = Index.load(saved)
    assert sorted(after.reader.documents) == ["harbor.md", "observatory.md", "orchard.md"]
    assert after.reader.text("harbor.md") == old_harbor
    assert after.reader.chunks == before.reader.chunks
    np.testing.assert_array_equal(after.reader.vectors, before.reader.vectors)

    # The next writer succeeds and collects the dead writer's leftovers.
    monkeypatch.setattr(local_store, "GRACE_SECONDS", 0.0)
    _, rep = update_directory(saved, [docs], embedder=HashEmbedder(64), prune=True)
    assert rep.added == ("new.md",) and rep.updated == ("harbor.md",)
    assert rep.removed == ("orchard.md",)
    expected = "gen-000003" if stage == "commit" else "gen-000002"
    assert _gen(saved).name == expected
    assert not [p for p in (saved / "segments").iterdir() if p.name.startswith(".tmp-")]
    assert not list(saved.glob(".staging-*"))  # the dead writer's and this one's
    assert sorted(p.name for p in (saved / "segments").iterdir()) == sorted(
        {p.name for p in _segments(saved)} | {"seg-000001"})
    assert sorted(Index.load(saved).reader.documents) == ["harbor.md", "new.md", "observatory.md"]


# --- bad input ---------------------------------------------------------------------------
def test_truncated_or_corrupt_segment_files(saved: Path) -> None:
    [seg] = _segments(saved)
    for name in ("vectors.npy", "meta.sqlite", next((seg / "bm25").iterdir()).name):
        path = seg / name if (seg / name).exists() else seg / "bm25" / name
        data = path.read_bytes()
        path.write_bytes(data[: len(data) - 7])
        with pytest.raises(IndexCorruptError, match=re.escape(str(path)) + ": .*truncated"):
            Index.load(saved)
        path.unlink()
        with pytest.raises(IndexCorruptError, match=re.escape(str(path)) + ": missing"):
            Index.load(saved)
        path.write_bytes(data)
    # Damage of the same size is caught when the file is parsed.
    vec = seg / "vectors.npy"
    data = vec.read_bytes()
    vec.write_bytes(b"\0" * len(data))
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy: unreadable"):
        Index.load(saved)
    vec.write_bytes(data)
    bm25 = seg / "bm25" / "vocab.index.json"
    raw = bm25.read_bytes()
    bm25.write_bytes(b"{" * len(raw))
    idx = Index.load(saved)  # the lexical index is read on the first hybrid query
    with pytest.raises(IndexCorruptError, match=r"bm25: BM25 index unreadable"):
        idx.retrieve("ferries")
    bm25.write_bytes(raw)
    (seg / "segment.json").write_text("{")
    with pytest.raises(IndexCorruptError, match=r"segment\.json: unreadable"):
        Index.load(saved)
    (seg / "segment.json").unlink()
    with pytest.raises(IndexCorruptError, match=r"segment\.json: missing"):
        Index.load(saved)


def test_missing_segment_or_source(saved: Path) -> None:
    [seg] = _segments(saved)
    idx = Index.load(saved)
    source = next((saved / "sources").iterdir())
    data = source.read_bytes()
    source.write_bytes(b"\xff" + data)
    with pytest.raises(IndexCorruptError, match=r"stored copy is damaged"):
        [idx.reader.text(d) for d in idx.reader.documents]
    source.unlink()
    with pytest.raises(IndexCorruptError, match=r"stored copy of a document is missing"):
        [Index.load(saved).reader.text(d) for d in idx.reader.documents]
    source.write_bytes(data)
    seg.rename(seg.with_name("elsewhere"))
    with pytest.raises(IndexCorruptError, match=r"seg-000001: segment named by gen-000001 is"):
        Index.load(saved)


def test_missing_or_broken_manifest(saved: Path) -> None:
    gen = _gen(saved)
    manifest = (gen / "manifest.json").read_text()
    (gen / "manifest.json").write_text(manifest[:20])
    with pytest.raises(IndexCorruptError, match=r"manifest\.json: not valid JSON"):
        Index.load(saved)
    (gen / "manifest.json").write_text("[1, 2]")
    with pytest.raises(IndexCorruptError, match=r"manifest\.json: not an index manifest"):
        Index.load(saved)
    bad = json.loads(manifest)
    del bad["chunking"]
    (gen / "manifest.json").write_text(json.dumps(bad))
    with pytest.raises(IndexCorruptError, match=r"manifest\.json: bad settings"):
        Index.load(saved)
    bad = json.loads(manifest)
    bad["n_chunks"] += 1
    (gen / "manifest.json").write_text(json.dumps(bad))
    with pytest.raises(IndexCorruptError, match=r"chunks, its segments hold"):
        Index.load(saved)
    (gen / "manifest.json").unlink()
    with pytest.raises(IndexCorruptError, match=r"manifest\.json: missing"):
        Index.load(saved)


def test_current_pointer_problems(saved: Path, tmp_path: Path) -> None:
    (saved / "CURRENT").write_text("gen-000042\n")
    with pytest.raises(IndexCorruptError, match=r"CURRENT: names generation gen-000042"):
        Index.load(saved)
    (saved / "CURRENT").write_text("../../etc\n")
    with pytest.raises(IndexCorruptError, match=r"CURRENT: unexpected content"):
        Index.load(saved)
    (saved / "CURRENT").unlink()
    # no committed index, or no directory: not found (not corrupt), with how to build one
    with pytest.raises(IndexNotFoundError, match=f"no index at {re.escape(str(saved))}: "
                       r"build one with `proxy-pointer index DOCS --index "):
        Index.load(saved)
    with pytest.raises(IndexNotFoundError, match=r"no index at .*never-created: build one"):
        Index.load(tmp_path / "never-created")


def test_old_or_unknown_schema_version(saved: Path) -> None:
    path = _gen(saved) / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["schema_version"] = 99
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match=r"schema version 99, this library reads 2"):
        Index.load(saved)
    manifest["schema_version"] = 1
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match=r"predates segmented indexes.*rebuild it"):
        Index.load(saved)


def test_load_index_checks_expected_embedder(saved: Path) -> None:
    stored = LocalStore(saved).open(expect_embedder="hash:64", expect_dimension=64)
    assert stored.generation == "gen-000001" and stored.segments.n_documents() == 3
    with pytest.raises(IndexMismatchError, match=r"'hash:64', but 'minilm' was requested"):
        LocalStore(saved).open(expect_embedder="minilm")
    with pytest.raises(IndexMismatchError, match=r"dimension 64, the embedder produces 384"):
        LocalStore(saved).open(expect_dimension=384)
