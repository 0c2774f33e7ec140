"""Tests for the local store: generations, atomic commit, crash safety, locking, errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import (
    ConfigError,
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
)
from proxy_pointer.index import Index, update_directory
from proxy_pointer.stores import (
    SCHEMA_VERSION,
    LocalStore,
    current_generation,
    index_size_bytes,
    write_lock,
)
from proxy_pointer.vectors import VectorIndex, VectorIndexConfig

REPO = Path(__file__).resolve().parent.parent


def _gen(target: Path) -> Path:
    gen = current_generation(target)
    assert gen is not None
    return gen


# --- generations ------------------------------------------------------------------------
def test_layout_and_generations(saved: Path, docs: Path) -> None:
    gen1 = _gen(saved)
    assert gen1.name == "gen-000001"
    assert sorted(p.name for p in gen1.iterdir()) == [
        "bm25", "chunks.jsonl", "documents.jsonl", "manifest.json", "sources", "vectors.npy"]
    manifest = json.loads((gen1 / "manifest.json").read_text())
    assert manifest["schema_version"] == SCHEMA_VERSION
    assert manifest["embedder"] == {"model_id": "hash:64", "dimension": 64}
    assert manifest["n_documents"] == 3
    assert manifest["n_chunks"] == len((gen1 / "chunks.jsonl").read_text().splitlines())
    # Pickle-free: the vectors load with allow_pickle=False as plain float32.
    vectors = np.load(gen1 / "vectors.npy", allow_pickle=False)
    assert vectors.dtype == np.float32 and vectors.shape == (manifest["n_chunks"], 64)
    assert index_size_bytes(saved) == sum(
        p.stat().st_size for p in gen1.rglob("*") if p.is_file())

    # Each save is a new generation; the previous one is kept, older ones collected.
    stat_before = {p.name: p.stat().st_ino for p in (gen1 / "sources").iterdir()}
    (docs / "harbor.md").write_text((docs / "harbor.md").read_text() + "\nMore.\n")
    update_directory(saved, [docs], embedder=HashEmbedder(64))
    gen2 = _gen(saved)
    assert gen2.name == "gen-000002" and gen1.is_dir()
    # Unchanged source copies are hard links into the previous generation, not copies.
    same = {p.name: p.stat().st_ino for p in (gen2 / "sources").iterdir()}
    assert len(set(same.items()) & set(stat_before.items())) == 2
    (docs / "harbor.md").write_text((docs / "harbor.md").read_text() + "\nAgain.\n")
    update_directory(saved, [docs], embedder=HashEmbedder(64))
    assert sorted(p.name for p in saved.glob("gen-*")) == ["gen-000002", "gen-000003"]
    assert Index.load(saved).text("harbor.md").endswith("Again.\n")


def test_empty_index_round_trips(tmp_path: Path) -> None:
    Index(embedder=HashEmbedder(16)).save(tmp_path / "idx")
    idx = Index.load(tmp_path / "idx")
    assert len(idx) == 0 and idx.vectors.shape == (0, 16)
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
    assert loaded.text("odd name #1.md") == text
    assert loaded.chunks == idx.chunks


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
import proxy_pointer.stores.local as store
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import update_directory

stage, target, docs = sys.argv[1:4]
real_write, real_replace = store._write_file, os.replace

def pause():
    print("WRITING", flush=True)
    time.sleep(120)

def write_file(path, data):
    if stage == "partial" and path.name == "chunks.jsonl":
        real_write(path, data[: len(data) // 2])  # half a file on disk when we die
        pause()
    real_write(path, data)

def replace(src, dst):
    if stage == "commit" and os.path.basename(dst) == "CURRENT":
        pause()  # the new generation is complete and renamed, CURRENT not swapped yet
    real_replace(src, dst)

store._write_file = write_file
os.replace = replace
update_directory(target, [docs], embedder=HashEmbedder(64), prune=True)
print("DONE", flush=True)
"""


@pytest.mark.parametrize("stage", ["partial", "commit"])
def test_killed_writer_leaves_previous_generation(stage: str, saved: Path, docs: Path) -> None:
    before = Index.load(saved)
    old_harbor = before.text("harbor.md")
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

    leftovers = sorted(p.name for p in saved.iterdir() if p.name.startswith((".tmp-", "gen-")))
    if stage == "partial":
        assert any(n.startswith(".tmp-gen-000002") for n in leftovers)
    else:
        assert "gen-000002" in leftovers
    assert _gen(saved).name == "gen-000001"

    after = Index.load(saved)
    assert sorted(after.documents) == ["harbor.md", "observatory.md", "orchard.md"]
    assert after.text("harbor.md") == old_harbor
    assert after.chunks == before.chunks
    np.testing.assert_array_equal(after.vectors, before.vectors)

    # The next writer succeeds and collects the dead writer's leftovers.
    _, rep = update_directory(saved, [docs], embedder=HashEmbedder(64), prune=True)
    assert rep.added == ("new.md",) and rep.updated == ("harbor.md",)
    assert rep.removed == ("orchard.md",)
    names = sorted(p.name for p in saved.iterdir() if p.name.startswith((".tmp-", "gen-")))
    expected = "gen-000003" if stage == "commit" else "gen-000002"
    assert names == ["gen-000001", expected]
    assert _gen(saved).name == expected
    assert sorted(Index.load(saved).documents) == ["harbor.md", "new.md", "observatory.md"]


# --- bad input ---------------------------------------------------------------------------
def test_truncated_vectors(saved: Path) -> None:
    path = _gen(saved) / "vectors.npy"
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy: unreadable"):
        Index.load(saved)
    path.write_bytes(b"")
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy"):
        Index.load(saved)
    path.write_bytes(data[:40])  # inside the header
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy"):
        Index.load(saved)
    path.unlink()
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy: missing"):
        Index.load(saved)


def test_vectors_that_do_not_match_chunks(saved: Path) -> None:
    gen = _gen(saved)
    vectors = np.load(gen / "vectors.npy")
    np.save(gen / "vectors.npy", vectors[:-1], allow_pickle=False)
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy: shape .* does not match"):
        Index.load(saved)
    np.save(gen / "vectors.npy", vectors[:, :32], allow_pickle=False)
    with pytest.raises(IndexCorruptError, match=r"dimension 32, manifest says 64"):
        Index.load(saved)
    np.save(gen / "vectors.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(IndexCorruptError, match=r"vectors\.npy"):
        Index.load(saved)  # never unpickles


def test_broken_chunks_line(saved: Path) -> None:
    path = _gen(saved) / "chunks.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    lines[1] = lines[1][: len(lines[1]) // 2] + "\n"
    path.write_text("".join(lines))
    with pytest.raises(IndexCorruptError, match=r"chunks\.jsonl: line 2: not valid JSON"):
        Index.load(saved)
    path.write_bytes(b"\xff\xfe\n")
    with pytest.raises(IndexCorruptError, match=r"chunks\.jsonl: not UTF-8"):
        Index.load(saved)


def test_missing_or_broken_files(saved: Path) -> None:
    gen = _gen(saved)
    (gen / "documents.jsonl").rename(gen / "documents.bak")
    with pytest.raises(IndexCorruptError, match=r"documents\.jsonl: missing"):
        Index.load(saved)
    (gen / "documents.bak").rename(gen / "documents.jsonl")

    source = next((gen / "sources").iterdir())
    data = source.read_bytes()
    source.write_bytes(b"\xff" + data)
    with pytest.raises(IndexCorruptError, match=r"stored copy of .* is damaged"):
        Index.load(saved)
    source.unlink()
    with pytest.raises(IndexCorruptError, match=r"stored copy of .* is missing"):
        Index.load(saved)
    source.write_bytes(data)

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
    with pytest.raises(IndexCorruptError, match=r"no index here \(no CURRENT file\)"):
        Index.load(saved)
    with pytest.raises(IndexCorruptError, match=r"no index here \(not a directory\)"):
        Index.load(tmp_path / "never-created")


def test_unknown_schema_version(saved: Path) -> None:
    path = _gen(saved) / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["schema_version"] = 99
    path.write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match=r"schema version 99, this library reads 1"):
        Index.load(saved)


def test_load_index_checks_expected_embedder(saved: Path) -> None:
    stored = LocalStore(saved).read(expect_embedder="hash:64", expect_dimension=64)
    assert stored.generation == "gen-000001" and len(stored.documents) == 3
    with pytest.raises(IndexMismatchError, match=r"'hash:64', but 'minilm' was requested"):
        LocalStore(saved).read(expect_embedder="minilm")
    with pytest.raises(IndexMismatchError, match=r"dimension 64, the embedder produces 384"):
        LocalStore(saved).read(expect_dimension=384)


# --- vector index ------------------------------------------------------------------------
def _unit(n: int, d: int, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_flat_search_and_row_filter() -> None:
    vecs = _unit(50, 16)
    vi = VectorIndex(vecs)
    scores, rows = vi.search(vecs[7], 5)
    assert rows[0] == 7 and scores[0] == pytest.approx(1.0, abs=1e-5)
    assert list(scores) == sorted(scores, reverse=True)
    want = np.argsort(-(vecs @ vecs[7]), kind="stable")[:5]
    assert list(rows) == list(want)
    subset = np.array([3, 9, 20, 41])
    s2, r2 = vi.search(vecs[7], 10, rows=subset)
    assert sorted(r2) == sorted(subset) and list(s2) == sorted(s2, reverse=True)
    assert len(vi.search(vecs[0], 5, rows=np.array([], np.int64))[1]) == 0
    assert len(vi.search(vecs[0], 500)[1]) == 50


def test_hnsw_recall_on_random_vectors() -> None:
    vecs = _unit(500, 32, seed=1)
    flat = VectorIndex(vecs)
    hnsw = VectorIndex(vecs, VectorIndexConfig(kind="hnsw"))
    queries = _unit(20, 32, seed=2)
    hits = 0
    for q in queries:
        hits += len(set(flat.search(q, 10)[1]) & set(hnsw.search(q, 10)[1]))
    assert hits / 200 >= 0.9
    blob = hnsw.faiss_bytes()
    assert blob and flat.faiss_bytes() is None


def test_vector_index_config_validation() -> None:
    with pytest.raises(ConfigError, match="'flat' or 'hnsw'"):
        VectorIndexConfig(kind="ivf")
    with pytest.raises(ConfigError, match="hnsw_m"):
        VectorIndexConfig(kind="hnsw", hnsw_m=1)
