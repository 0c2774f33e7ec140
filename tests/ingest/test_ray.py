"""Ingestion on Ray (``executor=RayExecutor()``) gives what a single-process run gives.

One local Ray (two CPUs) serves the whole module: starting Ray takes seconds.
"""

from __future__ import annotations

import shutil
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder, SentenceTransformerEmbedder
from proxy_pointer.errors import ConfigError
from proxy_pointer.index import Index, update_directory
from proxy_pointer.ingest import RayExecutor, make_executor

ray = pytest.importorskip("ray")

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs"
# Small batches: the sample's four papers (about 16 KB each) make several batches, so
# several are in flight on the two actors at once.
SMALL = 20_000


@pytest.fixture(scope="module", autouse=True)
def local_ray():
    if ray.is_initialized():
        yield
        return
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    yield
    ray.shutdown()


def assert_same(a: Index, b: Index, atol: float = 1e-6, cosine: float | None = None) -> None:
    """The same index; vectors within ``atol``, or each pair at ``cosine`` or more."""
    assert dict(a.reader.documents) == dict(b.reader.documents)
    assert list(a.reader.chunks) == list(b.reader.chunks)  # texts, pointers, breadcrumbs
    assert a.reader.vectors.shape == b.reader.vectors.shape
    if cosine is None:
        np.testing.assert_allclose(a.reader.vectors, b.reader.vectors, atol=atol)
    else:
        assert (a.reader.vectors * b.reader.vectors).sum(axis=1).min() >= cosine
    for doc_id in a.reader.documents:
        assert a.reader.text(doc_id) == b.reader.text(doc_id)
        assert a.reader.tree(doc_id).to_dict() == b.reader.tree(doc_id).to_dict()


def test_sample_on_ray_equals_local_hash_embedder() -> None:
    local = Index.build([SAMPLE], embedder=HashEmbedder(64), batch_bytes=SMALL)
    events = []
    remote = Index.build([SAMPLE], embedder=HashEmbedder(64), batch_bytes=SMALL,
                         executor=RayExecutor(), progress=events.append)
    assert_same(local, remote)
    assert len(remote) == 4
    assert events[-1].documents_done == events[-1].documents_total == 4
    assert events[-1].bytes_done == events[-1].bytes_total
    assert events[-1].chunks_done == len(remote.reader.chunks)
    assert [e.documents_done for e in events] == sorted(e.documents_done for e in events)


@pytest.mark.slow
def test_sample_on_ray_equals_local_default_embedder() -> None:
    local = Index.build([SAMPLE], embedder=SentenceTransformerEmbedder())
    remote = Index.build([SAMPLE], embedder=SentenceTransformerEmbedder(), batch_bytes=SMALL,
                         executor=RayExecutor(workers=2))
    if SentenceTransformerEmbedder().precision == "fp32":
        assert_same(local, remote, atol=1e-5)
    else:
        # bfloat16 (a CPU with native bfloat16): an actor batches the texts otherwise, and
        # bfloat16 products depend on the batch's padded shape at ~1e-4 cosine.
        assert_same(local, remote, cosine=0.9995)


def test_incremental_update_on_ray_matches_local(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE, docs)
    first = sorted(docs.iterdir())
    for executor in ("local", "ray"):
        update_directory(tmp_path / executor, [docs], embedder=HashEmbedder(64))
    changed = first[1]
    changed.write_text(changed.read_text(encoding="utf-8").replace(
        "the", "THE", 3) + "\n# Appendix\n\nA new closing section.\n", encoding="utf-8")
    (docs / "new.md").write_text("# New\n\nA fresh document about orchards.\n",
                                 encoding="utf-8")
    first[3].unlink()
    results = {}
    for executor in ("local", "ray"):
        results[executor] = update_directory(
            tmp_path / executor, [docs], embedder=HashEmbedder(64), prune=True,
            executor=make_executor(executor), batch_bytes=SMALL)
    (_, lrep), (_, rrep) = results["local"], results["ray"]
    assert rrep.updated == lrep.updated == (changed.name,)
    assert rrep.added == lrep.added == ("new.md",)
    assert rrep.removed == lrep.removed == (first[3].name,)
    assert rrep.unchanged == lrep.unchanged == (first[0].name, first[2].name)
    # Only the changed chunks and the new document were embedded, under Ray as here.
    assert rrep.embedded == lrep.embedded < rrep.chunks
    assert_same(Index.load(tmp_path / "local"), Index.load(tmp_path / "ray"))


def test_unreadable_file_is_skipped_alike(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE, docs)
    (docs / "broken.md").write_bytes(b"# Broken\n\n\xff\xfe not UTF-8 \xc3\x28\n")
    reports = {}
    for executor in ("local", "ray"):
        idx = Index(embedder=HashEmbedder(64))
        reports[executor] = idx.update([docs], executor=make_executor(executor))
    assert reports["ray"].skipped == reports["local"].skipped
    assert len(reports["ray"].skipped) == 1 and "broken.md" in reports["ray"].skipped[0]
    assert reports["ray"].added == reports["local"].added


def test_pdfs_convert_on_ray_actors_alike(tmp_path: Path) -> None:
    pytest.importorskip("fpdf")
    from test_pages import make_pdf

    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE, docs)
    make_pdf(docs / "report.pdf")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\n%truncated")
    built = {}
    for executor in ("local", "ray"):
        idx = Index(embedder=HashEmbedder(64))
        built[executor] = idx, idx.update([docs], executor=make_executor(executor))
    (local, rep_local), (on_ray, rep_ray) = built["local"], built["ray"]
    assert rep_ray.skipped == rep_local.skipped and "broken.pdf" in rep_ray.skipped[0]
    assert len(on_ray.reader.documents["report.pdf"].pages) == 5
    assert_same(local, on_ray)


def test_embedder_not_rebuildable_by_id_is_pickled_or_refused() -> None:
    custom = HashEmbedder(32)
    custom.model_id = "my-own-hash"  # no factory spec: shipped pickled
    idx = Index.build([SAMPLE], embedder=custom, executor=RayExecutor())
    assert np.allclose(idx.reader.vectors,
                       Index.build([SAMPLE], embedder=HashEmbedder(32)).reader.vectors)

    class Unpicklable(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(32)
            self.model_id = "unpicklable"
            self.lock = threading.Lock()

    with pytest.raises(ConfigError, match="cannot hand embedder 'unpicklable'"):
        Index.build([SAMPLE], embedder=Unpicklable(), executor=RayExecutor())


def test_cli_index_executor_ray(capsys, tmp_path: Path) -> None:
    args = [str(SAMPLE), "--embedder", "hash:64", "--cache-dir", str(tmp_path / "cache"),
            "--quiet"]
    assert main(["index", *args, "--index", str(tmp_path / "ray"), "--executor", "ray"]) == 0
    out, err = capsys.readouterr()
    assert "4 added" in out and err == ""
    assert main(["index", *args, "--index", str(tmp_path / "local")]) == 0
    capsys.readouterr()
    assert_same(Index.load(tmp_path / "local"), Index.load(tmp_path / "ray"))
    # Again: nothing changed, nothing embedded.
    assert main(["index", *args, "--index", str(tmp_path / "ray"), "--executor", "ray"]) == 0
    assert "0 added, 0 updated, 4 unchanged" in capsys.readouterr().out


def test_bad_executor_is_refused(capsys, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="executor must be 'local' or 'ray', got 'dask'"):
        make_executor("dask")
    with pytest.raises(ConfigError, match="executor must be an Executor"):
        Index.build([SAMPLE], embedder=HashEmbedder(16), executor="ray")
    with pytest.raises(ConfigError, match="workers=2 is for the default executor"):
        Index.build([SAMPLE], embedder=HashEmbedder(16), executor=RayExecutor(), workers=2)
    with pytest.raises(SystemExit) as exc:
        main(["index", str(SAMPLE), "--index", str(tmp_path / "idx"), "--executor", "dask"])
    assert exc.value.code == 2
    assert "invalid choice: 'dask'" in capsys.readouterr().err.strip().splitlines()[-1]


def test_missing_ray_gives_the_install_hint(capsys, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # "import ray" now fails
    with pytest.raises(ConfigError, match=r"pip install 'proxy-pointer\[ray\]'"):
        Index.build([SAMPLE], embedder=HashEmbedder(16), executor=RayExecutor())
    code = main(["index", str(SAMPLE), "--index", str(tmp_path / "idx"), "--executor", "ray",
                 "--embedder", "hash:16", "--cache-dir", str(tmp_path / "cache"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert err == ["proxy-pointer: error: executor='ray' needs Ray: "
                   "pip install 'proxy-pointer[ray]'"]
    assert not (tmp_path / "idx" / "CURRENT").exists()
