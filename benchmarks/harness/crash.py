"""The machinery of the crash benchmark (``robustness/bench_crash``), which the crash
tests share: the document set of every cycle (deterministic from the seed), the writer and
reader processes, and the check of what readers saw against the cycles' document sets."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

EMBEDDER = "hash:64"
QUESTIONS = [
    "How are harbour tides measured?",
    "What do the orchard ledgers record about apricot harvests?",
    "Which engines power the lighthouse?",
    "Granite quarry safety rules",
    "When does the glacier survey begin?",
    "What is said about copper kettles and tea?",
]
_TOPICS = ["harbour", "tides", "orchard", "ledgers", "apricot", "harvest", "engines",
           "lighthouse", "granite", "quarry", "safety", "glacier", "survey", "copper",
           "kettles", "tea", "lantern", "meadow", "bridge", "archive", "falcon", "pottery"]
_WORDS = ("the a of and to in is was for on with as by at from that this which are were be "
          "records measure season keeper rules north south river stone winter summer noon "
          "report village council storage market wind rain morning evening workers crew "
          "map notes careful steady ancient modern small large old new quiet busy").split()
_LOCK_TIMEOUT = 300.0  # seconds a writer waits for the writer lock


# --- the document sets ------------------------------------------------------------------
def doc_text(seed: int, doc_id: str, version: int) -> str:
    """A small Markdown document, a function of its id and version."""
    rng = random.Random(f"{seed}/{doc_id}/{version}")
    topic = rng.sample(_TOPICS, 3)
    lines = [f"# {topic[0].title()} {topic[1]} notes ({doc_id} v{version})", ""]
    for s in range(rng.randint(2, 4)):
        head = rng.choice(_TOPICS)
        lines += [f"## {head.title()} {s + 1}", ""]
        words = [rng.choice(_WORDS + topic + [head]) for _ in range(rng.randint(25, 60))]
        lines += [" ".join(words).capitalize() + ".", ""]
    return "\n".join(lines)


def states(seed: int, cycles: int) -> list[dict[str, int]]:
    """``doc_id -> version`` after each cycle; ``[0]`` is empty (no index yet). Every cycle
    adds at least one document, so no two cycles have the same set."""
    out: list[dict[str, int]] = [{}]
    for k in range(1, cycles + 1):
        rng = random.Random(f"{seed}:cycle:{k}")
        docs = dict(out[-1])
        existing = sorted(docs)
        if existing:
            n_remove = rng.randint(0, 2) + (1 if len(existing) > 24 else 0)
            gone = rng.sample(existing, min(n_remove, max(0, len(existing) - 6)))
            for d in gone:
                del docs[d]
            kept = sorted(docs)
            for d in rng.sample(kept, min(len(kept), rng.randint(0, 2))):
                docs[d] = k
        for j in range(8 if k == 1 else rng.randint(1, 3)):
            docs[f"d{k:04d}-{j}.md"] = k
        out.append(docs)
    return out


def texts_of(seed: int, state: dict[str, int]) -> dict[str, str]:
    return {d: doc_text(seed, d, v) for d, v in sorted(state.items())}


def digest_of(shas: dict[str, str]) -> str:
    return hashlib.sha256("\n".join(f"{d} {h}" for d, h in sorted(shas.items()))
                          .encode()).hexdigest()


def state_digests(seed: int, all_states: list[dict[str, int]]) -> dict[str, int]:
    """Digest of each cycle's ``doc_id -> sha256`` -> the cycle."""
    return {digest_of({d: hashlib.sha256(t.encode()).hexdigest()
                       for d, t in texts_of(seed, s).items()}): k
            for k, s in enumerate(all_states)}


def answer_key(payload: dict[str, Any]) -> tuple[list[str], str]:
    """What an answer is compared on: its refs, in order, and the section texts' hash."""
    contexts = payload["contexts"]
    texts = "\x00".join(c["text"] for c in contexts)
    return [c["ref"] for c in contexts], hashlib.sha256(texts.encode()).hexdigest()[:16]


# --- the processes ----------------------------------------------------------------------
class Emitter:
    """JSON lines on stdout, one ``write`` each, flushed (a kill never splits one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, ev: str, **fields: Any) -> None:
        line = json.dumps({"ev": ev, "t": time.time(), **fields}, separators=(",", ":"))
        with self._lock:
            os.write(1, (line + "\n").encode())


def documents_of(idx: Any) -> dict[str, str]:
    return {d: idx.reader.documents[d].sha256 for d in idx.reader.documents}


def reader_loop(location: str, emit: Emitter, name: str, pause: float,
                stop: threading.Event | None = None) -> None:
    """Ask the questions forever through a Service; report answers and generations."""
    from proxy_pointer.embeddings.factory import make_embedder
    from proxy_pointer.errors import IndexNotFoundError
    from proxy_pointer.serve.service import Service

    emb = make_embedder(EMBEDDER)
    while True:
        try:
            svc = Service(location, embedder=emb, refresh_seconds=0.0)
            break
        except IndexNotFoundError:
            time.sleep(0.1)
    seen: set[str] = set()
    n = 0
    while stop is None or not stop.is_set():
        qi = n % len(QUESTIONS)
        n += 1
        try:
            with svc.pinned() as idx:
                gen = idx.generation
                if gen not in seen:
                    docs = documents_of(idx)
                    seen.add(gen)
                    emit("gen", reader=name, gen=gen, digest=digest_of(docs), n=len(docs))
                refs, sha = answer_key(svc.query(QUESTIONS[qi]))
                dense = svc.config().tuned(hybrid=False)
                drefs, dsha = answer_key(idx.retrieve(QUESTIONS[qi], dense).to_dict())
            emit("answer", reader=name, gen=gen, q=qi, refs=refs, sha=sha, drefs=drefs,
                 dsha=dsha)
        except Exception as e:
            emit("reader-error", reader=name, error=f"{type(e).__name__}: {e}"[:300])
            time.sleep(0.2)
        if pause:
            time.sleep(pause)


def writer_main(args: argparse.Namespace) -> int:
    """Open, take the lock, then run cycles until ``args.cycles`` is committed."""
    emit = Emitter()
    emit("start")
    from proxy_pointer.embeddings.factory import make_embedder
    from proxy_pointer.index import Index, update_directory
    from proxy_pointer.stores import open_store

    all_states = states(args.seed, args.cycles)
    by_digest = state_digests(args.seed, all_states)
    emb = make_embedder(EMBEDDER)
    store = open_store(args.location)
    t0 = time.time()
    emit("imported")
    try:
        if store.exists():
            idx = Index.load(store, embedder=emb)
            gen, docs = idx.generation, documents_of(idx)
            del idx
        else:
            gen, docs = "", {}
    except Exception as e:
        emit("open-failed", error=f"{type(e).__name__}: {e}"[:500])
        return 2
    digest = digest_of(docs)
    k = by_digest.get(digest)
    emit("opened", gen=gen, digest=digest, n=len(docs), cycle=k, seconds=time.time() - t0)
    if k is None:
        return 3
    t1 = time.time()
    with store.lock(timeout=_LOCK_TIMEOUT):
        pass
    emit("locked", seconds=time.time() - t1)

    stop = threading.Event()
    threads: list[threading.Thread] = []
    if args.reader_threads:
        def readers() -> None:
            for r in range(args.reader_threads):
                threads.append(threading.Thread(
                    target=reader_loop, daemon=True,
                    args=(args.location, emit, f"{os.getpid()}-{r}", args.reader_pause, stop)))
                threads[-1].start()
        if k > 0:
            readers()

    original = type(store).write

    def write(self: Any, manifest: Any, segments: Any) -> Any:
        emit("commit-begin", cycle=k + 1)
        out = original(self, manifest, segments)
        emit("commit-end", cycle=k + 1, gen=out[0])
        return out

    type(store).write = write  # type: ignore[method-assign]
    folder = Path(args.docs)
    while k < args.cycles:
        emit("cycle", cycle=k + 1)
        write_cycle(folder, args.seed, all_states[k + 1])
        emit("files", cycle=k + 1)
        update_directory(store, [folder], embedder=emb, root=str(folder), prune=True,
                         workers=0, lock_timeout=_LOCK_TIMEOUT)
        k += 1
        emit("cycle-done", cycle=k)
        if args.reader_threads and k == 1:
            readers()
        time.sleep(args.cycle_pause)
    stop.set()  # readers stop before this process (and the Lite server in it) exits
    for t in threads:
        t.join(timeout=30)
    emit("finished", cycle=k)
    return 0


def reader_main(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    reader_loop(args.location, Emitter(), args.name, args.reader_pause)
    return 0


# --- checking what the readers saw ---------------------------------------------------------
def write_cycle(folder: Path, seed: int, state: dict[str, int]) -> None:
    """Make ``folder`` hold exactly one cycle's documents."""
    want = texts_of(seed, state)
    folder.mkdir(parents=True, exist_ok=True)
    for p in folder.iterdir():
        if p.name not in want:
            p.unlink()
    for d, text in want.items():
        p = folder / d
        if not p.exists() or p.read_text() != text:
            p.write_text(text)


class Expected:
    """What each cycle's generation answers, from an uninterrupted reference run: the same
    cycles committed one after the other into a fresh store of the same kind, no kills,
    each generation opened fresh and asked through a Service like the readers ask. (The
    same generation's segments, so the same answers; a fresh one-segment build can rank a
    near tie differently, as BM25 statistics count a segment's deleted documents until it is
    merged.) Built lazily up to the highest cycle asked for."""

    def __init__(self, kind: str, seed: int, all_states: list[dict[str, int]],
                 work: Path) -> None:
        self.kind, self.seed, self.states, self.work = kind, seed, all_states, work
        self._answers: dict[int, list[tuple[list[str], str, list[str], str]]] = {}
        self.seconds = 0.0

    def __call__(self, cycle: int) -> list[tuple[list[str], str, list[str], str]]:
        if cycle not in self._answers:
            self._build_to(cycle)
        return self._answers[cycle]

    def _build_to(self, cycle: int) -> None:
        from proxy_pointer.embeddings.factory import make_embedder
        from proxy_pointer.index import update_directory
        from proxy_pointer.serve.service import Service

        t0 = time.time()
        emb = make_embedder(EMBEDDER)
        self.work.mkdir(parents=True, exist_ok=True)
        location = (str(self.work / "index") if self.kind == "local"
                    else f"milvus:{self.work / 'reference.db'}")
        folder = self.work / "docs"
        svc: Service | None = None
        for k in range(max(self._answers, default=0) + 1, cycle + 1):
            write_cycle(folder, self.seed, self.states[k])
            idx, _ = update_directory(location, [folder], embedder=emb, root=str(folder),
                                      prune=True, workers=0)
            if svc is None:
                svc = Service(location, embedder=emb, refresh_seconds=0.0)
            with svc.pinned() as pinned:
                assert pinned.generation == idx.generation, (pinned.generation, idx.generation)
                dense = svc.config().tuned(hybrid=False)
                self._answers[k] = [(*answer_key(svc.query(q)),
                                     *answer_key(pinned.retrieve(q, dense).to_dict()))
                                    for q in QUESTIONS]
        self.seconds += time.time() - t0


def check_answers(run: dict[str, Any], seed: int, expected: Expected) -> dict[str, Any]:
    """Every answer against the reference run's answer for the one cycle its generation
    holds: the default (hybrid) answer and the dense-only one (``hybrid=False``)."""
    by_digest = state_digests(seed, expected.states)
    gen_digest: dict[str, str] = {}
    problems: list[str] = []
    hybrid_examples: list[str] = []
    seen_by: dict[str, list[int]] = {}
    cycle_of: dict[str, int | None] = {}
    answers = mismatches = hybrid_off = differ_from_previous = reader_errors = 0
    for ev in run["observations"]:
        if ev["ev"] == "reader-error":
            reader_errors += 1
            if reader_errors <= 5:
                problems.append(f"reader error: {ev['error']}")
            continue
        if ev["ev"] == "gen":
            gen, digest = ev["gen"], ev["digest"]
            if gen_digest.setdefault(gen, digest) != digest:
                mismatches += 1
                problems.append(f"{gen}: two document sets under one generation name")
            cycle = cycle_of[gen] = by_digest.get(digest)
            if cycle is None:
                mismatches += 1
                problems.append(f"{gen} (seen by {ev['reader']}): its {ev['n']} documents "
                                "are no committed cycle's (a mix of generations?)")
                continue
            trail = seen_by.setdefault(ev["reader"], [])
            if trail and cycle < trail[-1]:
                mismatches += 1
                problems.append(f"reader {ev['reader']} went back from cycle {trail[-1]} to "
                                f"{cycle} ({gen})")
            trail.append(cycle)
            continue
        answers += 1
        cycle = cycle_of.get(ev["gen"])
        if cycle is None:
            mismatches += 1
            problems.append(f"answer from {ev['gen']}, whose document set is unknown or mixed")
            continue
        want = expected(cycle)[ev["q"]]
        where = f"{ev['gen']} (cycle {cycle}) q{ev['q']}"
        if [ev["drefs"], ev["dsha"]] != [want[2], want[3]]:
            mismatches += 1
            problems.append(f"{where} dense-only: {ev['drefs']} != {want[2]}"
                            + ("" if ev["drefs"] != want[2] else " (texts differ)"))
        if [ev["refs"], ev["sha"]] != [want[0], want[1]]:
            hybrid_off += 1
            hybrid_examples.append(f"{where} hybrid: {ev['refs']} != {want[0]}"
                                   + ("" if ev["refs"] != want[0] else " (texts differ)"))
        if cycle > 1 and tuple(expected(cycle - 1)[ev["q"]]) != tuple(want):
            differ_from_previous += 1
    if run["kind"] == "local":  # the local store's hybrid answers must be exact too
        mismatches += hybrid_off
        problems += hybrid_examples
    return {"answers": answers, "generations_seen": len(gen_digest),
            "cycles_seen": len({c for c in cycle_of.values() if c is not None}),
            "mismatches": mismatches, "hybrid_off_reference": hybrid_off,
            "reader_errors": reader_errors,
            "would_fail_against_previous_cycle": differ_from_previous,
            "examples": problems[:20], "hybrid_examples": hybrid_examples[:5]}


