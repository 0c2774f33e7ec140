"""Tests of the benchmark harness (benchmarks/harness): metrics, packing, loader, smoke runs."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from benchmarks.harness.answers import answer_f1, token_f1
from benchmarks.harness.context import Context, Piece, pack
from benchmarks.harness.dataset import Question, load_dataset
from benchmarks.harness.llm_stub import PLACEHOLDER_SUMMARY, RecordingLLMServer
from benchmarks.harness.methods import DEFAULT_METHODS
from benchmarks.harness.methods.pageindex import PageIndexMethod
from benchmarks.harness.metrics import aggregate, normalize, normalize_path, score_context
from benchmarks.harness.report import markdown_report, write_report
from benchmarks.harness.runner import run_benchmark
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.tokens import count_tokens

REPO = Path(__file__).resolve().parents[1]

SAMPLE = REPO / "data" / "sample"


def q(evidence=(), sections=(), answers=()) -> Question:
    return Question(id="q", doc_id="d", question="what?",
                    evidence=tuple(tuple(a) for a in evidence),
                    sections=tuple(tuple(s) for s in sections), answers=tuple(answers))


def ctx(*texts: str, paths=None, budget: int = 10_000) -> Context:
    paths = paths or [None] * len(texts)
    return pack([Piece(t, "d", p) for t, p in zip(texts, paths, strict=True)], budget)


# --- packing ---------------------------------------------------------------------------------
def test_pack_keeps_rank_order_and_cuts_the_first_piece_that_does_not_fit():
    a, b, c = "alpha beta gamma delta", "one two three four five six", "never reached"
    budget = count_tokens(a) + 3
    got = pack([Piece(a, "d"), Piece(b, "d"), Piece(c, "d")], budget)
    assert got.cut and got.tokens == budget
    assert [p.text for p in got.pieces] == [a, "one two three"]
    assert count_tokens(got.text) <= budget


def test_pack_exact_fit_is_not_cut_and_negative_budget_raises():
    a = "alpha beta gamma"
    got = pack([Piece(a, "d")], count_tokens(a))
    assert not got.cut and got.pieces[0].text == a
    assert pack([], 100).tokens == 0
    with pytest.raises(ValueError):
        pack([Piece(a, "d")], -1)


# --- metrics ---------------------------------------------------------------------------------
def test_evidence_only_after_the_budget_cut_does_not_count():
    filler = "lorem ipsum dolor sit amet " * 20
    gold = "the gold passage is here"
    question = q(evidence=[[gold]])
    budget = count_tokens(filler)
    # The whole second piece falls after the cut ...
    assert score_context(question, ctx(filler, gold, budget=budget)).any_hit is False
    # ... or the passage sits in the part of a piece that was cut away ...
    s = score_context(question, ctx(filler + " " + gold, budget=budget + 2))
    assert s.any_hit is False and s.rr == 0.0
    # ... while a larger budget finds it.
    assert score_context(question, ctx(filler, gold, budget=budget + 20)).any_hit is True


def test_normalization_collapses_whitespace_and_casefolds():
    assert normalize("  Straße\n\tIS  here ") == "strasse is here"
    question = q(evidence=[["The   Gold\npassage"]])
    assert score_context(question, ctx("before. the gold PASSAGE after")).any_hit


def test_full_hit_needs_every_passage_of_one_annotator():
    question = q(evidence=[["first passage", "second passage"], ["third passage"]])
    s = score_context(question, ctx("only the first passage is here"))
    assert (s.any_hit, s.full_hit, s.evidence_recall) == (True, False, 0.5)
    s = score_context(question, ctx("the third passage alone"))
    assert (s.any_hit, s.full_hit, s.evidence_recall) == (True, True, 1.0)
    s = score_context(question, ctx("nothing relevant"))
    assert (s.any_hit, s.full_hit, s.evidence_recall, s.rr) == (False, False, 0.0, 0.0)


def test_mrr_is_the_first_rank_whose_prefix_holds_gold():
    question = q(evidence=[["gold passage text"]])
    assert score_context(question, ctx("miss", "has gold passage text", "x")).rr == 0.5
    assert score_context(question, ctx("gold passage text", "miss")).rr == 1.0
    # A passage split over two adjacent windows counts where it becomes complete.
    assert score_context(question, ctx("miss", "ends with gold", "passage text")).rr == (
        pytest.approx(1 / 3))


def test_section_hit_counts_ancestors_not_descendants():
    question = q(sections=[["Paper", "Method", "Data"]])
    hit = lambda path: score_context(question, ctx("x", paths=[path]))  # noqa: E731
    assert (hit(("Paper", "Method", "Data")).section_hit,
            hit(("Paper", "Method", "Data")).section_exact) == (True, True)
    assert (hit(("Paper", "Method")).section_hit, hit(("Paper", "Method")).section_exact) == (
        True, False)
    assert hit(("Paper", "Method", "Data", "Sub")).section_hit is False
    assert hit(("Paper", "Results")).section_hit is False


def test_section_paths_compare_with_markup_reduced():
    assert normalize_path(["**Market  Risks**", "<u>Item 1</u>"]) == ("market risks", "item 1")
    question = q(sections=[["**Risk Factors**"]])
    assert score_context(question, ctx("x", paths=[("Risk Factors",)])).section_exact


def test_metrics_that_do_not_apply_are_none():
    no_evidence = q(sections=[["A"]])
    s = score_context(no_evidence, ctx("text", paths=[("A",)]))
    assert s.any_hit is None and s.rr is None and s.section_hit is True
    windows = score_context(q(evidence=[["text"]], sections=[["A"]]), ctx("text"),
                            sections=False)
    assert windows.section_hit is None and windows.any_hit is True
    empty = score_context(q(sections=[["A"]]), ctx(), sections=True)
    assert empty.section_hit is False
    agg = aggregate([s, windows])
    assert agg["any_hit"] == 1.0 and agg["any_hit_n"] == 1 and agg["section_hit_n"] == 1


# --- dataset ---------------------------------------------------------------------------------
def test_sample_dataset_loads_in_format():
    ds = load_dataset(SAMPLE)
    assert len(ds.docs) == 4 and len(ds.questions) == 29
    assert ds.warnings == ()
    assert all(q.doc_id in ds.docs and (q.evidence or q.sections) for q in ds.questions)
    assert (SAMPLE / "SOURCE.md").read_text().count("CC BY 4.0")
    small = load_dataset(SAMPLE, limit=3)
    assert len(small.questions) == 3 and set(small.docs) == {x.doc_id for x in small.questions}


def test_loader_rejects_malformed_rows(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")
    row = {"id": "1", "doc_id": "a", "question": "?", "evidence": [["text"]], "sections": [],
           "answers": [], "meta": {}}
    (tmp_path / "questions.jsonl").write_text(json.dumps({**row, "extra": 1}) + "\n")
    with pytest.raises(ValueError, match="unknown"):
        load_dataset(tmp_path)
    (tmp_path / "questions.jsonl").write_text(json.dumps({**row, "doc_id": "missing"}) + "\n")
    with pytest.raises(Exception, match="does not exist"):
        load_dataset(tmp_path)
    (tmp_path / "questions.jsonl").write_text(json.dumps({**row, "evidence": [["absent"]]}))
    assert load_dataset(tmp_path).warnings


# --- answers, LLM stub, PageIndex result handling ----------------------------------------------
def test_qasper_token_f1():
    assert token_f1("The cat sat.", "cat sat") == 1.0
    assert token_f1("a dog", "cat") == 0.0
    assert answer_f1("blue car", ["red car", "blue car"]) == 1.0
    assert answer_f1("x", []) is None


def test_recording_server_answers_like_openai_and_records():
    with RecordingLLMServer() as srv:
        r = httpx.post(f"{srv.base_url}/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": "summarize this"}]})
        search = httpx.post(f"{srv.base_url}/chat/completions", json={
            "model": "m", "messages": [{"role": "user", "content": 'reply "node_list"'}]})
    assert r.json()["choices"][0]["message"]["content"] == PLACEHOLDER_SUMMARY
    assert json.loads(search.json()["choices"][0]["message"]["content"])["node_list"] == []
    assert [c.prompt for c in srv.calls] == ["summarize this", 'reply "node_list"']


def test_pageindex_result_becomes_pieces_and_costs():
    m = PageIndexMethod()
    m.quality = False
    structure = [{"title": "Paper", "node_id": "0000", "text": "# Paper", "nodes": [
        {"title": "Method", "node_id": "0001", "text": "## Method\n\nwe do things"}]}]
    result = {
        "docs": {"d": {"structure": structure, "seconds": 1.5, "error": None}},
        "queries": {"q": {"node_ids": ["0001", "9999", "0001"], "seconds": 0.2, "error": None}},
        "calls": [{"phase": "index", "key": "d", "prompt": "summarize we do things",
                   "reply": PLACEHOLDER_SUMMARY, "seconds": 0.0},
                  {"phase": "query", "key": "q", "prompt": "tree", "reply": "{}", "seconds": 0}],
        "pageindex_version": "0.0", "model": "openai/placeholder", "maxrss_kib": 2048,
    }
    stats = m._absorb(result, {"d": structure}, 10, server_calls=2)
    assert stats.llm_calls == 1 and stats.llm_in_tokens == count_tokens("summarize we do things")
    assert stats.extra["query_llm_calls"] == 1 and stats.extra["mode"] == "placeholder"
    pieces = list(m.retrieve(q(), "per-doc", 100))
    assert [(p.text, p.path) for p in pieces] == [("## Method\n\nwe do things",
                                                   ("Paper", "Method"))]


# --- smoke runs ----------------------------------------------------------------------------------
def test_smoke_every_non_pageindex_method_on_sample(tmp_path):
    ds = load_dataset(SAMPLE)
    results = run_benchmark(ds, methods=list(DEFAULT_METHODS), scopes=["per-doc", "corpus"],
                            budgets=[200, 500], embedder=HashEmbedder(64), memory=True)
    try:
        from proxy_pointer import Index  # noqa: F401

        has_index = True
    except ImportError:
        has_index = False
    for name, m in results["methods"].items():
        if name.startswith("proxy-pointer") and not has_index:
            assert m["status"] == "skipped"
            continue
        assert m["status"] == "ok", (name, m.get("reason"))
        assert m["build"]["index_bytes"] is None or m["build"]["index_bytes"] > 0
        for scope in ("per-doc", "corpus"):
            s = m["scopes"][scope]
            assert s["status"] == "ok", (name, scope, s.get("reason"))
            for b in ("200", "500"):
                agg = s["budgets"][b]
                assert agg["questions"] == 29
                assert 0.0 <= agg["any_hit"] <= 1.0
                assert agg["tokens_mean"] <= int(b)
                assert (agg["section_hit"] is None) == (not m["points_at_sections"])
    oracle = results["methods"]["oracle"]["scopes"]["per-doc"]["budgets"]["500"]
    assert oracle["section_exact"] == 1.0
    paths = write_report(results, tmp_path, "smoke")
    assert json.loads(paths["json"].read_text())["dataset"]["questions"] == 29
    assert "| flat |" in paths["md"].read_text()
    assert "Retrieval quality: corpus" in markdown_report(results)


@pytest.mark.slow
def test_flat_with_real_minilm_on_sample(tmp_path):
    from proxy_pointer.embeddings import CachedEmbedder, SentenceTransformerEmbedder

    emb = CachedEmbedder(SentenceTransformerEmbedder(), tmp_path / "cache")
    ds = load_dataset(SAMPLE)
    results = run_benchmark(ds, methods=["flat"], scopes=["per-doc"], budgets=[2000],
                            embedder=emb, memory=False)
    agg = results["methods"]["flat"]["scopes"]["per-doc"]["budgets"]["2000"]
    # 2,000 tokens hold about half of a short paper: most gold passages are found.
    assert agg["any_hit"] >= 0.6
    assert results["methods"]["flat"]["build"]["embed_computed"] > 0


def test_answer_quality_path_with_a_local_llm():
    from proxy_pointer.llm import OpenAICompatibleLLM

    ds = load_dataset(SAMPLE, limit=4)
    with RecordingLLMServer() as srv:
        llm = OpenAICompatibleLLM(srv.base_url, "stub", api_key="none")
        results = run_benchmark(ds, methods=["oracle"], scopes=["per-doc"], budgets=[300],
                                embedder=HashEmbedder(64), memory=False, llm=llm)
    answers = results["methods"]["oracle"]["scopes"]["per-doc"]["answers"]
    assert answers["questions"] == 4 and answers["llm_calls_per_query"] == 1.0
    assert answers["llm_in_tokens_per_query"] > 0 and 0.0 <= answers["f1"] <= 1.0
    assert len(srv.calls) == 4
