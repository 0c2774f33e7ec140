"""Crash consistency under SIGKILL: a writer killed at random moments, readers querying.

Per store (a local index directory, and a Milvus Lite file ``milvus:/…/crash.db``) a
writer process runs update cycles and the harness kills it with SIGKILL in about half of
them, then starts a new writer that continues from whatever is committed:

* **Cycles.** Cycle ``k`` changes the document set deterministically from ``(seed, k)``:
  a few new Markdown documents, some rewritten, some removed (:func:`states`, the hash
  embedder, small documents). The writer writes the cycle's files to its folder and runs
  the CLI's write path, :func:`~proxy_pointer.index.update_directory` with ``prune``
  (lock, load, update, ``save_locked``, the store's own commit). It records nothing of its
  own: the harness knows every cycle's exact document set (doc id -> SHA-256), so it can
  name the cycle of any document set it is shown, and a set that is no cycle's is a
  half-written or lost one.
* **Kills.** At a cycle start the harness draws whether to kill in it (``--kill-rate``,
  default 0.5): either at a random moment of the cycle (up to 1.5 x the mean cycle time
  after it starts: parsing, embedding, the commit or just after), or, one kill in three, at
  a random moment of the store's ``write`` (from its start to 1.2 x its mean time, so the
  kill lands before or after the commit point: ``os.replace`` of ``CURRENT``, or moving the
  Milvus alias). The writer prints its phase before each step, so the harness knows where
  a kill landed; ``write`` is wrapped only to print ``commit-begin``/``commit-end``.
* **Recovery.** A new writer opens the index (as a reader, before taking the lock), reports
  the committed document set, then takes the writer lock: the local store's ``flock`` dies
  with its holder; a Milvus lease row outlives it (see the report). Checked after every
  kill: the index opens, and its documents are exactly the last committed cycle's (the
  cycle the kill interrupted, or the one before if the kill came before its commit point);
  anything else counts as lost documents. Recovery time: from the kill until the new
  writer holds the lock (process start and imports included, and split out).
* **Readers** run throughout through :class:`~proxy_pointer.serve.service.Service` (which picks
  up each generation a writer commits; ``refresh_seconds=0``), asking fixed questions,
  each answer pinned to one generation: ``(generation, refs, SHA-256 of the section
  texts)``, and, once per generation, that generation's document set. Local store: separate
  reader processes, as users run them. Milvus Lite serves a file to one process (it holds
  an ``flock`` on it), so its readers are threads in the writer's process, sharing the
  Lite server as every client in a process does; they die with each kill and restart with
  the next writer. The check, afterwards: every generation a reader saw has exactly one
  cycle's document set (a mix of generations has none), the same generation name always
  the same set, a reader never goes back to an older cycle, and every answer equals a
  fresh in-memory index built from that cycle's documents (refs and section texts). The
  report also says how many answers would have failed had they been checked against the
  neighbouring cycle, so the check is shown able to fail.

    python -m benchmarks.robustness.bench_crash [--store local|milvus|both] [--cycles 100]
                                     [--readers 2] [--seed S] [--kill-rate 0.5]
    python -m benchmarks.robustness.bench_crash --cycles 5          # smoke

Writes ``benchmarks/results/crash/crash.{json,md}`` (``--out`` another stem).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import queue
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from ..harness.crash import (
    EMBEDDER,
    Expected,
    check_answers,
    digest_of,
    documents_of,
    reader_main,
    state_digests,
    states,
    writer_main,
)


# --- the harness ------------------------------------------------------------------------
class Child:
    """A child process whose JSON-line events are read on a thread into one queue."""

    def __init__(self, argv: list[str], events: queue.Queue[dict[str, Any]], tag: str,
                 log: Path) -> None:
        self.tag = tag
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log,
                                     cwd=Path(__file__).resolve().parents[2])
        self._thread = threading.Thread(target=self._read, args=(events,), daemon=True)
        self._thread.start()

    def _read(self, events: queue.Queue[dict[str, Any]]) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                ev = json.loads(raw)
            except ValueError:
                continue
            ev["from"] = self.tag
            events.put(ev)
        events.put({"ev": "exit", "from": self.tag, "t": time.time()})

    def kill(self, sig: int = signal.SIGKILL) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, sig)

    def wait(self) -> int:
        rc = self.proc.wait()
        self._thread.join()
        self.log.close()
        return rc


def _me(role: str, location: str, seed: int, cycles: int, **extra: Any) -> list[str]:
    argv = [sys.executable, "-m", "benchmarks.robustness.bench_crash", "--role", role,
            "--location", location, "--seed", str(seed), "--cycles", str(cycles)]
    for k, v in extra.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return argv


def _kill_plan(rng: random.Random, kill_rate: float, cycle: int,
               cycle_times: list[float]) -> dict[str, Any] | None:
    """Whether and when to kill in the cycle that starts now."""
    if rng.random() >= kill_rate:
        return None
    if rng.random() < 1 / 3:  # at a random moment of the store's write, once it starts
        return {"mode": "commit", "cycle": cycle, "at": None}
    mean = statistics.fmean(cycle_times[-20:]) if cycle_times else 0.5
    return {"mode": "cycle", "cycle": cycle, "at": time.time() + rng.uniform(0, 1.5 * mean)}


@dataclasses.dataclass
class _Writer:
    """What the harness saw of one writer process, from its spawn to its exit."""

    spawned: float
    first: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)  # by name
    last: dict[str, Any] = dataclasses.field(default_factory=dict)
    cycle_t0: dict[int, float] = dataclasses.field(default_factory=dict)
    commit_t0: float | None = None
    killed_at: float | None = None
    finished: bool = False


@dataclasses.dataclass
class _StoreRun:
    """One store's run in progress: the kill plan's randomness and what was found."""

    kind: str
    rng: random.Random
    kill_rate: float
    log: Any
    observations: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    kills: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    recoveries: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)
    counts: dict[str, int] = dataclasses.field(default_factory=lambda: {
        "open_failures": 0, "lost": 0, "writer_errors": 0})
    committed: int = 0  # the last cycle the harness saw committed
    cycle_times: list[float] = dataclasses.field(default_factory=list)
    commit_times: list[float] = dataclasses.field(default_factory=list)
    previous_kill: dict[str, Any] | None = None

    def watch(self, writer: Child, events: queue.Queue[dict[str, Any]]) -> _Writer:
        """Follow one writer's events until it exits, killing it where the plan says."""
        w = _Writer(time.time())
        plan: dict[str, Any] | None = None
        while True:
            if plan is not None and plan["at"] is not None and time.time() >= plan["at"]:
                writer.kill()
                w.killed_at, plan = time.time(), None
            timeout = (None if plan is None or plan["at"] is None
                       else max(0.0, plan["at"] - time.time()))
            try:
                ev = events.get(timeout=timeout)
            except queue.Empty:
                continue
            if ev["from"] != "w" or ev["ev"] in ("gen", "answer", "reader-error"):
                self.observations.append(ev)
            elif ev["ev"] == "exit":
                return w
            else:
                plan = self._writer_event(w, ev, plan)

    def _writer_event(self, w: _Writer, ev: dict[str, Any], plan: dict[str, Any] | None
                      ) -> dict[str, Any] | None:
        """Note one of the writer's events; the kill plan, drawn at a cycle's start."""
        name = ev["ev"]
        w.first.setdefault(name, ev)
        w.last = ev
        if name == "opened" and ev["cycle"] is not None:
            self.committed = max(self.committed, ev["cycle"])
        elif name == "cycle":
            w.cycle_t0[ev["cycle"]] = ev["t"]
            if plan is None and w.killed_at is None:
                plan = _kill_plan(self.rng, self.kill_rate, ev["cycle"], self.cycle_times)
        elif name == "commit-begin":
            w.commit_t0 = ev["t"]
            if plan is not None and plan["at"] is None:
                mean = statistics.fmean(self.commit_times[-20:]) if self.commit_times else 0.2
                plan["at"] = time.time() + self.rng.uniform(0, 1.2 * mean)
        elif name == "commit-end":
            self.committed = ev["cycle"]
            if w.commit_t0 is not None:
                self.commit_times.append(ev["t"] - w.commit_t0)
        elif name == "cycle-done" and ev["cycle"] in w.cycle_t0:
            self.cycle_times.append(ev["t"] - w.cycle_t0[ev["cycle"]])
        elif name == "finished":
            w.finished = True
        return plan

    def check_opened(self, attempt: int, rc: int, w: _Writer) -> None:
        """The index as this writer found it: after a kill, the recovery."""
        opened = w.first.get("opened")
        if opened is None:
            if w.killed_at is None or "start" in w.first:
                self.counts["open_failures"] += 1
                self.problems.append(
                    f"writer {attempt}: exited {rc} before opening the index "
                    f"({w.first.get('open-failed', {}).get('error', w.last)})")
        elif opened["cycle"] is None:
            self.counts["lost"] += 1
            self.problems.append(f"writer {attempt}: the committed documents are no cycle's "
                                 f"(last committed: {self.committed})")
        pk = self.previous_kill
        if pk is None or opened is None:
            return
        pk["found"] = opened["cycle"]
        if opened["cycle"] is not None and opened["cycle"] not in pk["allowed"]:
            self.counts["lost"] += 1
            self.problems.append(f"kill in cycle {pk['cycle']} at {pk['phase']}: committed "
                                 f"cycle {opened['cycle']}, expected one of {pk['allowed']}")
        if "locked" in w.first:
            first = w.first
            self.recoveries.append({
                "total_s": first["locked"]["t"] - pk["at"],
                "start_s": first["start"]["t"] - pk["at"],
                "import_s": first["imported"]["t"] - first["start"]["t"],
                "open_s": opened["seconds"],
                "lock_wait_s": first["locked"]["seconds"],
            })
        self.previous_kill = None

    def check_clean_exit(self, attempt: int, rc: int, w: _Writer, stderr_log: Path) -> None:
        """A writer nobody killed must finish its cycles and exit 0."""
        if rc != 0 or not w.finished:
            self.counts["writer_errors"] += 1
            # the work folder may be temporary: the end of the shared log goes with it
            tail = [ln for ln in stderr_log.read_text(errors="replace").splitlines()
                    if ln.strip()][-6:] if stderr_log.exists() else []
            self.problems.append(f"writer {attempt} failed (rc {rc}, last "
                                 f"{w.last.get('ev')}): see {stderr_log}; its end: "
                                 + " | ".join(tail))

    def record_kill(self, w: _Writer) -> None:
        """Where a kill landed, and which cycles may be committed after it."""
        assert w.killed_at is not None
        phase = w.last.get("ev", "spawned")
        committed = self.committed
        kcycle = int(w.last.get("cycle", committed + 1 if phase not in ("opened", "locked")
                                else committed))
        if phase in ("commit-end", "cycle-done"):
            allowed = [kcycle]
        elif phase == "commit-begin":
            allowed = [kcycle - 1, kcycle]
        elif phase in ("cycle", "files"):
            allowed = [kcycle - 1]
        else:  # before the first cycle of this writer
            allowed = [committed]
        kill = {"cycle": kcycle, "phase": phase, "allowed": allowed, "at": w.killed_at,
                "into_cycle_s": round(w.killed_at - w.cycle_t0.get(kcycle, w.spawned), 4),
                "since_commit_begin_s": (round(w.killed_at - w.commit_t0, 4)
                                         if phase == "commit-begin" and w.commit_t0 else None)}
        self.kills.append(kill)
        self.previous_kill = kill
        self.log(f"  {self.kind}: kill {len(self.kills)} in cycle {kcycle} at {phase}")


def run_store(kind: str, *, cycles: int, readers: int, seed: int, work: Path,
              kill_rate: float = 0.5, reader_pause: float = 0.02,
              cycle_pause: float = 0.3, log: Any = print) -> dict[str, Any]:
    """One store's run (module docstring): counts, kills, recoveries and what readers saw."""
    work.mkdir(parents=True, exist_ok=True)
    location = str(work / "index") if kind == "local" else f"milvus:{work / 'crash.db'}"
    run = _StoreRun(kind, random.Random(f"{seed}:kills:{kind}"), kill_rate, log)
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    stderr_log = work / "stderr.log"
    writer_extra: dict[str, Any] = {"docs": work / "docs", "reader_pause": reader_pause,
                                    "cycle_pause": cycle_pause,
                                    "reader_threads": readers if kind == "milvus" else 0}
    reader_procs = [Child(_me("reader", location, seed, cycles, name=f"r{i}",
                              reader_pause=reader_pause), events, f"r{i}", stderr_log)
                    for i in range(readers if kind == "local" else 0)]
    t_start = time.time()
    attempts = 0
    finished = False
    while not finished and attempts < 4 * cycles + 10:
        attempts += 1
        writer = Child(_me("writer", location, seed, cycles, **writer_extra), events, "w",
                       stderr_log)
        w = run.watch(writer, events)
        finished = w.finished
        rc = writer.wait()
        run.check_opened(attempts, rc, w)
        if w.killed_at is None:
            run.check_clean_exit(attempts, rc, w, stderr_log)
        else:
            run.record_kill(w)
    for c in reader_procs:
        c.kill(signal.SIGTERM)
    for c in reader_procs:
        c.wait()
    while not events.empty():
        ev = events.get_nowait()
        if ev["ev"] in ("gen", "answer", "reader-error"):
            run.observations.append(ev)
    final = _final_check(location, seed, cycles)
    if final["problem"]:
        run.problems.append(final["problem"])
        run.counts["open_failures" if final["problem"].startswith("open") else "lost"] += 1
    return {"kind": kind, "location": location, "cycles": cycles, "committed": run.committed,
            "writers": attempts, "kills": run.kills, "recoveries": run.recoveries,
            **run.counts, "problems": run.problems, "observations": run.observations,
            "final": final, "seconds": time.time() - t_start, "cycle_times": run.cycle_times,
            "commit_times": run.commit_times, "readers": readers}


def _final_check(location: str, seed: int, cycles: int) -> dict[str, Any]:
    """The harness opens the index itself once every writer and reader is gone."""
    from proxy_pointer.embeddings.factory import make_embedder
    from proxy_pointer.index import Index

    try:
        idx = Index.load(location, embedder=make_embedder(EMBEDDER))
    except Exception as e:
        return {"problem": f"open failed at the end: {type(e).__name__}: {e}"}
    docs = documents_of(idx)
    cycle = state_digests(seed, states(seed, cycles)).get(digest_of(docs))
    out: dict[str, Any] = {"generation": idx.generation, "documents": len(docs),
                           "cycle": cycle, "problem": None}
    if cycle != cycles:
        out["problem"] = f"at the end the index holds cycle {cycle}, expected {cycles}"
    if "milvus:" not in location:
        root = Path(location)
        out["files"] = {"generations": len(list(root.glob("gen-*"))),
                        "segments": len(list((root / "segments").iterdir())),
                        "leftover_tmp": len(list(root.glob(".tmp-*")))
                        + len(list((root / "segments").glob(".tmp-*")))}
    return out


# --- the report ------------------------------------------------------------------------------
def summarize(run: dict[str, Any], checked: dict[str, Any]) -> dict[str, Any]:
    kills = run["kills"]
    in_commit = [k for k in kills if k["phase"] == "commit-begin"]
    rec = run["recoveries"]

    def mean(key: str) -> float | None:
        return round(statistics.fmean(r[key] for r in rec), 3) if rec else None

    return {
        "store": run["kind"], "cycles": run["committed"], "writers": run["writers"],
        "kills": len(kills), "kills_in_commit": len(in_commit),
        "in_commit_before_commit_point": sum(1 for k in in_commit
                                             if k.get("found") == k["cycle"] - 1),
        "in_commit_after_commit_point": sum(1 for k in in_commit if k.get("found") == k["cycle"]),
        "kill_phases": {p: sum(1 for k in kills if k["phase"] == p)
                        for p in sorted({k["phase"] for k in kills})},
        "readers": run["readers"], "answers_checked": checked["answers"],
        "generations_seen": checked["generations_seen"], "cycles_seen": checked["cycles_seen"],
        "mismatches": checked["mismatches"],
        "hybrid_off_reference": checked["hybrid_off_reference"],
        "hybrid_examples": checked["hybrid_examples"],
        "reader_errors": checked["reader_errors"],
        "would_fail_against_previous_cycle": checked["would_fail_against_previous_cycle"],
        "lost_documents": run["lost"], "open_failures": run["open_failures"],
        "writer_errors": run["writer_errors"],
        "recovery_s_mean": mean("total_s"),
        "recovery_s_max": round(max(r["total_s"] for r in rec), 3) if rec else None,
        "process_start_s_mean": mean("start_s"), "import_s_mean": mean("import_s"),
        "open_s_mean": mean("open_s"),
        "lock_wait_s_mean": mean("lock_wait_s"),
        "lock_wait_s_max": round(max(r["lock_wait_s"] for r in rec), 3) if rec else None,
        "cycle_s_mean": (round(statistics.fmean(run["cycle_times"]), 3)
                         if run["cycle_times"] else None),
        "commit_s_mean": (round(statistics.fmean(run["commit_times"]), 3)
                          if run["commit_times"] else None),
        "seconds": round(run["seconds"], 1), "reference_s": checked.get("reference_s"),
        "final": run["final"],
        "problems": run["problems"][:20], "mismatch_examples": checked["examples"],
    }


_COLUMNS = [("store", "store"), ("cycles", "cycles"), ("kills", "kills"),
            ("kills_in_commit", "kills in commit (before / after commit point)"),
            ("readers", "readers"), ("answers_checked", "answers checked"),
            ("mismatches", "mismatches"),
            ("hybrid_off_reference", "hybrid answers off the reference"),
            ("lost_documents", "lost documents"),
            ("open_failures", "open failures"), ("reader_errors", "reader errors"),
            ("recovery_s_mean", "mean recovery s"),
            ("lock_wait_s_mean", "mean lock wait s")]


def markdown(rows: list[dict[str, Any]], meta: dict[str, Any]) -> list[str]:
    out = ["# Crash consistency: SIGKILLed writers, concurrent readers", "",
           f"`python -m benchmarks.robustness.bench_crash {meta['argv']}`: "
           f"seed {meta['seed']}, kill "
           f"rate {meta['kill_rate']}, {meta['cpus']} CPUs, {meta['seconds']:.0f} s in all. "
           "See the module docstring for what is checked.", "",
           "| " + " | ".join(h for _, h in _COLUMNS) + " |",
           "|" + "---|" * len(_COLUMNS)]
    for r in rows:
        cells = []
        for key, _ in _COLUMNS:
            v = r[key]
            if key == "kills_in_commit":
                v = (f"{v} ({r['in_commit_before_commit_point']} / "
                     f"{r['in_commit_after_commit_point']})")
            cells.append("-" if v is None else str(v))
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    for r in rows:
        out += [f"**{r['store']}**: {r['writers']} writer processes; kills by the writer's last "
                f"phase: {r['kill_phases']}; mean cycle {r['cycle_s_mean']} s, mean store "
                f"write {r['commit_s_mean']} s; recovery (kill to lock held) mean "
                f"{r['recovery_s_mean']} s, max {r['recovery_s_max']} s, of which process "
                f"start {r['process_start_s_mean']} s, imports {r['import_s_mean']} s, open "
                f"{r['open_s_mean']} s, lock wait "
                f"{r['lock_wait_s_mean']} s (max {r['lock_wait_s_max']}); "
                f"{r['generations_seen']} generations seen by readers ({r['cycles_seen']} "
                f"cycles); {r['would_fail_against_previous_cycle']} of the answers differ from "
                f"the previous cycle's (what a stale or mixed view would show); reader errors "
                f"{r['reader_errors']}, writer errors {r['writer_errors']}; {r['seconds']} s, "
                f"reference run {r['reference_s']} s; final: "
                f"{json.dumps(r['final'])}.", ""]
        for p in r["problems"] + r["mismatch_examples"]:
            out.append(f"- {p}")
        if r["store"] == "milvus" and r["hybrid_off_reference"]:
            out += ["", f"Milvus: {r['hybrid_off_reference']} of {r['answers_checked']} default "
                    "(hybrid) answers differ from what the same generation answered in the "
                    "reference run, while every dense-only answer and every document set is "
                    "exact. Milvus's BM25 function weighs terms with statistics over every "
                    "row of the chunks collection, so rows another writer has inserted and "
                    "flushed but not committed (or a killed writer left, until the next "
                    "commit collects them) change a committed generation's lexical ranking. "
                    "Examples:", ""]
            out += [f"- {e}" for e in r["hybrid_examples"][:3]]
        out.append("")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--store", choices=["local", "milvus", "both"], default="both")
    ap.add_argument("--cycles", type=int, default=100)
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--kill-rate", type=float, default=0.5)
    ap.add_argument("--reader-pause", type=float, default=0.02,
                    help="seconds a reader sleeps between questions")
    ap.add_argument("--cycle-pause", type=float, default=0.3,
                    help="seconds the writer waits after each cycle, so that readers see "
                         "every generation however fast a cycle commits")
    ap.add_argument("--out", default=None,
                    help="result stem under benchmarks/results (default crash, or "
                         "crash-smoke below 100 cycles)")
    ap.add_argument("--out-dir", default=None, help="where results go (default "
                    "benchmarks/results)")
    ap.add_argument("--work", default=None, help="working folder (default: a temporary one)")
    ap.add_argument("--role", choices=["harness", "writer", "reader"], default="harness",
                    help=argparse.SUPPRESS)
    ap.add_argument("--location", help=argparse.SUPPRESS)
    ap.add_argument("--docs", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--reader-threads", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.role == "writer":
        # Exit at once: reader threads blocked in a Milvus Lite call can hang the
        # interpreter's shutdown (seen once in 100 cycles), and nothing is left to flush.
        rc = writer_main(args)
        sys.stdout.flush()
        os._exit(rc)
    if args.role == "reader":
        return reader_main(args)

    from ..common import RESULTS, cpus, environment, write_report

    t0 = time.time()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="pp-crash-"))
    kinds = ["local", "milvus"] if args.store == "both" else [args.store]
    rows, runs = [], {}
    for kind in kinds:
        expected = Expected(kind, args.seed, states(args.seed, args.cycles),
                            work / f"{kind}-reference")
        print(f"{kind}: {args.cycles} cycles, {args.readers} readers ...", flush=True)
        run = run_store(kind, cycles=args.cycles, readers=args.readers, seed=args.seed,
                        work=work / kind, kill_rate=args.kill_rate,
                        reader_pause=args.reader_pause, cycle_pause=args.cycle_pause,
                        log=lambda m: print(m, flush=True))
        checked = check_answers(run, args.seed, expected)
        checked["reference_s"] = round(expected.seconds, 1)
        rows.append(summarize(run, checked))
        runs[kind] = {k: run[k] for k in ("kills", "recoveries")}
        print(json.dumps({k: v for k, v in rows[-1].items()
                          if k not in ("problems", "mismatch_examples")}), flush=True)
    meta = {"argv": " ".join(sys.argv[1:] if argv is None else argv), "seed": args.seed,
            "kill_rate": args.kill_rate, "cpus": cpus(), "seconds": time.time() - t0}
    stem = args.out or ("crash" if args.cycles >= 100 else "crash-smoke")
    data = {"meta": meta, "environment": environment("pymilvus", "milvus-lite"),
            "stores": rows, "kills": runs}
    paths = write_report(Path(args.out_dir) if args.out_dir else RESULTS / "crash", stem, data,
                         markdown(rows, meta))
    print("\n".join(markdown(rows, meta)))
    print(f"wrote {paths['json']} and {paths['md']}")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    bad = sum(r["mismatches"] + r["lost_documents"] + r["open_failures"] + r["writer_errors"]
              + r["reader_errors"] for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
