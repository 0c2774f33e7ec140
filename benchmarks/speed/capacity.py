"""Capacity model: measured per-chunk costs turned into resources for 1M, 10M and 100M chunks.

Every input is read from a committed result under ``benchmarks/results/`` (nothing measured
is typed in here; a missing file or key stops the script with its name), and every output
says whether it is *measured* (read as is), *linear* (a measured per-chunk cost times the
chunk count) or *extrapolated* (a model beyond what was measured, its assumption stated).

* **Ingestion**: core-seconds per chunk per embedder mode from ``ingest.json`` (wall
  seconds x the run's cores / chunks: the parse pool and the embedder kept both cores busy,
  so this counts parse CPU too and is an upper bound); checked against ``ray-ingest.json``
  (CPU-seconds of single-threaded Ray actors per chunk) and the 1M fast-mode build of
  ``scale.json``. Ray workers for a one-hour ingestion = core-seconds / 3600 / cores per
  worker, in the part of the hour the Ray driver's serial work (reading, hashing, staging,
  the commit: measured per chunk) leaves, the rest assumed to scale linearly.
* **Local store**: disk bytes per chunk at 1M (``scale.json``), times the chunk count.
* **Milvus**: query-node memory from Milvus's sizing guidance (raw vectors = rows x dim x
  4 bytes; FLAT and IVF_FLAT hold them whole in memory, IVF_FLAT adding ids and centroids;
  HNSW's loading memory from the Milvus sizing tool's own example), plus the scalar fields
  and BM25 sparse field per row measured from a Milvus Lite index of qasper-dev
  (on-disk bytes per chunk less the raw vector); query nodes of 4 cores / 16 GiB (Milvus's
  resource-allocation example, 1:4 CPU to memory). Insert seconds per chunk from Milvus
  Lite's save in ``milvus-latency.json``.
* **Query latency** (local store, one machine): p50 / p95 measured at 10k, 100k and 1M
  (``scale.json``); 10M and 100M extrapolated with a power law through 100k and 1M.

    python -m benchmarks.speed.capacity
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from ..common import RESULTS, environment, write_report

SIZES = (1_000_000, 10_000_000, 100_000_000)
DIMENSION = 384  # all-MiniLM-L6-v2, and the fast mode distilled from it
WORKER_CORES = (2, 16)
HOUR = 3600.0
MODES = ("default", "int8", "fast")  # bench_ingest modes; "today" is the old PyTorch path

#: Milvus sizing guidance (sources below): the sizing tool's example, 1M vectors of 128
#: dimensions with HNSW: raw file 488.3 MiB, loading memory 1.1 GB.
HNSW_RAW_MIB, HNSW_LOADING_GIB = 488.3, 1.1
QUERYNODE_CORES, QUERYNODE_GIB = 4, 16  # Milvus "Allocate Resources" queryNode example
IVF_NLIST = 1024  # proxy_pointer/stores/milvus/schema.py: IVF_FLAT's default nlist
ID_BYTES = 8  # an INT64 primary key per row in an IVF list

SOURCES = {
    "milvus_sizing_tool": "https://zilliz.com/sizing-tool",
    "milvus_sizing_blog": "https://milvus.io/blog/introducing-the-milvus-sizing-tool-"
                          "calculating-and-optimizing-your-milvus-deployment-resources.md",
    "milvus_index_overhead": "https://milvus.io/ai-quick-reference/how-much-memory-overhead-"
                             "is-typically-introduced-by-indexes-like-hnsw-or-ivf-for-a-"
                             "given-number-of-vectors-and-how-can-this-overhead-be-managed-"
                             "or-configured",
    "milvus_allocate": "https://milvus.io/docs/allocate.md",
    "milvus_ivf_in_memory": "https://github.com/milvus-io/milvus/discussions/33021",
}


class MissingInput(SystemExit):
    """A result file or key the model needs is not there."""


def load(results: Path, name: str) -> dict:
    path = results / name
    if not path.exists():
        raise MissingInput(f"capacity: {path} is missing (run the benchmark that writes it)")
    return json.loads(path.read_text())


def key(data: Any, path: str, source: str) -> Any:
    """``data[a][b]...`` for ``path`` = ``"a.b..."`` (list items by index), or a clear exit."""
    cur = data
    for part in path.split("."):
        try:
            cur = cur[int(part)] if isinstance(cur, list) else cur[part]
        except (KeyError, IndexError, ValueError, TypeError):
            raise MissingInput(f"capacity: {source} has no {path!r}") from None
    return cur


# --------------------------------------------------------------------------- inputs

def inputs(results: Path) -> dict:
    """The measured per-chunk costs, each with the file and key it came from."""
    ingest, scale = load(results, "ingest/ingest.json"), load(results, "scale/scale.json")
    ray, milvus = load(results, "ray/ray-ingest.json"), load(results, "milvus/milvus-latency.json")
    milvus_q = load(results, "retrieval/qasper-dev-milvus.json")
    cpus = key(ingest, "cpus", "ingest.json")
    rows = {r["mode"]: r for r in key(ingest, "throughput", "ingest.json")}
    modes = {}
    for mode in MODES:
        if mode not in rows:
            raise MissingInput(f"capacity: ingest.json has no throughput row for {mode!r}")
        r = rows[mode]
        t = r.get("timings", {})
        parse = sum(t.get(s, 0.0) for s in ("read", "convert", "tree", "chunking"))
        modes[mode] = {
            "core_s_per_chunk": r["seconds"] * cpus / r["chunks"],
            "parse_core_s_per_chunk": parse / r["chunks"],
            "chunks_per_s": r["chunks_per_s"], "cores": cpus,
            "source": f"ingest.json throughput[{mode}]: seconds x cpus / chunks",
        }
    local_run, ray_run = (next(r for r in key(ray, "runs", "ray-ingest.json")
                               if r["executor"] == e) for e in ("local", "ray"))
    sizes = key(scale, "sizes", "scale.json")
    big = sizes[-1]
    scale_build = key(big, "build", "scale.json sizes[-1]")
    q_side = key(milvus_q, "methods.proxy-pointer-milvus.build", milvus_q.get("date", "milvus"))
    return {
        "modes": modes,
        "ray": {"actor_core_s_per_chunk": key(ray_run, "actor_seconds", "ray-ingest.json")
                / ray_run["chunks"],
                "serial_share": key(ray_run, "serial_share", "ray-ingest.json"),
                "driver_s_per_chunk": key(ray_run, "driver_seconds", "ray-ingest.json")
                / ray_run["chunks"],
                "local_seconds": local_run["seconds"],
                "source": "ray-ingest.json runs[ray]: actor_seconds / chunks (default "
                          "embedder, single-threaded actors)"},
        "scale_build": {"chunks": scale_build["chunks"],
                        "core_s_per_chunk": scale_build["seconds"] * key(scale, "cpus",
                                                                         "scale.json")
                        / scale_build["chunks"],
                        "embedder": key(scale, "embedder", "scale.json"),
                        "source": "scale.json sizes[-1].build: seconds x cpus / chunks"},
        "disk": {"bytes_per_chunk": key(big, "disk_mb", "scale.json sizes[-1]") * 1e6
                 / scale_build["chunks"], "chunks": scale_build["chunks"],
                 "source": "scale.json sizes[-1]: disk_mb / build.chunks"},
        "query": [{"chunks": s["build"]["chunks"],
                   "p50_ms": key(s, "query.p50_ms", "scale.json sizes[]"),
                   "p95_ms": key(s, "query.p95_ms", "scale.json sizes[]"),
                   "p50_ms_no_embed": s["query"].get("p50_ms_no_embed"),
                   "rss_mib": s["query"].get("rss_mib")} for s in sizes],
        "milvus": {
            "insert_s_per_chunk": key(milvus, "save_seconds.milvus-lite",
                                      "milvus-latency.json") / key(milvus, "chunks",
                                                                   "milvus-latency.json"),
            "insert_source": "milvus-latency.json: save_seconds['milvus-lite'] / chunks "
                             "(Milvus Lite, one process, 2 cores)",
            "bytes_per_chunk": key(q_side, "index_bytes", "qasper-dev-2026-12-04-milvus.json")
            / key(q_side, "units", "qasper-dev-2026-12-04-milvus.json"),
            "bytes_source": "qasper-dev-2026-12-04-milvus.json methods.proxy-pointer-milvus."
                            "build: index_bytes / units (Milvus Lite's files, all collections)",
        },
    }


# --------------------------------------------------------------------------- model

def ingestion(m: dict, chunks: int) -> dict:
    """Per mode: core-hours, and Ray workers of each size for a one-hour ingestion: the
    driver's serial seconds (measured per chunk on Ray) come first, the parallel work
    spreads over the workers' cores in what is left of the hour; None where the driver
    alone needs the hour."""
    serial = m["ray"]["driver_s_per_chunk"] * chunks
    out = {}
    for mode, c in m["modes"].items():
        core_s = c["core_s_per_chunk"] * chunks
        left = HOUR - serial
        out[mode] = {
            "core_hours": core_s / HOUR, "driver_hours": serial / HOUR,
            "workers": {w: (math.ceil(core_s / left / w) if left > 0 else None)
                        for w in WORKER_CORES},
        }
    return out


def milvus_memory(m: dict, chunks: int) -> dict:
    """Query-node memory (GiB) and nodes per vector index type."""
    raw = chunks * DIMENSION * 4
    scalar = max(m["milvus"]["bytes_per_chunk"] - DIMENSION * 4, 0.0) * chunks
    hnsw_factor = HNSW_LOADING_GIB * 1024 / HNSW_RAW_MIB
    index = {"FLAT": raw,
             "IVF_FLAT": raw + chunks * ID_BYTES + IVF_NLIST * DIMENSION * 4,
             "HNSW": raw * hnsw_factor}
    out = {}
    for kind, vec in index.items():
        gib = (vec + scalar) / 2**30
        out[kind] = {"gib": gib, "querynodes": math.ceil(gib / QUERYNODE_GIB)}
    out["raw_vectors_gib"] = raw / 2**30
    out["scalar_sparse_gib"] = scalar / 2**30
    out["hnsw_factor"] = hnsw_factor
    return out


def latency(m: dict, chunks: int) -> dict:
    """Local-store query latency at ``chunks``: measured where scale.json has that size
    (within 1%), else a power law through the two largest measured sizes."""
    q = m["query"]
    for row in q:
        if abs(row["chunks"] - chunks) <= 0.01 * chunks:
            return {"p50_ms": row["p50_ms"], "p95_ms": row["p95_ms"], "kind": "measured",
                    "chunks_measured": row["chunks"]}
    (a, b) = sorted(q, key=lambda r: r["chunks"])[-2:]
    out: dict[str, Any] = {"kind": "extrapolated"}
    for p in ("p50_ms", "p95_ms"):
        exp = math.log(b[p] / a[p]) / math.log(b["chunks"] / a["chunks"])
        out[p] = b[p] * (chunks / b["chunks"]) ** exp
        out[p.replace("_ms", "_exponent")] = exp
    return out


def model(m: dict) -> dict:
    rows = []
    for n in SIZES:
        lat = latency(m, n)
        rows.append({
            "chunks": n,
            "ingestion": ingestion(m, n),
            "local_disk_gb": m["disk"]["bytes_per_chunk"] * n / 1e9,
            "milvus": milvus_memory(m, n),
            "milvus_insert_core_hours": m["milvus"]["insert_s_per_chunk"] * n / HOUR,
            "latency": lat,
        })
    return {"inputs": m, "sizes": rows}


# --------------------------------------------------------------------------- report

def _n(n: int) -> str:
    return f"{n // 1_000_000}M"


def markdown(out: dict) -> list[str]:
    m, rows = out["inputs"], out["sizes"]
    ray, sb = m["ray"], m["scale_build"]
    lines = [f"# Capacity model: 1M, 10M and 100M chunks ({out['date']})", "",
             "Per-chunk costs measured on one machine (2 cores) and scaled. Markers: **m** "
             "measured, **lin** a measured per-chunk cost times the chunks, **ext** "
             "extrapolated beyond any measurement (assumption under the table). Milvus "
             "numbers follow Milvus's sizing guidance, not a Milvus cluster run.", "",
             "## Measured per-chunk inputs", "",
             "| input | value | from |", "|---|---|---|"]
    for mode, c in m["modes"].items():
        lines.append(f"| ingestion, `{mode}` (parse included) | "
                     f"{1000 * c['core_s_per_chunk']:.2f} core-ms/chunk (parse "
                     f"{1000 * c['parse_core_s_per_chunk']:.2f}) | {c['source']} |")
    lines += [
        f"| check: Ray actors, default | {1000 * ray['actor_core_s_per_chunk']:.2f} "
        f"core-ms/chunk | {ray['source']} |",
        f"| check: 1M build, `{sb['embedder']}` | {1000 * sb['core_s_per_chunk']:.2f} "
        f"core-ms/chunk | {sb['source']} |",
        f"| Ray driver (serial: read, hash, stage, commit) | "
        f"{1000 * ray['driver_s_per_chunk']:.2f} ms/chunk | ray-ingest.json runs[ray]: "
        "driver_seconds / chunks |",
        f"| local store on disk | {m['disk']['bytes_per_chunk']:.0f} B/chunk at "
        f"{m['disk']['chunks']:,} chunks | {m['disk']['source']} |",
        f"| Milvus Lite on disk | {m['milvus']['bytes_per_chunk']:.0f} B/chunk | "
        f"{m['milvus']['bytes_source']} |",
        f"| Milvus Lite insert | {1000 * m['milvus']['insert_s_per_chunk']:.2f} ms/chunk | "
        f"{m['milvus']['insert_source']} |",
    ]
    return lines + _resources(m, rows) + _formulas(m, rows)


def _resources(m: dict, rows: list[dict]) -> list[str]:
    """The resources table: a column per size."""
    lines = ["", "## Resources", "",
             "| | " + " | ".join(_n(r["chunks"]) for r in rows) + " |",
             "|---|" + "---|" * len(rows)]

    def row(label: str, cells: list[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    for mode in m["modes"]:
        row(f"ingest `{mode}`: core-hours (lin)",
            [f"{r['ingestion'][mode]['core_hours']:,.1f}" for r in rows])
        for w in WORKER_CORES:
            row(f"ingest `{mode}` in 1 h: {w}-core Ray workers (lin)",
                [f"{r['ingestion'][mode]['workers'][w]:,}"
                 if r["ingestion"][mode]["workers"][w] is not None else "† none"
                 for r in rows])
    row("local store disk, GB (lin)", [f"{r['local_disk_gb']:,.0f}" for r in rows])
    row("Milvus raw vectors, GiB (lin)", [f"{r['milvus']['raw_vectors_gib']:,.1f}"
                                           for r in rows])
    row("Milvus scalar + BM25 fields, GiB (lin)",
        [f"{r['milvus']['scalar_sparse_gib']:,.1f}" for r in rows])
    for kind in ("FLAT", "IVF_FLAT", "HNSW"):
        row(f"Milvus query-node memory, {kind}, GiB / {QUERYNODE_GIB}-GiB nodes (ext)",
            [f"{r['milvus'][kind]['gib']:,.0f} / {r['milvus'][kind]['querynodes']:,}"
             for r in rows])
    row("ingest: one Ray driver's serial hours (lin)",
        [f"{r['ingestion'][MODES[0]]['driver_hours']:,.2f}" for r in rows])
    row("Milvus Lite insert, hours in one process (lin)",
        [f"{r['milvus_insert_core_hours']:,.1f}" for r in rows])
    row("query p50 / p95 ms, local store, one machine",
        [f"{r['latency']['p50_ms']:.0f} / {r['latency']['p95_ms']:.0f} "
         f"({'m' if r['latency']['kind'] == 'measured' else 'ext'})" for r in rows])
    row("queries / s per core, 1000 / p50 (query CPU taken as its wall time)",
        [f"{1000 / r['latency']['p50_ms']:.0f} "
         f"({'m' if r['latency']['kind'] == 'measured' else 'ext'})" for r in rows])
    return lines


def _formulas(m: dict, rows: list[dict]) -> list[str]:
    """The notes under the table, the formulas and the sources."""
    q = m["query"]
    ext = next(r["latency"] for r in rows if r["latency"]["kind"] == "extrapolated")
    return [
        "",
        "† no number of workers: one driver's serial work (reading and hashing files, "
        "staging results, the commit) takes the hour by itself; shard the update across "
        "drivers (by folder).", "",
        "Measured query latency (local store, `scale.json`, one process, 2 cores): "
        + ", ".join(f"{r['chunks']:,} chunks {r['p50_ms']:.1f} / {r['p95_ms']:.1f} ms"
                    for r in q) + ".", "",
        "## Formulas", "",
        "- Ingestion core-seconds = chunks x core-seconds per chunk (the run's wall seconds "
        "x its cores / chunks: parse, embedding and the store write included; an upper "
        "bound, as it counts both cores busy for the whole run). Ray workers for one hour "
        "= ceil(core-seconds / (3600 - driver seconds) / cores per worker), driver seconds "
        "= chunks x the driver's measured seconds per chunk; the parallel part is assumed "
        "to scale linearly (Ray measured 0.99x the local run on the same 2 cores; the "
        "driver figure comes from one 2,318-chunk run and includes starting the actors).",
        "- Local store disk = chunks x bytes per chunk at 1M (sources, SQLite metadata, "
        "float32 vectors, BM25 arrays, the IVF index).",
        f"- Milvus raw vectors = chunks x {DIMENSION} x 4 B. FLAT holds them as they are; "
        f"IVF_FLAT adds an {ID_BYTES}-byte id per row and {IVF_NLIST} centroids; both are "
        "loaded whole into query-node memory. HNSW = raw x "
        f"{rows[0]['milvus']['hnsw_factor']:.2f}, the sizing tool's loading memory over "
        f"raw size in its example ({HNSW_LOADING_GIB} GB for {HNSW_RAW_MIB} MiB of vectors).",
        "- Milvus insert = chunks x Milvus Lite's seconds per chunk (one embedded process "
        "writing every collection); a cluster's data nodes insert in parallel, which was "
        "not measured.",
        "- Milvus scalar + BM25 fields = chunks x (Milvus Lite bytes per chunk - "
        f"{DIMENSION * 4} B of vector): texts (title, path, crumbs, norm, embed_text, "
        "terms), ints, the sparse BM25 vector, and the side collections (documents, "
        "sources, trees), taken as loaded in memory (no mmap).",
        f"- Query nodes = ceil(memory / {QUERYNODE_GIB} GiB), {QUERYNODE_CORES} cores each; "
        "no replicas, no headroom beyond the sizing tool's factor; the coordinators, "
        "proxy, etcd, MinIO and Pulsar of a cluster come on top (the sizing tool lists "
        "their minimum).",
        f"- Query latency at 10M and 100M: p(N) = p(1M) x (N / 1M)^b with b fitted "
        f"between 100k and 1M (b = {ext['p50_exponent']:.2f} for p50, "
        f"{ext['p95_exponent']:.2f} for p95): one machine, nprobe 64. Dense IVF search "
        "scans nprobe x N / nlist rows with nlist = 2 sqrt(N), so it grows as sqrt(N); "
        "BM25 posting lists grow linearly, and past RAM the memory-mapped files are read "
        "from disk: treat the extrapolation as a floor. Milvus cluster latency was not "
        "measured (Milvus Lite only, 10k chunks: `milvus-latency.json`).",
        "", "## Sources", "",
        *(f"- {name}: {url}" for name, url in SOURCES.items()),
        "- Measured: `benchmarks/results/` ingest/ingest.json, ray/ray-ingest.json, "
        "scale/scale.json, "
        "milvus/milvus-latency.json, retrieval/qasper-dev-milvus.json.",
    ]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=str(RESULTS), help="folder of the measured results")
    p.add_argument("--out-dir", default=str(RESULTS / "capacity"))
    p.add_argument("--name", default="capacity")
    args = p.parse_args(argv)
    out = {"date": time.strftime("%Y-%m-%d"), **model(inputs(Path(args.results))),
           "sources": SOURCES, "environment": environment()}
    lines = markdown(out)
    write_report(args.out_dir, args.name, out, lines)
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
