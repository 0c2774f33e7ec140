"""Load test of the HTTP API: concurrent ``/query`` requests while ``/index`` commits.

The whole qasper-dev corpus but a few held-out papers is indexed (chunk vectors from the
embedding cache) and saved; ``proxy-pointer serve`` then runs as a separate process on
127.0.0.1, exactly as a user would start it: it loads the MiniLM model the index names and
embeds each query live. A separate process, rather than uvicorn in a thread here, so the
clients do not share the server's interpreter (and its GIL) and the latencies are what a
client of a real server sees. ``--clients`` threads send ``--requests`` questions from the
dataset (whole-corpus search, default settings); halfway through, ``POST /index`` adds the
held-out papers (server-side paths under ``--docs-root``), which the server parses and
embeds while it keeps answering.

Checks: every response is 200; every response names the generation it read
(``X-Index-Generation``) and its sections are exactly what that generation answers for the
question (each question is asked once before the load on the old generation and once after
on the new one, as references), so no response mixed generations or saw a half-written one.

    python -m benchmarks.speed.bench_serve [--requests 2000] [--clients 8]

Writes ``benchmarks/results/serve/serve-load.{json,md}``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx

from proxy_pointer import Index
from proxy_pointer.embeddings import CachedEmbedder, make_embedder

from ..common import DATA, RESULTS, ROOT, environment, percentiles, write_report

HEADER = "X-Index-Generation"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _latency(values: list[float]) -> dict[str, float]:
    """p50, p95, p99 and max of ``values`` (seconds) in ms, to 0.1 ms; 0.0 for none."""
    return percentiles(values, (50, 95, 99, 100), scale=1000.0, ndigits=1, empty=0.0)


def _answer(body: dict) -> list[str]:
    return [c["ref"] for c in body["contexts"]]


def _arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default=str(DATA / "qasper-dev"))
    ap.add_argument("--cache-dir", default="/work/bench-cache", help="embedding cache folder")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--questions", type=int, default=500, help="distinct questions asked")
    ap.add_argument("--held-out", type=int, default=4, help="papers the update adds")
    ap.add_argument("--deadline", type=float, default=900.0, help="seconds for the load phase")
    ap.add_argument("--out", default=str(RESULTS / "serve" / "serve-load"),
                    help="output path without suffix: writes OUT.json and OUT.md")
    return ap.parse_args()


def _questions(ds: Path, n_questions: int, n_held: int) -> tuple[list[str], list[str]]:
    """The held-out papers' files and the questions asked, theirs first: their answers
    change with the update."""
    docs = ds / "docs"
    rows = [json.loads(line) for line in open(ds / "questions.jsonl")]
    rng = random.Random(0)
    papers = sorted({r["doc_id"] for r in rows if (docs / f"{r['doc_id']}.md").exists()})
    held = sorted(rng.sample(papers, n_held))
    pool = [r["question"] for r in rows if r["doc_id"] in held]
    rest = [r["question"] for r in rows if r["doc_id"] not in held]
    rng.shuffle(rest)
    return [f"{d}.md" for d in held], list(dict.fromkeys(pool + rest))[:n_questions]


def _start_server(work: Path, docs: Path, token: str) -> tuple[subprocess.Popen, str, Any]:
    """``proxy-pointer serve`` on a free port of 127.0.0.1: the process, its URL, its log."""
    port = _free_port()
    env = {**os.environ, "PROXY_POINTER_TOKEN": token, "HF_HUB_OFFLINE": "1",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    log = open(work / "server.log", "w")
    server = subprocess.Popen(
        [sys.executable, "-m", "proxy_pointer.cli", "serve", "--index", str(work / "idx"),
         "--port", str(port), "--docs-root", str(docs), "--llm", "none",
         "--log-level", "warning"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    return server, f"http://127.0.0.1:{port}", log


def _wait_healthy(http: httpx.Client, server: subprocess.Popen, work: Path) -> float:
    """Seconds until ``/healthz`` answers 200."""
    t = time.perf_counter()
    while True:
        if server.poll() is not None:
            raise SystemExit(f"the server exited: {(work / 'server.log').read_text()}")
        try:
            if http.get("/healthz").status_code == 200:
                return time.perf_counter() - t
        except httpx.TransportError:
            pass
        time.sleep(0.1)


def _reference(http: httpx.Client, questions: list[str]
               ) -> tuple[str, dict[str, list[str]], set[str]]:
    """Every question asked alone: the generation read, each answer, the documents."""
    gens, answers = set(), {}
    for q in questions:
        r = http.post("/query", json={"question": q})
        r.raise_for_status()
        gens.add(r.headers[HEADER])
        answers[q] = _answer(r.json())
    (gen,) = gens
    ids = {d["doc_id"] for d in http.get("/documents").json()["documents"]}
    return gen, answers, ids


def _checked(results: list[dict], refs: dict[str, tuple[dict[str, list[str]], set[str]]]
             ) -> tuple[int, int]:
    """Responses whose sections are not their generation's answer, and responses naming a
    generation that was never seen alone."""
    mixed = unknown = 0
    for r in (r for r in results if r["status"] == 200):
        if r["generation"] not in refs:
            unknown += 1
            continue
        answers, ids = refs[r["generation"]]
        if r["refs"] != answers[r["question"]] or any(
                ref.rpartition("#")[0] not in ids for ref in r["refs"]):
            mixed += 1
    return mixed, unknown


def main() -> int:
    args = _arguments()
    ds = Path(args.dataset)
    docs = ds / "docs"
    if not docs.is_dir():
        print(f"{ds}: no dataset here (needs docs/ and questions.jsonl)", file=sys.stderr)
        return 2
    held_files, questions = _questions(ds, args.questions, args.held_out)
    work = Path(tempfile.mkdtemp(prefix="bench-serve-"))
    t0 = time.perf_counter()
    embedder = CachedEmbedder(make_embedder("minilm"), args.cache_dir)
    idx = Index.build([docs], exclude=tuple(held_files), embedder=embedder)
    idx.save(work / "idx")
    build_s = time.perf_counter() - t0
    print(f"index: {len(idx)} documents, {len(idx.reader.chunks)} chunks in {build_s:.1f}s; "
          f"held out {held_files}", file=sys.stderr)
    token = secrets.token_urlsafe(16)
    server, base, log = _start_server(work, docs, token)
    try:
        with httpx.Client(base_url=base, timeout=60) as http:
            startup_s = _wait_healthy(http, server, work)
            gen_a, ref_a, docs_a = _reference(http, questions)  # also warms every cache
            results, update = _load(base, questions, args, token, held_files)
            gen_b, ref_b, docs_b = _reference(http, questions)
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
    refs = {gen_a: (ref_a, docs_a), gen_b: (ref_b, docs_b)}
    mixed, unknown = _checked(results, refs)
    ok = [r for r in results if r["status"] == 200]
    errors = len(results) - len(ok) + (args.requests - len(results))
    wall = max(r["end"] for r in results) - min(r["start"] for r in results)
    during = [r["seconds"] for r in ok
              if r["end"] >= update["start"] and r["start"] <= update["end"]]
    env = environment("fastapi", "uvicorn", "httpx")
    report = {
        "dataset": ds.name, "documents_before": len(docs_a), "documents_after": len(docs_b),
        "chunks_before": len(idx.reader.chunks),
        "index_build_seconds_cached_vectors": round(build_s, 1),
        "server": "proxy-pointer serve (one uvicorn process, thread pool), 127.0.0.1",
        "server_startup_seconds": round(startup_s, 1), "cpus": env["cpus"],
        "clients": args.clients, "requests": args.requests, "distinct_questions": len(questions),
        "completed": len(results), "errors": errors,
        "generations": {"before": gen_a, "after": gen_b,
                        "responses": {g: sum(r["generation"] == g for r in ok) for g in refs}},
        "responses_not_matching_their_generation": mixed,
        "responses_with_unknown_generation": unknown,
        "questions_whose_answer_changed_with_the_update": sum(
            ref_a[q] != ref_b[q] for q in questions),
        "latency_ms": _latency([r["seconds"] for r in ok]),
        "latency_ms_while_updating": _latency(during), "requests_while_updating": len(during),
        "throughput_rps": round(len(ok) / wall, 1), "load_seconds": round(wall, 1),
        "update": {k: v for k, v in update.items() if k not in ("start", "end")},
        "environment": env,
    }
    out = Path(args.out).with_suffix("")
    lines = _markdown(report, held_files)
    write_report(out.parent, out.name, report, lines)
    print("\n".join(lines))
    return 0 if errors == 0 and mixed == 0 and unknown == 0 else 1


def _markdown(report: dict[str, Any], held_files: list[str]) -> list[str]:
    lat, upd, u = report["latency_ms"], report["latency_ms_while_updating"], report["update"]
    gens = report["generations"]
    gen_a, gen_b = gens["before"], gens["after"]
    return [
        f"# HTTP load: {report['dataset']}, {report['documents_before']} documents "
        f"({report['chunks_before']} chunks), {report['clients']} clients, "
        f"{report['requests']} `/query` requests, one `/index` update mid-run; "
        f"{report['cpus']} CPUs, server and clients on one machine",
        "",
        "| | value |",
        "|---|---|",
        f"| errors | {report['errors']} of {report['requests']} |",
        f"| responses not matching their generation's answer | "
        f"{report['responses_not_matching_their_generation']} "
        f"(unknown generation: {report['responses_with_unknown_generation']}) |",
        f"| responses per generation | {gen_a}: {gens['responses'][gen_a]}, "
        f"{gen_b}: {gens['responses'][gen_b]} |",
        f"| throughput | {report['throughput_rps']} req/s ({report['load_seconds']} s) |",
        f"| latency p50 / p95 / p99 ms | {lat['p50']} / {lat['p95']} / {lat['p99']} |",
        f"| latency while updating p50 / p95 / p99 ms ({report['requests_while_updating']} "
        f"requests) | {upd['p50']} / {upd['p95']} / {upd['p99']} |",
        f"| update (`POST /index`, {len(held_files)} papers) | {u.get('status')}, "
        f"{u.get('seconds')} s, {u.get('embedded')} chunks embedded, "
        f"{report['documents_before']} -> {report['documents_after']} documents |",
        f"| questions whose answer changed with the update | "
        f"{report['questions_whose_answer_changed_with_the_update']} of "
        f"{report['distinct_questions']} |",
        "",
        "Latency is measured by the clients (request sent to response read). Each response's "
        f"`{HEADER}` names the generation it read; its sections are checked against that "
        "generation's answer to the same question, asked alone before and after the run.",
    ]


def _load(base: str, questions: list[str], args: argparse.Namespace, token: str,
          held_files: list[str]) -> tuple[list[dict], dict]:
    """``args.requests`` queries from ``args.clients`` threads; the update starts halfway."""
    counter = itertools.count()
    lock = threading.Lock()
    results: list[dict] = []
    update: dict = {"start": float("inf"), "end": float("inf")}
    updater: list[threading.Thread] = []
    deadline = time.perf_counter() + args.deadline

    def post_update() -> None:
        update["start"] = time.perf_counter()
        try:
            with httpx.Client(base_url=base, timeout=600) as http:
                r = http.post("/index", json={"paths": held_files},
                              headers={"Authorization": f"Bearer {token}"})
            update.update(status=r.status_code, **(r.json() if r.status_code == 200
                                                   else {"error": r.text}))
        finally:
            update["end"] = time.perf_counter()

    def client() -> None:
        with httpx.Client(base_url=base, timeout=120) as http:
            while time.perf_counter() < deadline:
                with lock:
                    n = next(counter)
                    if n == args.requests // 2 and not updater:
                        updater.append(threading.Thread(target=post_update))
                        updater[0].start()
                if n >= args.requests:
                    return
                q = questions[n % len(questions)]
                t = time.perf_counter()
                try:
                    r = http.post("/query", json={"question": q})
                    row = {"status": r.status_code, "generation": r.headers.get(HEADER),
                           "refs": _answer(r.json()) if r.status_code == 200 else None}
                except httpx.HTTPError as e:
                    row = {"status": type(e).__name__, "generation": None, "refs": None}
                end = time.perf_counter()
                row.update(question=q, start=t, end=end, seconds=end - t)
                with lock:
                    results.append(row)

    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for th in updater:
        th.join()
    return results, update


if __name__ == "__main__":
    sys.exit(main())
