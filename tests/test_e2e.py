"""End to end with the real bundled MiniLM model: files -> index -> sections -> CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from proxy_pointer import Index, SentenceTransformerEmbedder
from proxy_pointer.cli import main
from proxy_pointer.tokens import count_tokens

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "retrieval"
REPORT = "water_report.md"


@pytest.fixture(scope="module")
def index() -> Index:
    return Index.build([FIXTURES], embedder=SentenceTransformerEmbedder())


def test_question_about_a_table_returns_its_whole_section(index: Index) -> None:
    res = index.retrieve("How much water did industry withdraw in 2024 compared with 2023?",
                         budget=2000)
    top = res.sections[0]
    assert top.title == "2.2 Urban demand"
    assert "| Sector | Withdrawals 2023 (hm3) | Withdrawals 2024 (hm3) | Change |" in top.text
    assert "| Industry | 87 | 85 | -2.3% |" in top.text
    assert top.text.startswith("### 2.2 Urban demand") and not top.trimmed


def test_question_about_a_box_returns_the_box(index: Index) -> None:
    res = index.retrieve("How is the volume stored in a reservoir measured?", budget=1000, k=3)
    titles = [s.title for s in res.sections]
    assert "Box 1.1: How storage is measured" in titles[:2]
    box = res.sections[titles.index("Box 1.1: How storage is measured")]
    assert "bathymetric rating curves" in box.text


def test_chapter_named_in_question_is_reached_through_breadcrumbs(index: Index) -> None:
    for question in ("What does Chapter 3 report?", "Summarise chapter 3"):
        res = index.retrieve(question, budget=2000, k=3, doc_ids=[REPORT])
        top = res.sections[0]
        assert top.path[-1] == "Chapter 3: Investment"
        # The whole chapter, subsections included, is handed over once.
        assert "### 3.1 Desalination plant" in top.text and "### 3.2 Flood defences" in top.text
    own = index.retrieve("What does Chapter 2 say?", budget=2000, k=2, expand="own",
                         doc_ids=[REPORT])
    assert all(s.path[1] == "Chapter 2: Demand" for s in own.sections)


def test_budget_and_dedupe_with_the_real_model(index: Index) -> None:
    for budget in (60, 250, 800):
        res = index.retrieve("reservoir storage groundwater desalination demand", budget=budget)
        assert res.tokens_used <= budget
        assert sum(count_tokens(s.text) for s in res.sections) == res.tokens_used
        refs = [s.ref for s in res.sections]
        assert len(refs) == len(set(refs))
        for s in res.sections:
            if s.trimmed:
                # The matched chunk's words survive the trim.
                assert s.text.splitlines()[0].startswith("#")


def test_readme_main_job_on_the_bundled_sample(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    monkeypatch.delenv("PROXY_POINTER_LLM", raising=False)
    idx_dir = tmp_path / "idx"
    assert main(["index", str(ROOT / "data" / "sample" / "docs"), "--index", str(idx_dir)]) == 0
    out = capsys.readouterr().out
    assert "4 added" in out
    question = "Which dataset is used for Nepali named entity recognition?"
    assert main(["ask", "--index", str(idx_dir), question]) == 0
    out = capsys.readouterr().out
    assert "1908.05828.md#" in out
    assert "GEMINI_API_KEY" in out  # the one line on how to enable synthesis
    assert main(["query", "--index", str(idx_dir), question, "--json", "--budget", "500"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tokens_used"] <= 500
    assert data["contexts"][0]["doc_id"] == "1908.05828.md"


def test_llama_index_similarity_cutoff_keeps_relevant_sections(index: Index) -> None:
    """Node scores are the 0-1 relevance, so a vector-store style cutoff of 0.5 keeps the
    section that answers and drops what is off topic (with fusion scores of ~0.02 the
    query engine answered "Empty Response")."""
    pytest.importorskip("llama_index.core")
    from llama_index.core.llms import MockLLM
    from llama_index.core.postprocessor import SimilarityPostprocessor
    from llama_index.core.query_engine import RetrieverQueryEngine

    from proxy_pointer.llama_index import ProxyPointerRetriever

    engine = RetrieverQueryEngine.from_args(
        ProxyPointerRetriever(index=index, k=5), llm=MockLLM(),
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.5)])
    answer = engine.query("What is the capacity of the desalination plant?")
    assert str(answer) != "Empty Response"
    assert answer.source_nodes[0].node.metadata["title"] == "3.1 Desalination plant"
    assert all(n.score >= 0.5 for n in answer.source_nodes)
    off_topic = engine.query("Who won the football world cup in 1966?")
    assert str(off_topic) == "Empty Response" and not off_topic.source_nodes
