"""Tests of the ingestion benchmark's and the capacity model's pure parts (no indexing runs)."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.common import RESULTS
from benchmarks.speed import bench_ingest, capacity


def _row(mode: str, seconds: float, chunks: int, child: float, worker: float | None,
         **extra: object) -> dict:
    return {"mode": mode, "seconds": seconds, "bytes": 2_000_000, "files": 4,
            "documents": 4, "chunks": chunks, "embedded": chunks,
            "counts": {"chunks": chunks, "embedded": chunks, "reused": 0, "deduplicated": 3},
            "timings": {"read": 0.1, "tree": 1.0, "tokenize": 0.5, "chunking": 2.0,
                        "embedding": 3.0},
            "peak_rss_mib": child, "workers_peak_rss_mib": worker,
            "largest_rss_mib": max(child, worker or 0.0),
            "mb_per_s": 2.0 / seconds, "chunks_per_s": chunks / seconds, **extra}


def _results() -> dict:
    return {
        "dataset": "toy", "date": "2026-12-05", "cpus": 2, "documents": 4, "mb": 2.0,
        "throughput": [_row("today", 40.0, 1000, 900, 300), _row("default", 10.0, 1000, 500, 90),
                       _row("fast", 1.0, 1000, 200, 90)],
        "memory": {"fast": [_row("fast", 1.0, 1000, 200, 90), _row("fast", 4.0, 4000, 230, 90),
                            _row("fast", 20.0, 20000, 2500, 90)]},
        "copies": [1, 4, 20],
        "quality": [{"dataset": "toy", "mode": m, "any_hit": {"per-doc": {"2000": v}}}
                    for m, v in (("default", 80.0), ("fast", 70.0))],
    }


def test_memory_verdicts_ratio_or_absolute_bound():
    checks = bench_ingest.memory_verdicts(_results())["fast"]
    assert [c["copies"] for c in checks] == [1, 4, 20]
    assert checks[1]["ratio"] == pytest.approx(230 / 200) and checks[1]["met"]
    # 12.5x and over 2048 MiB: missed.
    assert checks[2]["ratio"] == pytest.approx(12.5) and not checks[2]["met"]


def test_markdown_reports_stages_counts_and_targets_from_the_numbers():
    lines = bench_ingest.markdown(_results())
    text = "\n".join(lines)
    assert "| mode | read | convert | tree | tokenize |" in text
    assert "| reused | deduplicated |" in text
    assert "Default >= 2x today's chunks/s (issue 10): met, 4.00x." in text
    assert "Fast mode >= 1 MB/s end to end (issue 10): met, 2.00 MB/s." in text
    assert "(toy, per-doc): **missed**, -10.0." in text
    assert "Peak RSS 4x vs 1x within 20% or under 2 GB (fast): met, 1.15x" in text
    assert "Peak RSS 20x vs 1x within 20% or under 2 GB (fast): **missed**, 12.50x" in text


def test_markdown_reads_rows_of_an_older_library(tmp_path):
    """Rows without counts, worker peaks or newer stages (as the committed ingest.json)."""
    results = _results()
    for row in results["throughput"] + results["memory"]["fast"]:
        for name in ("counts", "workers_peak_rss_mib", "largest_rss_mib", "files"):
            row.pop(name)
        row["timings"] = {"tree": 1.0, "chunking": 2.0, "embedding": 3.0}
    paths = bench_ingest.write(results, tmp_path, "ingest-test")
    assert paths and (tmp_path / "ingest-test.md").read_text().count("n/a") >= 3
    data = json.loads((tmp_path / "ingest-test.json").read_text())
    assert data["memory_verdicts"]["fast"][0]["ratio"] == 1.0
    assert data["targets"]


def test_copies_makes_n_linked_copies(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\ntext\n")
    (docs / "b.md").write_text("# B\n\nmore\n")
    folder = bench_ingest.copies(docs, 3, tmp_path / "work")
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*.md"))
    assert files == [f"copy{i}/{n}" for i in range(3) for n in ("a.md", "b.md")]
    assert (folder / "copy2" / "a.md").read_text() == "# A\n\ntext\n"
    assert bench_ingest.copies(docs, 3, tmp_path / "work") == folder  # reused, not redone


def test_capacity_model_on_the_committed_results():
    out = capacity.model(capacity.inputs(RESULTS))
    one, ten, hundred = out["sizes"]
    assert one["latency"]["kind"] == "measured"
    assert hundred["latency"]["kind"] == "extrapolated"
    assert hundred["local_disk_gb"] == pytest.approx(100 * one["local_disk_gb"])
    raw = hundred["milvus"]["raw_vectors_gib"]
    assert raw == pytest.approx(1e8 * 384 * 4 / 2**30)
    assert hundred["milvus"]["HNSW"]["gib"] > hundred["milvus"]["FLAT"]["gib"] > raw
    fast = ten["ingestion"]["fast"]
    assert fast["workers"][16] <= fast["workers"][2]
    lines = capacity.markdown({"date": "2026-12-05", **out})
    assert any(line.startswith("| query p50 / p95 ms") for line in lines)
    assert not any("nan" in line for line in lines)


def test_capacity_names_a_missing_input(tmp_path):
    with pytest.raises(capacity.MissingInput, match=r"ingest\.json is missing"):
        capacity.inputs(tmp_path)
    (tmp_path / "ingest").mkdir()
    (tmp_path / "ingest" / "ingest.json").write_text("{}")
    with pytest.raises(capacity.MissingInput, match=r"scale/scale\.json is missing"):
        capacity.inputs(tmp_path)


def test_latency_power_law_through_the_two_largest_sizes():
    m = {"query": [{"chunks": 100_000, "p50_ms": 10.0, "p95_ms": 20.0},
                   {"chunks": 1_000_000, "p50_ms": 20.0, "p95_ms": 40.0}]}
    got = capacity.latency(m, 10_000_000)
    assert got["kind"] == "extrapolated"
    assert got["p50_exponent"] == pytest.approx(math.log10(2))
    assert got["p50_ms"] == pytest.approx(40.0)
