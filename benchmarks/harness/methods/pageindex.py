"""``pageindex``: the real PageIndex (PyPI ``pageindex``), run in its own virtualenv.

PageIndex pins litellm and downgrades huggingface_hub, so it never enters the main
environment: it lives in ``benchmarks/.work/pageindex-venv`` (created on first use with
``python3 -m venv`` and ``pip install pageindex``, under a file lock so two processes never
install at once; an existing working venv is reused) and ``benchmarks/harness/pageindex_runner.py``
runs there. Its Markdown path (``md_to_tree`` with LLM node summaries) builds one tree per
document; each question then gets PageIndex's tutorial tree search (titles + summaries to
the LLM, which names node ids), and the named nodes' texts, in the LLM's order, are the
context, packed under the budget like every other method.

The LLM is litellm's: ``PAGEINDEX_LLM_MODEL`` names it (e.g. ``gpt-4.1-mini``,
``gemini/gemini-2.5-flash``, or ``openai/<model>`` with ``OPENAI_BASE_URL`` for an
OpenAI-compatible server), credentials come from litellm's usual variables. Without it the
runner talks to a local recording endpoint (:mod:`benchmarks.harness.llm_stub`) that returns
placeholders: the call counts and prompt sizes are real, quality is not measured, and
reply tokens and latencies mean nothing.

PageIndex has no corpus index - its tree search reads one document's tree - so the
``corpus`` scope is n/a.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from proxy_pointer.tokens import count_tokens_many

from ..context import Piece
from ..dataset import Dataset, Question
from ..llm_stub import RecordingLLMServer
from .base import BuildStats, MethodUnavailable

__all__ = ["VENV", "PageIndexMethod", "ensure_venv"]

_BENCH = Path(__file__).resolve().parents[2]
RUNNER = _BENCH / "harness" / "pageindex_runner.py"
VENV = Path(os.environ.get("PAGEINDEX_VENV") or _BENCH / ".work" / "pageindex-venv")
_PLACEHOLDER_MODEL = "openai/placeholder"
CORPUS_NA = ("PageIndex has no corpus index: its tree search reads the tree of one document, "
             "and choosing the document first is outside the package")


def _python() -> Path:
    return VENV / "bin" / "python"


def _works() -> bool:
    py = _python()
    if not py.exists():
        return False
    probe = subprocess.run([str(py), "-c", "import pageindex.page_index_md, pageindex.utils"],
                           capture_output=True, timeout=300)
    return probe.returncode == 0


def ensure_venv() -> Path:
    """Return PageIndex's virtualenv python, creating the venv first when needed.

    Raises :class:`MethodUnavailable` when the venv cannot be created or pip fails.
    """
    VENV.parent.mkdir(parents=True, exist_ok=True)
    log = VENV.parent / "pageindex-venv-install.log"
    with open(VENV.parent / "pageindex-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the tree-parity helper may be installing too
        if _works():
            return _python()
        print(f"[pageindex] creating {VENV} (pip install pageindex; log: {log})",
              file=sys.stderr)
        with open(log, "a") as out:
            steps = [[sys.executable, "-m", "venv", str(VENV)],
                     [str(_python()), "-m", "pip", "install", "pageindex"]]
            if _python().exists():
                steps = steps[1:]
            for cmd in steps:
                if subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode:
                    raise MethodUnavailable(f"{' '.join(cmd)} failed; see {log}")
        if not _works():
            raise MethodUnavailable(f"pageindex does not import in {VENV}; see {log}")
        return _python()


class PageIndexMethod:
    name = "pageindex"
    points_at_sections = True
    scopes = ("per-doc",)
    uses_embedder = False
    scope_notes: ClassVar[dict[str, str]] = {"corpus": CORPUS_NA}

    def __init__(self, *, summary_token_threshold: int = 200) -> None:
        self.threshold = summary_token_threshold
        self.model = os.environ.get("PAGEINDEX_LLM_MODEL") or None
        self.quality = self.model is not None
        self.description = (
            f"PageIndex md_to_tree + tutorial LLM tree search, LLM {self.model}"
            if self.model else
            "PageIndex md_to_tree + tree search against a local placeholder endpoint "
            "(no LLM configured: call counts only)"
        )
        self._nodes: dict[str, dict[str, tuple[str, tuple[str, ...]]]] = {}
        self._queries: dict[str, dict] = {}

    def build(self, dataset: Dataset, embedder: Any) -> BuildStats:
        python = ensure_venv()
        job = {
            "model": self.model or _PLACEHOLDER_MODEL,
            "summary_token_threshold": self.threshold,
            "docs": [{"doc_id": d, "path": str(dataset.doc_path(d).resolve())}
                     for d in dataset.docs],
            "queries": [{"id": q.id, "doc_id": q.doc_id, "question": q.question}
                        for q in dataset.questions],
        }
        with tempfile.TemporaryDirectory() as tmp:
            job_file, out_file = Path(tmp) / "job.json", Path(tmp) / "result.json"
            job_file.write_text(json.dumps(job), encoding="utf-8")
            cmd = [str(python), str(RUNNER), str(job_file), str(out_file)]
            if self.model:
                proc = subprocess.run(cmd)
                server_calls = None
            else:
                with RecordingLLMServer() as server:
                    env = {**os.environ, "OPENAI_BASE_URL": server.base_url,
                           "OPENAI_API_BASE": server.base_url, "OPENAI_API_KEY": "placeholder"}
                    proc = subprocess.run(cmd, env=env)
                    server_calls = len(server.calls)
            if proc.returncode or not out_file.exists():
                raise MethodUnavailable(f"pageindex_runner.py exited with {proc.returncode}")
            result = json.loads(out_file.read_text(encoding="utf-8"))
            trees = {d: e["structure"] for d, e in result["docs"].items() if e["structure"]}
            (Path(tmp) / "trees.json").write_text(json.dumps(trees, ensure_ascii=False))
            index_bytes = (Path(tmp) / "trees.json").stat().st_size
        return self._absorb(result, trees, index_bytes, server_calls)

    def _absorb(self, result: dict, trees: dict, index_bytes: int,
                server_calls: int | None) -> BuildStats:
        self._nodes = {d: dict(_walk(s, ())) for d, s in trees.items()}
        self._queries = result["queries"]
        calls = result["calls"]
        prompt_tokens = count_tokens_many([c["prompt"] for c in calls])
        reply_tokens = count_tokens_many([c["reply"] for c in calls])
        per = {"index": [0, 0, 0], "query": [0, 0, 0]}
        calls_by_doc = dict.fromkeys(result["docs"], 0)
        for c, pt, rt in zip(calls, prompt_tokens, reply_tokens, strict=True):
            if c["phase"] == "index" and c["key"] in calls_by_doc:
                calls_by_doc[c["key"]] += 1
            if c["phase"] in per:
                acc = per[c["phase"]]
                acc[0] += 1
                acc[1] += pt
                acc[2] += rt
        n_docs = max(1, len(result["docs"]))
        n_q = max(1, len(result["queries"]))
        doc_errors = [f"{d}: {e['error']}" for d, e in result["docs"].items() if e["error"]]
        q_errors = sum(1 for e in result["queries"].values() if e["error"])
        label = None if self.quality else (
            "placeholder replies: counts of calls and prompt tokens only; reply tokens, "
            "build seconds, latencies and query prompt sizes (placeholder summaries are "
            "shorter than real ones) are not PageIndex's real costs")
        notes = [n for n in (label,) if n] + doc_errors[:5]
        extra = {
            "mode": "llm" if self.quality else "placeholder",
            "model": result.get("model"),
            "pageindex_version": result.get("pageindex_version"),
            "venv": str(VENV),
            "index_llm_calls_per_doc": per["index"][0] / n_docs,
            "index_llm_calls_by_doc": calls_by_doc,
            "doc_seconds": {d: e["seconds"] for d, e in result["docs"].items()},
            "index_llm_in_tokens_per_doc": per["index"][1] / n_docs,
            "query_llm_calls": per["query"][0] / n_q,
            "query_llm_in_tokens": per["query"][1] / n_q,
            "query_llm_out_tokens": per["query"][2] / n_q if self.quality else None,
            "nodes": sum(len(v) for v in self._nodes.values()),
            "doc_errors": len(doc_errors),
            "query_errors": q_errors,
            "endpoint_requests": server_calls,
            "runner_maxrss_mib": result.get("maxrss_kib", 0) / 1024,
            "provider_usage": result.get("provider_usage"),
        }
        return BuildStats(
            seconds=sum(e["seconds"] for e in result["docs"].values()),
            units=extra["nodes"], index_bytes=index_bytes, llm_calls=per["index"][0],
            llm_in_tokens=per["index"][1],
            llm_out_tokens=per["index"][2] if self.quality else 0,
            notes=tuple(notes), extra=extra,
        )

    def query_seconds(self, question: Question) -> float | None:
        entry = self._queries.get(question.id)
        return None if entry is None else float(entry["seconds"])

    def retrieve(self, question: Question, scope: str, budget: int) -> Iterator[Piece]:
        nodes = self._nodes.get(question.doc_id, {})
        seen: set[str] = set()
        for node_id in (self._queries.get(question.id) or {}).get("node_ids", []):
            if node_id in nodes and node_id not in seen:
                seen.add(node_id)
                text, path = nodes[node_id]
                yield Piece(text=text, doc_id=question.doc_id, path=path)


def _walk(nodes: Any, parent: tuple[str, ...]) -> Iterator[tuple[str, tuple[str, tuple[str, ...]]]]:
    """(node_id, (own text, heading path)) for every node of a PageIndex structure."""
    for node in nodes or []:
        path = (*parent, str(node.get("title", "")))
        yield str(node.get("node_id")), (str(node.get("text", "")), path)
        yield from _walk(node.get("nodes"), path)
