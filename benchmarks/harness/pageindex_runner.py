"""Run the real PageIndex (PyPI ``pageindex``) for the benchmark harness.

This script runs INSIDE PageIndex's own virtualenv (``benchmarks/.work/pageindex-venv``),
where neither proxy-pointer nor this repository's ``benchmarks`` package is installed, so it
stays a standalone, self-contained script: it imports nothing from proxy-pointer, the harness
or :mod:`benchmarks.common` (its peak-memory reading repeats ``common.peak_rss_mib``'s rule),
and the harness (:mod:`benchmarks.harness.methods.pageindex`) runs it by file path with the
virtualenv's python. The harness writes a job file and reads the result file::

    <venv>/bin/python benchmarks/harness/pageindex_runner.py JOB.json RESULT.json

JOB: ``{"model": <litellm model>, "summary_token_threshold": 200,
"docs": [{"doc_id", "path"}], "queries": [{"id", "doc_id", "question"}]}``.

For every document it calls PageIndex's ``md_to_tree`` (node summaries on, node text kept,
no thinning), the Markdown indexing path of the package. For every query it runs the tree
search of PageIndex's own tutorial (cookbook "Simple Vectorless RAG"): the document tree
without node text (titles, ids, summaries) goes to the LLM, which replies with the ids of the
nodes likely to hold the answer. Every LLM call made through PageIndex's ``llm_acompletion``
/ ``llm_completion`` (litellm) is recorded - prompt and reply text - so the harness can count
tokens with its own tokenizer. The model and its endpoint come from litellm's usual settings
(``OPENAI_API_KEY``, ``OPENAI_BASE_URL``/``OPENAI_API_BASE``, ``GEMINI_API_KEY``, ...).

RESULT: ``{"pageindex_version", "docs": {doc_id: {"seconds", "structure", "error"}},
"queries": {id: {"node_ids", "thinking", "seconds", "error"}}, "calls": [{"phase", "key",
"prompt", "reply", "seconds"}], "provider_usage", "maxrss_kib"}`` (``maxrss_kib``: this
process's peak RSS in KiB).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import json
import resource
import sys
import time
from importlib.metadata import version
from pathlib import Path

# The tree-search prompt of PageIndex's tutorial (cookbook/pageindex_RAG_simple.ipynb).
SEARCH_PROMPT = """
You are given a question and a tree structure of a document.
Each node contains a node id, node title, and a corresponding summary.
Your task is to find all nodes that are likely to contain the answer to the question.

Question: {query}

Document tree structure:
{tree}

Please reply in the following JSON format:
{{
    "thinking": "<Your thinking process on which nodes are relevant to the question>",
    "node_list": ["node_id_1", "node_id_2", ..., "node_id_n"]
}}
Directly return the final JSON structure. Do not output anything else.
"""

_PHASE: contextvars.ContextVar[tuple[str, str]] = contextvars.ContextVar(
    "phase", default=("other", ""))


def main(job_path: str, out_path: str) -> int:
    with open(job_path, encoding="utf-8") as fh:
        job = json.load(fh)
    # PageIndex prints progress to stdout; keep stdout for nothing and show it on stderr.
    with contextlib.redirect_stdout(sys.stderr):
        result = run(job)
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, ensure_ascii=False)
    return 0


def run(job: dict) -> dict:
    import pageindex.utils as pu
    from pageindex.page_index_md import md_to_tree

    calls: list[dict] = []
    _record(pu, calls)
    usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0,
             "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
             "completion_tokens_details": {"reasoning_tokens": 0}}
    if hasattr(pu, "_llm_usage"):
        pu._llm_usage.set(usage)  # PageIndex sums the provider-reported usage into this
    model = job["model"]
    threshold = int(job.get("summary_token_threshold", 200))

    docs: dict[str, dict] = {}
    for n, doc in enumerate(job["docs"], 1):
        _PHASE.set(("index", doc["doc_id"]))
        t0 = time.perf_counter()
        entry: dict = {"structure": None, "error": None}
        try:
            tree = asyncio.run(md_to_tree(
                doc["path"], if_thinning=False, if_add_node_summary="yes",
                summary_token_threshold=threshold, model=model,
                if_add_doc_description="no", if_add_node_text="yes", if_add_node_id="yes"))
            entry["structure"] = tree["structure"]
        except Exception as exc:  # one broken document must not end the run
            entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["seconds"] = time.perf_counter() - t0
        docs[doc["doc_id"]] = entry
        print(f"[pageindex] indexed {n}/{len(job['docs'])} {doc['doc_id']}", file=sys.stderr)

    queries: dict[str, dict] = {}
    for n, q in enumerate(job["queries"], 1):
        entry = {"node_ids": [], "thinking": "", "error": None}
        structure = (docs.get(q["doc_id"]) or {}).get("structure")
        t0 = time.perf_counter()
        if structure is None:
            entry["error"] = "document was not indexed"
        else:
            _PHASE.set(("query", q["id"]))
            tree = pu.remove_fields(copy.deepcopy(structure), fields=["text"])
            prompt = SEARCH_PROMPT.format(query=q["question"], tree=json.dumps(tree, indent=2))
            try:
                reply = pu.llm_completion(model, prompt) or ""
                parsed = pu.extract_json(reply)
                ids = parsed.get("node_list", []) if isinstance(parsed, dict) else []
                entry["node_ids"] = [str(i) for i in ids if isinstance(i, (str, int))]
                entry["thinking"] = str(parsed.get("thinking", "")) if isinstance(
                    parsed, dict) else ""
            except Exception as exc:
                entry["error"] = f"{type(exc).__name__}: {exc}"
        entry["seconds"] = time.perf_counter() - t0
        queries[q["id"]] = entry
        if n % 25 == 0 or n == len(job["queries"]):
            print(f"[pageindex] searched {n}/{len(job['queries'])}", file=sys.stderr)

    return {
        "pageindex_version": version("pageindex"), "model": model, "docs": docs,
        "queries": queries, "calls": calls, "provider_usage": usage,
        "maxrss_kib": _peak_rss_kib(),
    }


def _peak_rss_kib() -> float:
    """This process's peak RSS in KiB: Linux's ``VmHWM`` (``ru_maxrss`` is carried over exec,
    so it would report the harness process's peak), else ``ru_maxrss`` (bytes on macOS)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024 if sys.platform == "darwin" else peak


def _record(pu, calls: list[dict]) -> None:
    """Wrap PageIndex's two LLM entry points so every call's texts are kept."""
    acomplete, complete = pu.llm_acompletion, pu.llm_completion

    async def llm_acompletion(model, prompt, **params):
        t0 = time.perf_counter()
        reply = await acomplete(model, prompt, **params)
        calls.append(_call(prompt, reply, t0))
        return reply

    def llm_completion(model, prompt, *args, **kwargs):
        t0 = time.perf_counter()
        reply = complete(model, prompt, *args, **kwargs)
        text = reply[0] if isinstance(reply, tuple) else reply
        calls.append(_call(prompt, text, t0))
        return reply

    pu.llm_acompletion, pu.llm_completion = llm_acompletion, llm_completion


def _call(prompt: str, reply, t0: float) -> dict:
    phase, key = _PHASE.get()
    return {"phase": phase, "key": key, "prompt": prompt, "reply": reply or "",
            "seconds": time.perf_counter() - t0}


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: pageindex_runner.py JOB.json RESULT.json")
    sys.exit(main(sys.argv[1], sys.argv[2]))
