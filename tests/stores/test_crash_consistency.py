"""Crash consistency: writers killed with SIGKILL (see ``benchmarks/robustness/bench_crash.py``).

* A Milvus Lite writer killed while holding the writer lease must not block the next
  writer: Lite serves the file to one process, so a lease another process took is a dead
  one's, which must not block every writer for the lease's two minutes.
* Milvus's BM25 statistics span the whole chunks collection, rows a writer has staged but
  not committed included; rows are scored again under the committed generation's own, so
  staged rows change no committed answer.
* A few cycles of the stress benchmark on the local store: kills, readers, no mismatch.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchmarks.harness.crash import (
    EMBEDDER,
    QUESTIONS,
    Expected,
    answer_key,
    check_answers,
    states,
    texts_of,
    write_cycle,
)
from benchmarks.robustness.bench_crash import run_store

ROOT = Path(__file__).resolve().parents[2]


def _child(script: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)


def test_milvus_lite_lease_of_a_killed_writer_is_free_at_once(tmp_path: Path) -> None:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    from proxy_pointer.errors import IndexLockedError
    from proxy_pointer.index import Index
    from proxy_pointer.stores import open_store

    loc = f"milvus:{tmp_path / 'idx.db'}"
    # The child builds the index (this process must not open the Lite file before it
    # dies: Lite serves one process), takes the writer lease and is killed holding it.
    child = _child(f"""
        import time
        from proxy_pointer.embeddings.factory import make_embedder
        from proxy_pointer.index import Index
        from proxy_pointer.stores import open_store
        idx = Index(embedder=make_embedder({EMBEDDER!r}))
        idx.add_text("a.md", "# A\\n\\n## One\\n\\nApples and pears.\\n")
        idx.save({loc!r})
        with open_store({loc!r}).lock():
            print("held", flush=True)
            time.sleep(600)
    """)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
    finally:
        child.kill()
        child.wait()
    store = open_store(loc)
    assert sorted(Index.load(store).reader.documents) == ["a.md"]
    with store.lock(timeout=0):  # at once, not IndexLockedError until the lease expires
        # ... and within this process the lease still excludes a second writer
        second = open_store(loc)
        second.conn = store.conn
        with pytest.raises(IndexLockedError), second.lock(timeout=0.3):
            pass


def test_milvus_staged_rows_do_not_change_committed_answers(tmp_path: Path) -> None:
    pytest.importorskip("pymilvus")
    pytest.importorskip("milvus_lite")
    from proxy_pointer.embeddings.factory import make_embedder
    from proxy_pointer.index import Index, update_directory
    from proxy_pointer.stores import open_store

    emb = make_embedder(EMBEDDER)
    all_states = states(7, 4)
    loc, folder = f"milvus:{tmp_path / 'x.db'}", tmp_path / "docs"
    for k in (1, 2, 3):
        write_cycle(folder, 7, all_states[k])
        update_directory(loc, [folder], embedder=emb, root=str(folder), prune=True, workers=0)
    idx = Index.load(loc, embedder=emb)
    before = [answer_key(idx.retrieve(q).to_dict()) for q in QUESTIONS]
    # What a writer of the next cycle does before it commits: its segment's rows, flushed.
    nxt = Index(embedder=emb)
    nxt.add_texts(texts_of(7, all_states[4]).items())
    segment = nxt._segments.slots[0][0]  # one in-memory segment
    store = open_store(loc)
    store._write_segment("seg-000099", 99, [segment.parts(d) for d in sorted(nxt.reader.documents)],
                         have=set())
    store.conn.client().flush(store.conn.chunks)
    assert [answer_key(idx.retrieve(q).to_dict()) for q in QUESTIONS] == before


def test_a_few_killed_cycles_on_the_local_store(tmp_path: Path) -> None:
    run = run_store("local", cycles=4, readers=1, seed=3, work=tmp_path / "run",
                    kill_rate=0.6, log=lambda m: None)
    checked = check_answers(run, 3, Expected("local", 3, states(3, 4), tmp_path / "ref"))
    assert run["problems"] == [] and checked["examples"] == []
    assert run["committed"] == 4 and run["final"]["cycle"] == 4
    assert (run["lost"], run["open_failures"], run["writer_errors"]) == (0, 0, 0)
    assert checked["mismatches"] == 0 and checked["answers"] > 0
    assert checked["would_fail_against_previous_cycle"] > 0  # the check can fail
