"""Tests for proxy_pointer.ingest: streaming batches and the parsing pool give the one-shot
result, progress events add up, any Executor drives the one pipeline loop, and a run killed
mid-way resumes from the embedding cache."""

from __future__ import annotations

import itertools
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.embeddings import CachedEmbedder, HashEmbedder, RecordingEmbedder
from proxy_pointer.errors import ConfigError
from proxy_pointer.index import Index, IngestProgress
from proxy_pointer.ingest import (
    FIRST_EMBED_STEP,
    PAGE_BYTES,
    PARSE_SHARE,
    Batch,
    Executor,
    Job,
    LocalExecutor,
    RayExecutor,
    ReadDocument,
    embed_checked,
    make_executor,
)
from proxy_pointer.parse.chunking import ChunkConfig

REPO = Path(__file__).resolve().parents[2]
_TOPICS = ["harbor", "orchard", "glacier", "archive", "furnace", "meadow", "quarry", "lantern",
           "canal", "pottery", "beacon", "vineyard", "saddle", "mill", "observatory", "ferry"]


def _doc(i: int) -> str:
    """A small Markdown paper of three sections whose words depend on ``i``."""
    a, b = _TOPICS[i % len(_TOPICS)], _TOPICS[(3 * i + 1) % len(_TOPICS)]
    parts = [f"# Notes on the {a} {i}\n\nAn opening paragraph about the {a} and the {b}.\n"]
    for j, title in enumerate(["Methods", "Results", "Discussion"]):
        words = " ".join(f"{_TOPICS[(i + j + k) % len(_TOPICS)]}{(i * 7 + k) % 13}"
                         for k in range(40))
        parts.append(f"## {title}\n\nThe {a} study {j} records {words}.\n")
    return "\n".join(parts)


def _write_docs(folder: Path, n: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (folder / f"paper{i:02d}.md").write_text(_doc(i))
    # Two identical documents: the same chunk texts in different batches are embedded once.
    (folder / "twin-a.md").write_text(_doc(99))
    (folder / "twin-b.md").write_text(_doc(99))
    return folder


def _same(a: Index, b: Index) -> None:
    assert a.reader.chunks == b.reader.chunks
    np.testing.assert_array_equal(a.reader.vectors, b.reader.vectors)
    assert a.reader.documents == b.reader.documents
    assert ({d: a.reader.text(d) for d in a.reader.documents}
            == {d: b.reader.text(d) for d in b.reader.documents})


def test_streaming_with_a_pool_equals_one_batch_in_process(tmp_path: Path) -> None:
    docs = _write_docs(tmp_path / "docs", 10)
    one = Index(embedder=HashEmbedder(64))
    rep_one = one.update([docs], batch_bytes=10**9, workers=0)
    many = Index(embedder=HashEmbedder(64))
    rep_many = many.update([docs], batch_bytes=2_500, workers=2)
    _same(one, many)
    assert rep_many.embedded == rep_one.embedded < len(many.reader.chunks)  # twins embedded once
    assert rep_many.added == rep_one.added and len(rep_many.added) == 12
    # Only a pool makes the embedder wait for parsed batches: it did run.
    assert rep_many.timings["waiting"] > 0 and rep_one.timings["waiting"] == 0
    assert set(rep_many.timings) >= {"tree", "chunking", "embedding", "index"}

    # An incremental update streams the same way: edited, new, unchanged and pruned files.
    (docs / "paper03.md").write_text(_doc(3).replace("Discussion", "Conclusions"))
    (docs / "paper11.md").write_text(_doc(11))
    (docs / "paper05.md").unlink()
    rep_one = one.update([docs], prune=True, batch_bytes=10**9, workers=0)
    rep_many = many.update([docs], prune=True, batch_bytes=2_500, workers=2)
    _same(one, many)
    for field in ("added", "updated", "removed", "unchanged", "embedded"):
        assert getattr(rep_many, field) == getattr(rep_one, field), field
    assert rep_many.updated == ("paper03.md",) and rep_many.removed == ("paper05.md",)
    assert 0 < rep_many.embedded < one.reader.documents["paper03.md"].n_chunks + 5


def test_progress_events_grow_and_end_at_the_totals(tmp_path: Path) -> None:
    docs = _write_docs(tmp_path / "docs", 10)
    (docs / "binary.md").write_bytes(b"# Broken\x00\x00")
    events: list[IngestProgress] = []
    idx = Index(embedder=HashEmbedder(32))
    rep = idx.update([docs], batch_bytes=3_000, workers=0, progress=events.append)
    assert len(rep.skipped) == 1 and "binary.md" in rep.skipped[0]
    files = sorted(docs.iterdir())
    last = events[-1]
    assert (last.documents_done, last.documents_total) == (len(files), len(files))
    assert last.bytes_done == last.bytes_total == sum(f.stat().st_size for f in files)
    assert last.chunks_done == len(idx.reader.chunks) and last.chunks_embedded == rep.embedded
    assert events[0].documents_done == 0 and len(events) > 4
    assert last.pages_done == last.pages_total == sum(
        -(-f.stat().st_size // PAGE_BYTES) for f in files)  # one page per 3,000 bytes
    for before, after in itertools.pairwise(events):
        for name in ("documents_done", "bytes_done", "chunks_done", "chunks_embedded",
                     "elapsed", "pages_done"):
            assert getattr(after, name) >= getattr(before, name), name
        assert after.documents_total == before.documents_total
        assert after.bytes_total == before.bytes_total
        assert after.pages_total == before.pages_total


def test_bad_batch_settings_are_refused(tmp_path: Path) -> None:
    docs = _write_docs(tmp_path / "docs", 1)
    with pytest.raises(ConfigError, match="batch_bytes"):
        Index(embedder=HashEmbedder(32)).update([docs], batch_bytes=0)
    with pytest.raises(ConfigError, match="workers"):
        Index(embedder=HashEmbedder(32)).update([docs], workers=-1)


class SelfEmbeddingExecutor:
    """An Executor written here: parses in this process and embeds every other new text of
    a batch itself, with three batches in flight and batches of a fifth of the run."""

    window = 3

    def __init__(self) -> None:
        self.job: Job | None = None
        self.starts = self.closes = self.submits = 0

    def start(self, job: Job, *, batches: int) -> SelfEmbeddingExecutor:
        self.job, self.starts = job, self.starts + 1
        return self

    def batch_bytes(self, requested: int, total: int) -> int:
        return max(1, total // 5)

    def submit(self, docs, *, skip=frozenset()):
        self.submits += 1
        return list(docs), skip

    def result(self, handle: tuple[list[ReadDocument], frozenset[str]]) -> Batch:
        assert self.job is not None
        docs, skip = handle
        parsed = [d.parse(self.job.config, self.job.recover_headings) for d in docs]
        texts = sorted({c.embed_text for p in parsed for c in p.chunks} - skip)[::2]
        vectors = (embed_checked(self.job.embedder, texts) if texts
                   else np.zeros((0, self.job.embedder.dimension), np.float32))
        return Batch(parsed, texts, vectors)

    def close(self) -> None:
        self.closes += 1

    def __enter__(self) -> SelfEmbeddingExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def test_any_executor_drives_the_pipeline(tmp_path: Path) -> None:
    docs = _write_docs(tmp_path / "docs", 10)
    local = Index(embedder=HashEmbedder(64))
    rep_local = local.update([docs], workers=0)
    executor = SelfEmbeddingExecutor()
    assert isinstance(executor, Executor) and isinstance(LocalExecutor(), Executor)
    other = Index(embedder=HashEmbedder(64))
    events: list[IngestProgress] = []
    rep = other.update([docs], executor=executor, progress=events.append)
    _same(local, other)
    assert rep.embedded == rep_local.embedded and rep.added == rep_local.added
    assert executor.submits >= 5 and executor.starts == executor.closes == 1
    assert events[-1].documents_done == events[-1].documents_total == 12
    # The object serves the next run too; only the edited document is parsed again.
    (docs / "paper03.md").write_text(_doc(3).replace("Discussion", "Conclusions"))
    local.update([docs], workers=0)
    rep = other.update([docs], executor=executor)
    _same(local, other)
    assert rep.updated == ("paper03.md",) and executor.starts == executor.closes == 2


def test_executors_are_objects_and_strings_only_name_them(tmp_path: Path) -> None:
    docs = _write_docs(tmp_path / "docs", 1)
    idx = Index(embedder=HashEmbedder(32))
    with pytest.raises(ConfigError, match="executor must be an Executor"):
        idx.update([docs], executor="local")
    with pytest.raises(ConfigError, match="workers=2 is for the default executor"):
        idx.update([docs], executor=LocalExecutor(), workers=2)
    with pytest.raises(ConfigError, match="executor must be 'local' or 'ray', got 'dask'"):
        make_executor("dask")
    with pytest.raises(ConfigError, match="workers must be an integer >= 0"):
        make_executor("ray", workers=-1)
    assert isinstance(make_executor("local", workers=0), LocalExecutor)
    assert isinstance(make_executor("ray"), RayExecutor)  # Ray is not imported yet
    # An index-time LLM cannot travel to Ray actors: refused before Ray is even needed.
    job = Job(HashEmbedder(32), ChunkConfig(summaries=True))
    with pytest.raises(ConfigError, match="cannot use an index-time LLM"):
        RayExecutor().start(job, batches=1)


def test_cli_bar_and_lines_say_the_same(capsys: pytest.CaptureFixture[str]) -> None:
    from proxy_pointer.cli.progress import Bar, Lines, describe

    events = [IngestProgress(documents_done=done, documents_total=8, bytes_done=done * 10**6,
                             bytes_total=8 * 10**6, chunks_done=40 * done,
                             chunks_embedded=30 * done, elapsed=30.0 * done,
                             pages_done=120.0 * done, pages_total=960) for done in (0, 3)]
    bar = Bar()
    for event in events:
        bar(event)
    shown = bar.text
    bar.close()
    capsys.readouterr()
    lines = Lines()
    for event in events:
        lines(event)
    said = describe(events[-1])
    assert said == "360/960 pages (38%), 3/8 files, 120 chunks, 1:30, about 2:30 left"
    assert shown.endswith(f"| indexing: {said}")
    assert capsys.readouterr().err.splitlines()[-1] == f"indexing: {said}"
    assert describe(events[0]).endswith("0:00, time left: measuring")


def test_progress_moves_within_the_first_file_of_a_pdf_folder(tmp_path: Path) -> None:
    """Pages and time left from the first events: progress moves as the first file's pages
    are read, before any text is embedded, with or without parsing workers; embedding then
    moves it after at most FIRST_EMBED_STEP texts (counts, not timings)."""
    from fpdf import FPDF

    docs = tmp_path / "pdfs"
    docs.mkdir()
    for n, pages in enumerate((12, 5, 3)):
        pdf = FPDF()
        for p in range(pages):
            pdf.add_page()
            pdf.set_font("helvetica", size=10)
            for line in range(30):
                pdf.cell(0, 5, f"File {n} page {p} line {line}: words of a paragraph {line * p}.",
                         new_x="LMARGIN", new_y="NEXT")
        (docs / f"f{n}.pdf").write_bytes(bytes(pdf.output()))
    for workers in (0, 1):
        embedder = RecordingEmbedder(32)
        events: list[tuple[IngestProgress, int, int]] = []  # (event, embedder calls, texts)
        def seen(e: IngestProgress, events: list = events, emb: RecordingEmbedder = embedder
                 ) -> None:
            events.append((e, emb.calls, len(emb.texts)))

        Index(embedder=embedder).update([docs], workers=workers, progress=seen)
        assert events[0][0].pages_total == 20 and events[0][0].pages_done == 0
        moved, calls, _ = next(x for x in events if x[0].pages_done > 0)
        assert moved.documents_done == 0 and calls == 0  # a page read, nothing embedded yet
        assert moved.pages_done == PARSE_SHARE  # one page read: half of its progress
        assert moved.seconds_left is not None
        embedded = next(x for x in events if x[1] > 0)
        assert embedded[2] <= FIRST_EMBED_STEP and embedded[0].documents_done == 0
        assert events[-1][0].pages_done == 20


# --- a run killed mid-way resumes from the embedding cache ------------------------------------
_KILLED_RUN = """
import sys, time
from proxy_pointer.embeddings import CachedEmbedder, RecordingEmbedder
from proxy_pointer.index import Index

docs, cache = sys.argv[1], sys.argv[2]
Index.build([docs], embedder=CachedEmbedder(RecordingEmbedder(64, delay=0.15), cache),
            batch_bytes=2_000, workers=1)
print("FINISHED", flush=True)
"""


def _cached_rows(cache: Path) -> int:
    path = cache / "embeddings.sqlite"
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute("SELECT count(*) FROM vectors").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:  # created but not initialized yet
        return 0


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc and fork")
def test_sigkilled_build_resumes_from_the_cache(tmp_path: Path) -> None:
    docs = _write_docs(tmp_path / "docs", 28)
    cache = tmp_path / "cache"
    script = tmp_path / "killed_run.py"
    script.write_text(textwrap.dedent(_KILLED_RUN))
    proc = subprocess.Popen([sys.executable, str(script), str(docs), str(cache)], cwd=REPO,
                            stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while _cached_rows(cache) == 0:
            assert proc.poll() is None, "the run ended before anything was cached"
            assert time.monotonic() < deadline, "nothing was cached in 30 s"
            time.sleep(0.02)
        workers = _children(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stdout is not None and "FINISHED" not in proc.stdout.read()
    proc.stdout.close()
    # The parsing worker notices its parent is gone and leaves (it would block forever).
    assert workers
    deadline = time.monotonic() + 5
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(w) for w in workers)

    cached = _cached_rows(cache)
    inner = RecordingEmbedder(64)
    resumed = Index.build([docs], embedder=CachedEmbedder(inner, cache), workers=0)
    total = len({c.embed_text for c in resumed.reader.chunks})
    assert 0 < cached < total, (cached, total)
    assert len(inner.texts) == total - cached
    _same(resumed, Index.build([docs], embedder=HashEmbedder(64), workers=0))
