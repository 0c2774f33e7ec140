"""The Milvus store (against Milvus Lite), and the behaviour it shares with the local store.

Tests parametrized with ``kind`` run the same assertions on a local directory and on a
Milvus Lite file: what an index holds and answers must not depend on where it lives.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pymilvus")
pytest.importorskip("milvus_lite")

from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import (
    ConfigError,
    IndexLockedError,
    IndexMismatchError,
    IndexNotFoundError,
    StoreError,
)
from proxy_pointer.index import Index, update_directory
from proxy_pointer.search.retrieval import RetrievalConfig
from proxy_pointer.stores import open_store
from proxy_pointer.stores.milvus import MilvusStore, parse_location

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
QUESTIONS = [
    "What is the best model?",
    "How many sentences does the dataset contain?",
    "Which datasets are used for evaluation?",
    "What does Section 3 describe?",
    "Table 2 results",
]


def _location(kind: str, tmp_path: Path, name: str = "idx") -> str:
    return str(tmp_path / name) if kind == "local" else f"milvus:{tmp_path / name}.db"


def _answers(idx: Index, **options) -> list[tuple[list[str], str, int]]:
    out = []
    for q in QUESTIONS:
        r = idx.retrieve(q, RetrievalConfig(**options))
        out.append(([s.ref for s in r.sections], r.context, r.tokens_used))
    return out


@pytest.fixture(scope="module")
def sample_copy(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sample") / "docs"
    shutil.copytree(SAMPLE, out)
    return out


@pytest.fixture(scope="module")
def memory_index(sample_copy: Path) -> Index:
    return Index.build([sample_copy], embedder=HashEmbedder(64))


@pytest.fixture(scope="module", params=["local", "milvus"])
def saved(request, sample_copy: Path, memory_index: Index, tmp_path_factory):
    """The sample saved in each kind of store, and the index loaded back from it."""
    tmp = tmp_path_factory.mktemp(request.param)
    loc = _location(request.param, tmp)
    memory_index.save(loc)
    return request.param, loc, Index.load(loc, embedder=HashEmbedder(64))


# --- behaviour shared by both stores -------------------------------------------------------
def test_round_trip_holds_the_same_contents(saved, memory_index: Index) -> None:
    _, _, idx = saved
    assert dict(idx.reader.documents) == dict(memory_index.reader.documents)
    # cards travel with the records (a column locally, the record's JSON on Milvus)
    cards = idx.reader.cards()
    assert cards == memory_index.reader.cards() and {c.kind for c in cards.values()} == {"paper"}
    assert list(idx.reader.chunks) == list(memory_index.reader.chunks)
    np.testing.assert_allclose(idx.reader.vectors, memory_index.reader.vectors, atol=1e-6)
    for d in memory_index.reader.documents:
        assert idx.reader.text(d) == memory_index.reader.text(d)
        assert idx.reader.tree(d).to_json() == memory_index.reader.tree(d).to_json()


@pytest.mark.parametrize("options", [
    {},  # hybrid (dense + BM25 fused), heading-label boost for "Section 3", "Table 2"
    {"hybrid": False},
    {"mode": "collapsed", "budget": 500},
    {"doc_ids": ("1908.05828.md", "2002.02070.md")},
    {"path_prefix": "Named Entity Recognition for Nepali Language > Related Work"},
])
def test_retrieval_is_the_same_as_in_memory(saved, memory_index: Index, options) -> None:
    _, _, idx = saved
    assert _answers(idx, **options) == _answers(memory_index, **options)


def test_lexical_and_term_statistics_match(saved, memory_index: Index) -> None:
    _, _, idx = saved
    for q in QUESTIONS:
        # Milvus finds the rows; they are scored by the same BM25 under the same statistics
        got, want = idx.reader.lexical_search(q, 10), memory_index.reader.lexical_search(q, 10)
        assert [r for r, _ in got] == [r for r, _ in want]
        assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-5)
        assert idx.reader.term_weights(q) == pytest.approx(memory_index.reader.term_weights(q))
    assert idx.reader.lexical_search("zzzz qqqq", 10) == []
    rows = idx.reader.rows_for(["2002.02070.md"])
    found = idx.reader.lexical_search("model results", 50, rows)
    assert found and {r for r, _ in found} <= set(rows.tolist())


@pytest.mark.parametrize("kind", ["local", "milvus"])
def test_update_prune_and_results_equal_a_fresh_build(kind: str, tmp_path: Path,
                                                       sample_copy: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(sample_copy, docs)
    loc = _location(kind, tmp_path)
    _, first = update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs))
    files = sorted(docs.glob("*.md"))
    assert len(first.added) == len(files) == 4
    files[0].write_text(files[0].read_text() + "\n\n## Addendum\n\n" + "Lighthouse keepers " * 30)
    files[1].unlink()
    (docs / "new.md").write_text("# New\n\n## Part\n\n" + "Saffron harvests in autumn. " * 20)
    _, report = update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs),
                                 prune=True)
    assert (report.added, report.updated, report.removed) == (
        ("new.md",), (files[0].name,), (files[1].name,))
    assert len(report.unchanged) == 2
    fresh = Index.build([docs], root=str(docs), embedder=HashEmbedder(64))
    again = Index.load(loc, embedder=HashEmbedder(64))
    assert sorted(again.reader.documents) == sorted(fresh.reader.documents)
    for q in [*QUESTIONS, "saffron harvest", "lighthouse keepers"]:
        a = again.retrieve(q)
        b = fresh.retrieve(q)
        assert [s.ref for s in a.sections] == [s.ref for s in b.sections], q
        assert a.context == b.context
    # unchanged on a second run: nothing embedded, same generation content
    _, same = update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs))
    assert same.embedded == 0 and len(same.unchanged) == 4


@pytest.mark.parametrize("kind", ["local", "milvus"])
def test_a_second_writer_is_refused(kind: str, tmp_path: Path) -> None:
    loc = _location(kind, tmp_path)
    Index.build([SAMPLE], embedder=HashEmbedder(64)).save(loc)
    first, second = open_store(loc), open_store(loc)
    if kind == "milvus":  # Milvus Lite serves one process: share its client
        second.conn = first.conn
    with first.lock(), pytest.raises(IndexLockedError, match="another process"):
        with second.lock(timeout=0.3):
            pass
    with second.lock():  # released
        pass


# --- Milvus only --------------------------------------------------------------------------
def test_a_collection_found_released_is_loaded_again(tmp_path: Path, sample_copy: Path
                                                     ) -> None:
    """Another client of a Milvus Lite file can leave a collection this connection loaded
    in the released state (seen under concurrent readers in
    benchmarks/robustness/bench_crash.py)."""
    loc = _location("milvus", tmp_path)
    update_directory(loc, [sample_copy], embedder=HashEmbedder(64))
    store = MilvusStore(loc)
    idx = Index.load(store, embedder=HashEmbedder(64))
    before = _answers(idx)
    conn = store.conn
    for name in (conn.chunks, conn.blobs, conn.terms):
        conn.client().release_collection(name)  # while the connection thinks them loaded
    assert _answers(Index.load(store, embedder=HashEmbedder(64))) == before


def test_interrupted_update_leaves_the_previous_version(tmp_path: Path, sample_copy: Path,
                                                        monkeypatch) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(sample_copy, docs)
    loc = _location("milvus", tmp_path)
    idx, _ = update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs))
    before = _answers(idx)
    for f in sorted(docs.glob("*.md"))[:2]:
        f.write_text("# Replaced\n\n## Only\n\n" + "Completely different words here. " * 20)
    client = None

    def boom(*args, **kwargs):
        raise RuntimeError("network dropped")

    original = MilvusStore.write

    def failing_write(self, manifest, segments):
        nonlocal client
        client = self.conn.client()
        monkeypatch.setattr(type(client), "alter_alias", boom)
        return original(self, manifest, segments)

    monkeypatch.setattr(MilvusStore, "write", failing_write)
    with pytest.raises(StoreError, match="moving the alias failed"):
        update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs))
    monkeypatch.undo()
    reader = Index.load(loc, embedder=HashEmbedder(64))
    assert _answers(reader) == before  # the new segment was written, never committed
    idx2, report = update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs))
    assert len(report.updated) == 2
    # The failed run's segment (seg-000002) was never committed and is gone; the previous
    # generation's segment stays for its readers.
    conn = open_store(loc).conn
    segments = {r["segment"] for r in conn.scan(conn.chunks, "row >= 0", ["segment"])}
    assert segments == {"seg-000001", "seg-000003"}
    fresh = Index.build([docs], root=str(docs), embedder=HashEmbedder(64))
    assert _answers(idx2, hybrid=False) == _answers(fresh, hybrid=False)


def test_large_sources_are_split_and_slice_exactly(tmp_path: Path) -> None:
    long_line = "😀" * 19_000  # 76,000 bytes: one line over a 60,000-byte part, kept whole
    body = "\n\n".join(f"Paragraph {i} " + "word " * 400 for i in range(60))
    text = f"# Big\n\n## One\n\n{body}\n\n## Two\n\n{long_line}\n\nTail é ü 漢字 end.\n"
    assert len(text.encode()) > 3 * 60_000
    idx = Index(embedder=HashEmbedder(32))
    idx.add_text("big.md", text)
    loc = _location("milvus", tmp_path)
    idx.save(loc)
    back = Index.load(loc, embedder=HashEmbedder(32))
    assert back.reader.text("big.md") == text
    assert list(back.reader.chunks) == list(idx.reader.chunks)
    r = back.retrieve("Tail end", RetrievalConfig(budget=4000))
    assert r.sections
    assert r.context == idx.retrieve("Tail end", RetrievalConfig(budget=4000)).context


def test_several_segments_and_deleted_documents(tmp_path: Path, sample_copy: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(sample_copy, docs)
    loc = _location("milvus", tmp_path)
    update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs))
    f = sorted(docs.glob("*.md"))[2]
    f.write_text(f.read_text().replace("the", "a"))
    idx, _ = update_directory(loc, [docs], embedder=HashEmbedder(64), root=str(docs))
    opened = open_store(loc).open()
    assert len(opened.segments.slots) == 2 and opened.segments.slots[0][1] == {f.name}
    fresh = Index.build([docs], root=str(docs), embedder=HashEmbedder(64))
    back = Index.load(loc, embedder=HashEmbedder(64))
    assert _answers(back, hybrid=False) == _answers(fresh, hybrid=False)
    # BM25: Milvus weighs terms over the whole collection, rows of the replaced version
    # included, so hybrid rankings may differ slightly until the segments are merged.
    same = [a[0][:3] == b[0][:3] for a, b in zip(_answers(back), _answers(fresh), strict=True)]
    assert sum(same) >= len(same) - 1
    q = fresh.embedder.embed_query("model")
    got = idx.reader.dense_search(np.asarray(q), 20)[1]
    assert ({idx.reader.pointers(got.tolist())[i][0] for i in range(len(got))}
            <= set(fresh.reader.documents))


def test_unreachable_corrupt_and_missing_locations(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=r"milvus:http://127\.0\.0\.1:9: cannot open"):
        Index.load(MilvusStore("milvus:http://127.0.0.1:9", timeout=2))
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    with pytest.raises(StoreError, match=f"{bad}: cannot open"):
        Index.load(f"milvus:{bad}")
    missing = tmp_path / "missing.db"
    with pytest.raises(IndexNotFoundError, match="no index at milvus:"):
        Index.load(f"milvus:{missing}")
    assert not missing.exists()  # reading never creates a database
    for wrong in ["milvus:", "milvus:./x.db#9bad", "milvus:./x.db#a-b"]:
        with pytest.raises(ConfigError):
            parse_location(wrong)
    with pytest.raises(ConfigError, match=r"end in \.db"):
        Index.load("milvus:./not-a-db-file")


def test_other_embedder_or_dimension_is_refused(tmp_path: Path) -> None:
    loc = _location("milvus", tmp_path)
    Index.build([SAMPLE], embedder=HashEmbedder(64)).save(loc)
    with pytest.raises(IndexMismatchError, match="hash:64"):
        Index.load(loc, embedder=HashEmbedder(32))
    other = Index.build([SAMPLE], embedder=HashEmbedder(32))
    with pytest.raises(IndexMismatchError, match="dimension 64"):
        other.save(loc)
    other.save(loc + "#second")  # another name in the same file is another index
    assert len(Index.load(loc + "#second", embedder=HashEmbedder(32))) == 4
    assert len(Index.load(loc, embedder=HashEmbedder(64))) == 4


def test_cli_index_query_on_milvus_equals_local(tmp_path: Path, capsys) -> None:
    outs = []
    for kind in ("local", "milvus"):
        loc = _location(kind, tmp_path)
        assert main(["index", str(SAMPLE), "--index", loc, "--embedder", "hash:64"]) == 0
        capsys.readouterr()
        assert main(["query", "What is the best model?", "--index", loc, "--json"]) == 0
        outs.append(json.loads(capsys.readouterr().out))
    for a, b in zip(outs[0]["contexts"], outs[1]["contexts"], strict=True):
        # Milvus fuses in float32: the same ranking, scores equal to 6 places
        assert a.pop("score") == pytest.approx(b.pop("score"), abs=1e-6)
        assert a == b
    assert outs[0]["contexts"]
    assert main(["query", "x", "--index", "milvus:http://127.0.0.1:9"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "milvus:http://127.0.0.1:9" in err[0]


def test_batch_cli_and_langchain_retriever_on_milvus(tmp_path: Path, capsys) -> None:
    loc = _location("milvus", tmp_path)
    local = _location("local", tmp_path)
    for where in (loc, local):
        assert main(["index", str(SAMPLE), "--index", where, "--embedder", "hash:64"]) == 0
    questions = tmp_path / "q.jsonl"
    questions.write_text("".join(json.dumps({"id": i, "question": q, "doc_id": "1908.05828"})
                                 + "\n" for i, q in enumerate(QUESTIONS)))
    results = []
    for where in (loc, local):
        out = tmp_path / f"out-{len(results)}.jsonl"
        assert main(["query", "--index", where, "--questions", str(questions), "--output",
                     str(out), "--per-doc"]) == 0
        results.append([json.loads(line) for line in out.read_text().splitlines()])
    assert len(results[0]) == len(QUESTIONS)
    for a, b in zip(*results, strict=True):
        assert [c["text"] for c in a["contexts"]] == [c["text"] for c in b["contexts"]]
        assert {c["doc_id"] for c in a["contexts"]} == {"1908.05828.md"}
    capsys.readouterr()
    lc = pytest.importorskip("proxy_pointer.langchain")
    docs = [lc.ProxyPointerRetriever(index_dir=where, k=3).invoke(QUESTIONS[0])
            for where in (loc, local)]
    assert [d.page_content for d in docs[0]] == [d.page_content for d in docs[1]]
    assert len(docs[0]) == 3


@pytest.mark.parametrize("kind", ["ivf", "hnsw"])
def test_approximate_vector_index_kinds_in_milvus(kind: str, tmp_path: Path,
                                                  memory_index: Index) -> None:
    from proxy_pointer.stores.vectors import VectorIndexConfig

    idx = Index.build([SAMPLE], embedder=HashEmbedder(64),
                      vector_config=VectorIndexConfig(kind=kind, nlist=4, nprobe=4))
    loc = _location("milvus", tmp_path)
    idx.save(loc)
    back = Index.load(loc, embedder=HashEmbedder(64))
    assert back.vector_config.kind == kind
    if kind == "hnsw":  # 91 chunks: the graph search finds them all, in exact order
        assert _answers(back, hybrid=False) == _answers(memory_index, hybrid=False)
    else:  # Milvus Lite's IVF probes few candidates; the best ones come back
        got = [a[0] for a in _answers(back, hybrid=False)]
        want = [a[0] for a in _answers(memory_index, hybrid=False)]
        assert all(g and g[0] == w[0] for g, w in zip(got, want, strict=True))


def test_converted_pdf_keeps_its_pages_in_milvus(tmp_path: Path) -> None:
    pytest.importorskip("fpdf")
    from test_pages import make_pdf

    docs = tmp_path / "docs"
    docs.mkdir()
    make_pdf(docs / "report.pdf")
    got = {}
    for kind in ("local", "milvus"):
        loc = _location(kind, tmp_path)
        update_directory(loc, [docs], embedder=HashEmbedder(64))
        idx = Index.load(open_store(loc))
        rec = idx.reader.documents["report.pdf"]
        res = idx.retrieve("flood insurance insurer claim", budget=4000, k=8)
        got[kind] = (rec.pages, rec.converter, [(s.ref, s.pages) for s in res.sections],
                     idx.section("report.pdf#p4").text)
    assert got["milvus"] == got["local"] and len(got["local"][0]) == 5


def test_a_staged_build_is_inserted_in_batches_with_progress(tmp_path: Path, sample_copy: Path,
                                                             monkeypatch, caplog) -> None:
    import proxy_pointer.stores.milvus.store as milvus_module

    monkeypatch.setattr(milvus_module, "_LOG_ROWS", 20)
    inserts: list[int] = []
    real = milvus_module.MilvusConnection.call

    def call(self, what, fn, *args, **kwargs):
        if what == "inserting chunks":
            inserts.append(len(args[1]))
        return real(self, what, fn, *args, **kwargs)

    monkeypatch.setattr(milvus_module.MilvusConnection, "call", call)
    monkeypatch.setattr(milvus_module, "_INSERT_ROWS", 20)
    loc = _location("milvus", tmp_path)
    with caplog.at_level("INFO", logger="proxy_pointer.stores.milvus"):
        idx, report = update_directory(loc, [sample_copy], embedder=HashEmbedder(64))
    assert sum(inserts) == report.chunks == len(idx.reader.chunks) and max(inserts) == 20
    lines = [r.getMessage() for r in caplog.records]
    assert lines and all(f"of {report.chunks} chunk rows inserted" in m for m in lines)
    again = Index.load(loc, embedder=HashEmbedder(64))
    built = Index.build([sample_copy], embedder=HashEmbedder(64))
    assert again.reader.chunks == built.reader.chunks
