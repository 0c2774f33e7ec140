"""Tests for proxy_pointer.index: build/save/load, incremental updates, snapshots, errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from proxy_pointer.documents import discover
from proxy_pointer.embeddings import CachedEmbedder, HashEmbedder, RecordingEmbedder
from proxy_pointer.errors import (
    ConfigError,
    DocumentError,
    EmbeddingError,
    IndexCorruptError,
    IndexLockedError,
    IndexMismatchError,
)
from proxy_pointer.index import Index, update_directory
from proxy_pointer.parse.chunking import ChunkConfig, chunk_tree
from proxy_pointer.parse.tree import build_tree
from proxy_pointer.stores import current_generation
from proxy_pointer.stores.vectors import VectorIndexConfig

FIXTURES = Path(__file__).parent / "fixtures" / "index" / "docs"
REPO = Path(__file__).resolve().parent.parent
QUESTIONS = [
    "When are apple trees pruned?",
    "Which ships may enter at high tide?",
    "How are exposures stored in the archive?",
    "Where do ferries moor?",
]


def _lines(text: str, section) -> str:
    """The 1-based inclusive line range of ``section`` cut from ``text``."""
    return "".join(text.splitlines(keepends=True)[section.start_line - 1:section.end_line])


def _edit_harbor(docs: Path) -> str:
    """Rewrite the Mooring section of harbor.md; returns the new text."""
    path = docs / "harbor.md"
    text = path.read_text()
    old = "Ferries moor at the north quay with four lines"
    assert old in text
    new = text.replace(old, "Ferries now moor at the south quay beside the lighthouse with six "
                            "lines,\nand an extra breast line in storms")
    path.write_text(new)
    return new


def _retrieval_key(r):
    return [(s.ref, s.start_line, s.end_line, s.score, s.text) for s in r.sections]


# --- round trip --------------------------------------------------------------------------
def test_round_trip_gives_identical_results(docs: Path, tmp_path: Path) -> None:
    idx = Index.build([docs], embedder=HashEmbedder(64))
    assert sorted(idx.reader.documents) == ["harbor.md", "observatory.md", "orchard.md"]
    gen = idx.save(tmp_path / "idx")
    assert (tmp_path / "idx" / "CURRENT").read_text().strip() == gen

    loaded = Index.load(tmp_path / "idx")  # no embedder: the manifest names it
    assert isinstance(loaded.embedder, HashEmbedder)
    assert loaded.embedder.model_id == "hash:64"
    assert loaded.reader.documents == idx.reader.documents
    assert loaded.reader.chunks == idx.reader.chunks
    np.testing.assert_array_equal(loaded.reader.vectors, idx.reader.vectors)
    for q in QUESTIONS:
        for opts in ({"budget": 300}, {"budget": 2000, "k": 2},
                     {"budget": 500, "doc_ids": ["harbor.md", "orchard.md"]}):
            a, b = idx.retrieve(q, **opts), loaded.retrieve(q, **opts)
            assert a.sections == b.sections
            assert a.sections, (q, opts)
    r = loaded.retrieve("ferries moor quay lines", budget=500, k=1, doc_ids=["harbor.md"])
    assert {s.doc_id for s in r.sections} == {"harbor.md"}
    assert r.sections[0].title == "Mooring"


def test_retrieved_sections_slice_the_source(docs: Path) -> None:
    idx = Index.build([docs], embedder=HashEmbedder(64))
    for q in QUESTIONS:
        for s in idx.retrieve(q, budget=2000).sections:
            assert s.text == _lines((docs / s.doc_id).read_text(), s)


def test_load_with_explicit_embedder_and_cache_wrapper(docs: Path, tmp_path: Path) -> None:
    Index.build([docs], embedder=HashEmbedder(64)).save(tmp_path / "idx")
    emb = CachedEmbedder(HashEmbedder(64), tmp_path / "cache")
    loaded = Index.load(tmp_path / "idx", embedder=emb)
    assert loaded.embedder is emb
    assert loaded.retrieve(QUESTIONS[0]).sections


def test_text_documents_are_not_read_as_markdown(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "notes.txt").write_text("# not a heading\n" + "plain words here\n" * 40)
    idx = Index.build([tmp_path / "d"], embedder=HashEmbedder(32))
    assert idx.reader.documents["notes.txt"].kind == "text"
    # Topical segments, never a heading: the "#" line is text like any other.
    assert all(n.start == n.body_start for n in idx.reader.tree("notes.txt").nodes)
    s = idx.retrieve("plain words", budget=5000).sections[0]
    assert s.text.startswith("# not a heading\n")
    windows = Index.build([tmp_path / "d"], embedder=HashEmbedder(32),
                          chunk_config=ChunkConfig(headerless="windows"))
    assert all(c.node_id is None for c in windows.reader.chunks)
    assert windows.retrieve("plain words", budget=5000).sections[0].ref.startswith("notes.txt#L")


# --- incremental ---------------------------------------------------------------------------
def test_incremental_update_embeds_only_changed_chunks(docs: Path, tmp_path: Path) -> None:
    cache, target = tmp_path / "cache", tmp_path / "idx"
    emb = CachedEmbedder(HashEmbedder(64), cache)
    idx, rep = update_directory(target, [docs], embedder=emb)
    assert rep.added == ("harbor.md", "observatory.md", "orchard.md")
    assert rep.embedded == emb.misses == len(idx.reader.chunks) == rep.chunks
    old_harbor = {c.embed_text for c in idx.reader.chunks if c.doc_id == "harbor.md"}
    gen1 = current_generation(target)

    new_text = _edit_harbor(docs)
    new_chunks = chunk_tree(build_tree(new_text, doc_id="harbor.md"), idx.chunk_config)
    changed = [c for c in new_chunks if c.embed_text not in old_harbor]
    assert 0 < len(changed) < len(new_chunks)

    emb2 = CachedEmbedder(HashEmbedder(64), cache)
    _, rep2 = update_directory(target, [docs], embedder=emb2)
    assert rep2.added == () and rep2.removed == ()
    assert rep2.updated == ("harbor.md",)
    assert rep2.unchanged == ("observatory.md", "orchard.md")
    assert rep2.embedded == emb2.misses == len(changed)
    assert emb2.hits == 0  # unchanged chunks reuse their stored vectors, never ask
    assert set(rep2.timings) >= {"tree", "chunking", "embedding", "index", "write"}
    assert current_generation(target) != gen1

    # The updated document's sections slice correctly from the new stored copy.
    reloaded = Index.load(target)
    assert reloaded.reader.text("harbor.md") == new_text
    r = reloaded.retrieve("ferries south quay lighthouse breast line", budget=1000, k=1,
                          doc_ids=["harbor.md"])
    top = r.sections[0]
    assert top.title == "Mooring"
    assert "lighthouse" in top.text
    assert top.text == _lines(new_text, top)
    # Vectors of the reused chunks equal a fresh embedding of their text.
    fresh = HashEmbedder(64).embed_documents([c.embed_text for c in reloaded.reader.chunks])
    np.testing.assert_allclose(reloaded.reader.vectors, fresh, atol=1e-6)


def test_unchanged_update_writes_nothing(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    gen = current_generation(target)
    _, rep = update_directory(target, [docs], embedder=HashEmbedder(64))
    assert rep.unchanged == ("harbor.md", "observatory.md", "orchard.md")
    assert rep.embedded == 0 and "write" not in rep.timings
    assert current_generation(target) == gen


def test_prune_removes_deleted_files_only_when_asked(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    (docs / "observatory.md").unlink()
    idx, rep = update_directory(target, [docs], embedder=HashEmbedder(64))
    assert rep.removed == () and "observatory.md" in idx.reader.documents
    idx, rep = update_directory(target, [docs], embedder=HashEmbedder(64), prune=True)
    assert rep.removed == ("observatory.md",)
    loaded = Index.load(target)
    assert sorted(loaded.reader.documents) == ["harbor.md", "orchard.md"]
    assert all(c.doc_id != "observatory.md" for c in loaded.reader.chunks)
    assert len(loaded.reader.vectors) == len(loaded.reader.chunks)
    assert not loaded.retrieve("telescope mirror", doc_ids=["observatory.md"]).sections


def test_add_text_and_remove(tmp_path: Path) -> None:
    idx = Index(embedder=HashEmbedder(64))
    text = (FIXTURES / "orchard.md").read_text()
    assert idx.add_text("mem/orchard.md", text) is True
    assert idx.add_text("mem/orchard.md", text) is False  # unchanged
    n = len(idx.reader.chunks)
    assert idx.add_text("mem/orchard.md", text + "\n## Storage\n\n" + "Cellar crates. " * 12)
    assert len(idx.reader.chunks) == n + 1
    assert idx.retrieve("cellar crates", budget=500, k=1).sections[0].title == "Storage"
    assert idx.add_text("notes.txt", "loose notes about bread baking\n" * 5)
    assert idx.reader.documents["notes.txt"].kind == "text"
    assert idx.remove(["mem/orchard.md", "absent.md"]) == ["mem/orchard.md"]
    assert list(idx.reader.documents) == ["notes.txt"]
    assert len(idx.reader.rows_for(["mem/orchard.md"])) == 0
    assert len(idx.reader.vectors) == len(idx.reader.chunks)
    idx.save(tmp_path / "idx")
    assert list(Index.load(tmp_path / "idx").reader.documents) == ["notes.txt"]


_WORDS = ["apple", "tide", "quay", "mirror", "archive", "prune", "crane", "dome", "cellar"]
_section = st.lists(st.sampled_from(_WORDS), min_size=20, max_size=40).map(" ".join)
_doc = st.lists(_section, min_size=1, max_size=3).map(
    lambda secs: "".join(f"## Part {i}\n\n{s}\n\n" for i, s in enumerate(secs)))
_op = st.tuples(st.sampled_from(["a.md", "b.md", "c.md"]), st.one_of(st.none(), _doc))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, min_size=1, max_size=8))
def test_any_update_sequence_keeps_vectors_aligned(ops) -> None:
    """Invariant: after any adds/edits/removals, row i holds the vector of chunk i's text."""
    emb = HashEmbedder(32)
    idx = Index(embedder=emb)
    expected: dict[str, str] = {}
    for doc_id, text in ops:
        if text is None:
            idx.remove([doc_id])
            expected.pop(doc_id, None)
        else:
            idx.add_text(doc_id, text)
            expected[doc_id] = text
    assert {d: idx.reader.text(d) for d in idx.reader.documents} == expected
    assert len(idx.reader.vectors) == len(idx.reader.chunks)
    assert {c.doc_id for c in idx.reader.chunks} <= set(expected)
    if idx.reader.chunks:
        fresh = emb.embed_documents([c.embed_text for c in idx.reader.chunks])
        np.testing.assert_allclose(idx.reader.vectors, fresh, atol=1e-6)
    for doc_id, text in expected.items():
        want = chunk_tree(build_tree(text, doc_id=doc_id), idx.chunk_config)
        assert [c for c in idx.reader.chunks if c.doc_id == doc_id] == want


# --- snapshot ------------------------------------------------------------------------------
def test_stored_copy_is_used_at_query_time(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    original = (docs / "orchard.md").read_text()
    # Edit the file on disk without re-indexing: lines shift, the section text changes.
    (docs / "orchard.md").write_text("# Moved\n\n" * 10 + original.replace("dormant", "asleep"))
    idx = Index.load(target)
    assert idx.reader.text("orchard.md") == original
    s = idx.retrieve("pruning late winter dormant trees", budget=1000, k=1,
                     doc_ids=["orchard.md"]).sections[0]
    assert s.title == "Pruning"
    assert "dormant" in s.text
    assert s.text == _lines(original, s)
    assert s.start_line == 11  # 1-based line of "## Pruning" in the indexed copy


# --- failures leave everything unchanged ------------------------------------------------------
def failing_embedder() -> RecordingEmbedder:
    """Same ids as HashEmbedder(64), but embedding documents fails."""
    return RecordingEmbedder(64, fail_after=0, message="backend down (test)")


def test_embedding_error_leaves_memory_and_disk_unchanged(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    gen = current_generation(target)
    files = sorted(p.relative_to(target) for p in target.rglob("*"))
    _edit_harbor(docs)
    (docs / "new.md").write_text("# New\n\n" + "A brand new document about lanterns. " * 5)

    idx = Index.load(target, embedder=failing_embedder())
    before = (dict(idx.reader.documents), idx.reader.chunks, idx.reader.vectors.copy(),
              idx.reader.text("harbor.md"))
    with pytest.raises(EmbeddingError, match="backend down"):
        idx.update([docs], prune=True)
    assert (dict(idx.reader.documents), idx.reader.chunks) == before[:2]
    np.testing.assert_array_equal(idx.reader.vectors, before[2])
    assert idx.reader.text("harbor.md") == before[3]
    assert idx.retrieve("ferries moor").sections  # still answers from the old contents

    with pytest.raises(EmbeddingError):
        update_directory(target, [docs], embedder=failing_embedder())
    assert current_generation(target) == gen
    assert sorted(p.relative_to(target) for p in target.rglob("*")) == files


def test_wrong_vector_shape_from_embedder_is_an_error(tmp_path: Path) -> None:
    class Short(HashEmbedder):
        def embed_documents(self, texts):
            return super().embed_documents(texts)[:, :10]

    idx = Index(embedder=Short(64))
    with pytest.raises(ConfigError, match="shape"):
        idx.add_text("a.md", (FIXTURES / "harbor.md").read_text())
    assert len(idx) == 0


# --- two writers ----------------------------------------------------------------------------
_HOLD_LOCK = """
import sys
from proxy_pointer.stores import write_lock
with write_lock(sys.argv[1]):
    print("LOCKED", flush=True)
    sys.stdin.readline()
"""


def _lock_holder(directory: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(directory)], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "LOCKED"
    return proc


def test_second_writer_fails_fast_or_waits(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    _edit_harbor(docs)
    holder = _lock_holder(target)
    try:
        with pytest.raises(IndexLockedError, match="another process is writing") as e:
            update_directory(target, [docs], embedder=HashEmbedder(64), lock_timeout=0)
        assert str(target) in str(e.value)
        with pytest.raises(IndexLockedError):
            Index.load(target).save(target, lock_timeout=0.2)
        assert Index.load(target).retrieve("ferries").sections  # readers never wait

        def release() -> None:
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()

        threading.Timer(0.5, release).start()
        _, rep = update_directory(target, [docs], embedder=HashEmbedder(64), lock_timeout=20)
        assert rep.updated == ("harbor.md",)
    finally:
        holder.kill()
        holder.wait()
    assert "south quay" in Index.load(target).reader.text("harbor.md")


# --- bad input ------------------------------------------------------------------------------
def test_mismatched_embedder_is_refused(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    with pytest.raises(IndexMismatchError, match=r"'hash:64'.*'hash:32'"):
        Index.load(target, embedder=HashEmbedder(32))
    with pytest.raises(IndexMismatchError, match=r"'hash:64'.*'hash:32'"):
        update_directory(target, [docs], embedder=HashEmbedder(32))

    other = RecordingEmbedder(64, model_id="other-model:64")
    with pytest.raises(IndexMismatchError, match=r"built with embedder 'hash:64'.*'other-model"):
        Index.load(target, embedder=other)

    same_id_other_size = RecordingEmbedder(32, model_id="hash:64")
    with pytest.raises(IndexMismatchError, match="dimension 64, the embedder produces 32"):
        Index.load(target, embedder=same_id_other_size)


def test_other_chunking_settings_are_refused(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    with pytest.raises(ConfigError, match="other chunking settings"):
        update_directory(target, [docs], embedder=HashEmbedder(64),
                         chunk_config=ChunkConfig.chars(2000, 200))


def test_missing_path_and_duplicate_ids(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(DocumentError, match="nope: no such file") as e:
        Index.build([FIXTURES, missing], embedder=HashEmbedder(32))
    assert e.value.path == str(missing)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    shutil.copy(FIXTURES / "harbor.md", tmp_path / "a" / "harbor.md")
    (tmp_path / "b" / "harbor.md").write_text("# Other harbor\n")
    with pytest.raises(DocumentError, match=r"duplicate doc id 'harbor\.md'"):
        discover([tmp_path / "a", tmp_path / "b"])
    # Under a common root the two files get distinct ids.
    ids = [s.doc_id for s in discover([tmp_path / "a", tmp_path / "b"], root=tmp_path)]
    assert ids == ["a/harbor.md", "b/harbor.md"]


def test_unreadable_files_are_skipped_and_reported(docs: Path) -> None:
    (docs / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve text\n".encode("latin-1"))
    (docs / "binary.md").write_bytes(b"# Bin\n\x00\x01\x02 data\n")
    idx = Index(embedder=HashEmbedder(32))
    rep = idx.update([docs])
    assert rep.added == ("harbor.md", "observatory.md", "orchard.md")
    assert len(rep.skipped) == 2
    binary, latin = sorted(rep.skipped)
    assert "binary.md" in binary and "NUL byte" in binary
    assert "latin1.md" in latin and "not valid utf-8" in latin
    # A skipped file is still present: prune does not remove its earlier version.
    idx.add_text("latin1.md", "# Old version\n")
    assert "latin1.md" not in idx.update([docs], prune=True).removed


def test_include_exclude_and_hidden(docs: Path) -> None:
    (docs / ".hidden").mkdir()
    (docs / ".hidden" / "x.md").write_text("# Hidden\n")
    (docs / "sub").mkdir()
    (docs / "sub" / "deep.markdown").write_text("# Deep\n")
    (docs / "skip.rst").write_text("not included\n")
    ids = [s.doc_id for s in discover([docs])]
    assert ids == ["harbor.md", "observatory.md", "orchard.md", "sub/deep.markdown"]
    assert [s.doc_id for s in discover([docs], exclude=["o*.md"])] == [
        "harbor.md", "sub/deep.markdown"]
    assert [s.doc_id for s in discover([docs], include=["*.rst"])] == ["skip.rst"]
    assert [s.doc_id for s in discover([docs / "harbor.md"])] == ["harbor.md"]


def test_symlinked_file_is_indexed_under_its_own_name(docs: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "target.md"
    outside.parent.mkdir()
    shutil.copy(FIXTURES / "harbor.md", outside)
    (docs / "linked.md").symlink_to(outside)
    ids = [s.doc_id for s in discover([docs])]
    assert "linked.md" in ids
    assert [s.doc_id for s in discover([docs / "linked.md"])] == ["linked.md"]


def _segment(target: Path) -> Path:
    """The one segment folder the committed generation of ``target`` names."""
    manifest = json.loads((current_generation(target) / "manifest.json").read_text())
    [seg] = manifest["segments"]
    return target / "segments" / seg["name"]


def test_corrupt_chunk_records_are_reported(docs: Path, tmp_path: Path) -> None:
    import sqlite3

    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    meta = _segment(target) / "meta.sqlite"
    size = meta.stat().st_size
    con = sqlite3.connect(meta)
    con.execute("DELETE FROM chunks WHERE row = (SELECT max(row) FROM chunks)")
    con.commit()
    con.close()
    meta.write_bytes(meta.read_bytes().ljust(size, b"\0")[:size])  # same size, fewer rows
    with pytest.raises(IndexCorruptError, match=r"meta\.sqlite: holds \d+ chunk rows"):
        Index.load(target)
    meta.write_bytes(b"garbage!" * (size // 8) + b"x" * (size % 8))
    with pytest.raises(IndexCorruptError, match=r"meta\.sqlite: not a readable index database"):
        Index.load(target)


# --- approximate index ----------------------------------------------------------------------
def test_hnsw_round_trip_matches_flat_top_hit(docs: Path, tmp_path: Path) -> None:
    flat = Index.build([docs], embedder=HashEmbedder(64))
    hnsw = Index.build([docs], embedder=HashEmbedder(64),
                       vector_config=VectorIndexConfig(kind="hnsw", hnsw_m=8))
    hnsw.save(tmp_path / "idx")
    seg = _segment(tmp_path / "idx")
    assert (seg / "hnsw.faiss").stat().st_size > 0
    loaded = Index.load(tmp_path / "idx")
    assert loaded.vector_config == VectorIndexConfig(kind="hnsw", hnsw_m=8)
    for q in QUESTIONS:
        a, b = flat.retrieve(q, k=1), loaded.retrieve(q, k=1)
        assert a.sections[0].ref == b.sections[0].ref
        assert a.sections[0].score == pytest.approx(b.sections[0].score, abs=1e-5)

    size = (seg / "hnsw.faiss").stat().st_size
    (seg / "hnsw.faiss").write_bytes(b"garbage" * 10)
    with pytest.raises(IndexCorruptError, match=r"hnsw\.faiss: \d+ bytes, \d+ were written"):
        Index.load(tmp_path / "idx")
    (seg / "hnsw.faiss").write_bytes(b"g" * size)  # same size: caught when first searched
    with pytest.raises(IndexCorruptError, match=r"hnsw\.faiss: unreadable"):
        Index.load(tmp_path / "idx").retrieve(QUESTIONS[0])


def test_update_directory_switches_vector_index_kind(docs: Path, tmp_path: Path) -> None:
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    assert not (_segment(target) / "hnsw.faiss").exists()
    emb = CachedEmbedder(HashEmbedder(64), tmp_path / "cache")
    idx, rep = update_directory(target, [docs], embedder=emb,
                                vector_config=VectorIndexConfig(kind="hnsw"))
    assert rep.embedded == 0 and emb.misses == 0
    assert (_segment(target) / "hnsw.faiss").exists()
    # None keeps what the index has.
    idx, _ = update_directory(target, [docs], embedder=HashEmbedder(64))
    assert idx.vector_config.kind == "hnsw"


def test_index_of_another_chunker_version_is_rechunked_on_update(saved: Path,
                                                                 docs: Path) -> None:
    import json

    from proxy_pointer.parse.chunking import CHUNKER_VERSION

    manifest_path = current_generation(saved) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["chunking"]["algorithm"] = CHUNKER_VERSION - 1
    manifest_path.write_text(json.dumps(manifest))
    old = Index.load(saved)
    assert old.manifest().chunker_version == CHUNKER_VERSION - 1
    assert old.retrieve("Where do ferries moor?").sections  # still answers queries

    _, report = update_directory(saved, [docs], embedder=HashEmbedder(64))
    # Same files, but every document is re-chunked; identical chunk texts keep their vectors.
    assert report.updated == ("harbor.md", "observatory.md", "orchard.md")
    assert report.embedded == 0 and not report.unchanged
    reloaded = Index.load(saved)
    assert reloaded.manifest().chunker_version == CHUNKER_VERSION
    assert reloaded.reader.chunks == old.reader.chunks
    _, again = update_directory(saved, [docs], embedder=HashEmbedder(64))
    assert again.unchanged == report.updated and again.embedded == 0


def test_llm_noise_option_reaches_the_chunker() -> None:
    import json

    from proxy_pointer.llm import ScriptedLLM
    from proxy_pointer.parse.noise import NoiseConfig

    text = ("# Report\n\n## Methods\n\n" + "We sampled the river weekly. " * 8
            + "\n\n## Boilerplate\n\n" + "This page intentionally describes nothing. " * 8 + "\n")

    target = next(n.node_id for n in build_tree(text, doc_id="r.md").nodes
                  if n.title == "Boilerplate")

    cfg = ChunkConfig(noise=NoiseConfig(use_llm=True))
    with pytest.raises(ConfigError, match="index_llm="):
        Index(embedder=HashEmbedder(32), chunk_config=cfg).add_text("r.md", text)
    llm = ScriptedLLM(json.dumps({"noise": [{"id": target, "category": "foreword"}]}))
    idx = Index(embedder=HashEmbedder(32), chunk_config=cfg, index_llm=llm)
    idx.add_text("r.md", text)
    assert len(llm.calls) == 1
    assert {c.title for c in idx.reader.chunks} == {"Methods"}


def test_saved_updates_across_segments_match_a_fresh_build(docs: Path, tmp_path: Path) -> None:
    """Updates, removals and re-adds saved as segments (with IVF search) read back exactly
    like an index built at once from the same files; replaced chunks are never found."""
    target, ivf = tmp_path / "idx", VectorIndexConfig(kind="ivf", nprobe=64)
    emb = HashEmbedder(64)
    update_directory(target, [docs], embedder=emb, vector_config=ivf)
    harbor = (docs / "harbor.md").read_text()
    steps = [
        lambda: (docs / "harbor.md").write_text(harbor.replace("Tides", "Tide tables")),
        lambda: (docs / "orchard.md").unlink(),
        lambda: (docs / "new.md").write_text("# Lanterns\n\n" + "Paper lanterns drift. " * 9),
        lambda: (docs / "harbor.md").write_text(harbor),
    ]
    for step in steps:
        step()
        update_directory(target, [docs], embedder=emb, prune=True)
        loaded = Index.load(target, embedder=emb)
        fresh = Index.build([docs], embedder=emb)
        key = lambda c: c.chunk_id  # noqa: E731
        assert sorted(loaded.reader.chunks, key=key) == sorted(fresh.reader.chunks, key=key)
        assert dict(loaded.reader.documents) == dict(fresh.reader.documents)
        by_id = {c.chunk_id: i for i, c in enumerate(fresh.reader.chunks)}
        order = [by_id[c.chunk_id] for c in loaded.reader.chunks]
        np.testing.assert_allclose(loaded.reader.vectors, fresh.reader.vectors[order], atol=1e-6)
        for c in loaded.reader.chunks.at(range(len(loaded.reader.chunks))):
            assert c.text == loaded.reader.text(c.doc_id)[c.start_char:c.end_char]
        for i in range(0, len(loaded.reader.chunks), 3):
            q = loaded.reader.vectors_of([i])[0]
            _, rows = loaded.reader.dense_search(q, 5)
            assert i in rows.tolist() and rows.max() < len(loaded.reader.chunks)
            exact = loaded.reader.dense_search(q, 5, exact=True)[1]
            assert exact[0] == i or loaded.reader.vectors_of([exact[0]])[0] @ q >= 1 - 1e-5
    manifest = json.loads((current_generation(target) / "manifest.json").read_text())
    assert len(manifest["segments"]) >= 2


def test_path_prefix_and_label_filters_on_a_saved_index(saved: Path, monkeypatch) -> None:
    from proxy_pointer.index import ChunkRows

    idx = Index.load(saved)
    memory = Index.build([saved.parent / "docs"], embedder=HashEmbedder(64))

    def no_scan(self):
        raise AssertionError("a filter iterated over every chunk row")

    monkeypatch.setattr(ChunkRows, "__iter__", no_scan)
    assert idx.retrieve("What happens in section 2 of the harbor?").sections
    for options in ({"path_prefix": ["Harbor Operations"]},
                    {"path_prefix": ["Orchard Handbook", "Pruning"]},
                    {"doc_ids": ["harbor.md"], "path_prefix": ["harbor operations", "Tides"]}):
        a = idx.retrieve("When do ships enter?", **options)
        b = memory.retrieve("When do ships enter?", **options)
        assert a.sections and [s.ref for s in a.sections] == [s.ref for s in b.sections]
        want = tuple(t.casefold() for t in options["path_prefix"])
        assert all(tuple(t.casefold() for t in s.path[:len(want)]) == want for s in a.sections)
    assert idx.retrieve("anything", path_prefix=["No such heading"]).sections == ()
