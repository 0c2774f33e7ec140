"""Tests for streaming ingestion: documents staged on disk give the index that staging in
memory gives, identical chunk texts are embedded once per run with counts that add up, and
a failed run leaves nothing behind."""

from __future__ import annotations

import tempfile
from pathlib import Path

import faiss
import numpy as np
import pytest

import proxy_pointer.index as index_module
from proxy_pointer.embeddings import HashEmbedder, RecordingEmbedder
from proxy_pointer.errors import EmbeddingError
from proxy_pointer.index import Index, update_directory
from proxy_pointer.stores import current_generation
from proxy_pointer.stores.disk import DiskSegment
from proxy_pointer.stores.vectors import VectorIndexConfig, build_approximate
from proxy_pointer.stores.writer import NpyRows, SegmentWriter, write_segment

BOILERPLATE = ("## Disclaimer\n\nThis document is provided as is, without warranty of any "
               "kind, and may change without notice to the reader.\n")
QUESTIONS = ["Which ships may enter at high tide?", "When are apple trees pruned?",
             "what warranty is given", "glass plates exposures"]


def _corpus(folder: Path, n: int = 12) -> Path:
    """Papers whose titles repeat every sixth one, so that their disclaimer sections are
    the same chunk text (breadcrumb and body); one repeats a section within itself."""
    topics = ["Harbor", "Orchard", "Observatory", "Glacier", "Quarry", "Lantern"]
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        t = topics[i % len(topics)]
        body = (f"# {t} notes\n\n## Findings\n\nThe {t.lower()} study {i} found "
                + " ".join(f"{t.lower()}{i}word{k}" for k in range(30)) + ".\n\n"
                + BOILERPLATE)
        if i == 0:
            body += "\n## Tides\n\nShips enter at high tide.\n" * 2
        if i == 1:
            body += "\n## Pruning\n\nApple trees are pruned in late winter.\n"
        (folder / f"paper{i:02d}.md").write_text(body)
    return folder


def _contents(idx: Index) -> tuple:
    return (sorted((d, r.sha256, r.title, r.n_chunks) for d, r in idx.reader.documents.items()),
            list(idx.reader.chunks), idx.reader.vectors.tobytes())


def test_disk_staging_gives_the_index_memory_staging_gives(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs")
    mem = Index(embedder=HashEmbedder(64))
    mem.update([docs], workers=0)
    disk = Index(embedder=HashEmbedder(64))
    disk.staging_dir = tmp_path / "scratch"
    disk.staging_dir.mkdir()
    report = disk.update([docs], workers=0, batch_bytes=600)  # many batches
    assert report.added == tuple(sorted(mem.reader.documents))
    assert [type(s).__name__ for s, _ in disk._segments.slots] == ["DiskSegment"]
    assert list(disk.staging_dir.glob(".staging-*"))  # read from there until saved
    assert _contents(disk) == _contents(mem)
    for q in QUESTIONS:
        assert disk.retrieve(q).to_dict() == mem.retrieve(q).to_dict()

    disk.save(tmp_path / "idx")
    assert not list(disk.staging_dir.glob(".staging-*"))  # the store took it in
    assert _contents(disk) == _contents(mem)
    loaded = Index.load(tmp_path / "idx", embedder=HashEmbedder(64))
    assert _contents(loaded) == _contents(mem)
    for q in QUESTIONS:
        assert loaded.retrieve(q).to_dict() == mem.retrieve(q).to_dict()


def test_identical_texts_are_embedded_once_and_the_counts_add_up(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs")
    emb = RecordingEmbedder()
    idx, report = update_directory(tmp_path / "idx", [docs], embedder=emb, workers=0,
                                   batch_bytes=500)
    assert max(emb.counts.values()) == 1  # the shared disclaimer too, across batches
    texts = [c.embed_text for c in idx.reader.chunks]
    assert report.embedded == len(set(texts)) == len(emb.counts)
    assert report.reused == 0
    assert report.deduplicated == len(texts) - len(set(texts)) >= 7
    # every copy of a text got the vector of the one embedded
    by_text: dict[str, np.ndarray] = {}
    for text, vec in zip(texts, idx.reader.vectors, strict=True):
        np.testing.assert_array_equal(by_text.setdefault(text, vec), vec)
    np.testing.assert_array_equal(idx.reader.vectors, HashEmbedder(64).embed_documents(texts))

    # A changed document keeps the vectors of its unchanged chunks.
    paper = docs / "paper03.md"
    paper.write_text(paper.read_text().replace("found", "reported"))
    emb.texts.clear()
    idx, report = update_directory(tmp_path / "idx", [docs], embedder=emb, workers=0)
    assert report.updated == ("paper03.md",)
    staged = idx.reader.documents["paper03.md"].n_chunks
    assert report.embedded == len(emb.counts) == 1  # the findings section
    assert report.reused + report.embedded + report.deduplicated == staged
    assert report.reused >= 1 and "reused" in report.summary()


def test_a_large_in_memory_update_streams_to_a_temporary_segment(tmp_path: Path,
                                                                  monkeypatch) -> None:
    docs = _corpus(tmp_path / "docs")
    mem = Index(embedder=HashEmbedder(64))
    mem.update([docs], workers=0)
    monkeypatch.setattr(index_module, "SPILL_BYTES", 100)
    big = Index(embedder=HashEmbedder(64))
    big.update([docs], workers=0)
    [(seg, _)] = big._segments.slots
    assert isinstance(seg, DiskSegment)
    assert Path(tempfile.gettempdir()) in seg.folder.parents
    assert _contents(big) == _contents(mem)
    folder = seg.folder.parent
    del seg
    big.save(tmp_path / "idx")
    assert not folder.exists()


def test_a_run_that_fails_midway_leaves_the_index_and_the_folder_as_they_were(
        tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs")
    target = tmp_path / "idx"
    update_directory(target, [docs / "paper00.md"], embedder=HashEmbedder(64))
    gen = current_generation(target)
    files = sorted(p.relative_to(target) for p in target.rglob("*"))
    emb = RecordingEmbedder(fail_after_texts=5)  # some batches are staged, then it fails
    with pytest.raises(EmbeddingError, match="backend down"):
        update_directory(target, [docs], embedder=emb, workers=0, batch_bytes=400)
    assert 0 < len(emb.texts)
    assert current_generation(target) == gen
    assert sorted(p.relative_to(target) for p in target.rglob("*")) == files
    assert sorted(Index.load(target, embedder=HashEmbedder(64)).reader.documents) == ["paper00.md"]


def test_a_streamed_segment_builds_the_ivf_the_whole_matrix_builds(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", n=40)
    idx = Index(embedder=HashEmbedder(64))
    idx.update([docs], workers=0)
    parts = [idx._segments.segment_of(d).parts(d) for d in sorted(idx.reader.documents)]
    config = VectorIndexConfig(kind="ivf", nlist=4)
    write_segment(tmp_path / "seg", parts, dimension=64, config=config)
    with NpyRows(tmp_path / "seg" / "vectors.npy") as rows:
        assert rows.shape == idx.reader.vectors.shape
        np.testing.assert_array_equal(rows[:], idx.reader.vectors)
        np.testing.assert_array_equal(rows[[3, 0, 7]], idx.reader.vectors[[3, 0, 7]])
    streamed = faiss.read_index(str(tmp_path / "seg" / "ivf.faiss"))
    whole = build_approximate(idx.reader.vectors, config, "ivf")
    q = idx.reader.vectors[:5]
    for index in (streamed, whole):
        index.nprobe = 4
    assert [a.tolist() for a in streamed.search(q, 5)] == [a.tolist() for a in whole.search(q, 5)]


def test_segment_writer_reads_back_rows_and_cleans_up_when_aborted(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", n=3)
    idx = Index(embedder=HashEmbedder(64))
    idx.update([docs], workers=0)
    parts = [idx._segments.segment_of(d).parts(d) for d in sorted(idx.reader.documents)]
    writer = SegmentWriter(tmp_path / "seg", dimension=64, config=VectorIndexConfig(),
                           sources=tmp_path / "sources")
    starts = [writer.add(p) for p in parts]
    assert starts[0] == 0 and writer.n_rows == len(idx.reader.chunks)
    np.testing.assert_array_equal(writer.vectors([starts[1], 0]),
                                  idx.reader.vectors[[starts[1], 0]])
    assert sorted(p.name for p in (tmp_path / "sources").iterdir()) == sorted(
        p.record.sha256 for p in parts)
    with pytest.raises(ValueError, match="vectors for"):
        writer.add(parts[0].__class__(parts[0].record, parts[0].text, parts[0].chunks,
                                      np.zeros((1, 3), np.float32)))
    writer.abort()
    assert not (tmp_path / "seg").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp-")]


def test_an_update_with_nothing_new_leaves_no_staging_folder(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "docs", n=3)
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    (docs / "paper02.md").unlink()
    idx, report = update_directory(target, [docs], embedder=HashEmbedder(64), prune=True)
    assert report.removed == ("paper02.md",) and not report.added and not report.updated
    assert sorted(idx.reader.documents) == ["paper00.md", "paper01.md"]
    assert not list(target.glob(".staging-*"))
    _, report = update_directory(target, [docs], embedder=HashEmbedder(64))
    assert report.unchanged == ("paper00.md", "paper01.md")
    assert not list(target.glob(".staging-*"))
