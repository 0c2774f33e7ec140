"""Tests of the benchmark harness (benchmarks/harness): metrics, packing, loader, smoke runs."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from benchmarks.harness.answers import answer_f1, token_f1
from benchmarks.harness.context import Context, Piece, pack
from benchmarks.harness.dataset import Dataset, Question, load_dataset
from benchmarks.harness.llm_stub import PLACEHOLDER_SUMMARY, RecordingLLMServer
from benchmarks.harness.matching import flatten, loose_found, shingles
from benchmarks.harness.methods import DEFAULT_METHODS
from benchmarks.harness.methods.pageindex import PageIndexMethod
from benchmarks.harness.metrics import aggregate, normalize, normalize_path, score_context
from benchmarks.harness.report import markdown_report, write_report
from benchmarks.harness.runner import run_benchmark
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.tokens import count_tokens

REPO = Path(__file__).resolve().parents[2]

SAMPLE = REPO / "data" / "sample"


def q(evidence=(), sections=(), answers=(), pages=None) -> Question:
    return Question(id="q", doc_id="d", question="what?",
                    evidence=tuple(tuple(a) for a in evidence),
                    sections=tuple(tuple(s) for s in sections), answers=tuple(answers),
                    meta={} if pages is None else {"pages": list(pages)})


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


# --- loose matching (PDF filings) and page hits -----------------------------------------------
def test_flatten_casefolds_and_keeps_only_letters_and_digits():
    assert flatten("CONSOLIDATED  Balance-Sheets\n$ 34,229.5") == "consolidatedbalancesheets342295"
    assert flatten("Straße") == "strasse"
    # HTML tags and comments are markup, not text (LlamaParse writes tables as HTML).
    assert flatten("<td>Net sales</td><td>$ 34,229</td><!-- a\nnote -->") == "netsales34229"
    assert flatten("a < b and c > d") == "abandcd"


def test_shingles_are_distinct_14_character_substrings():
    assert shingles("a" * 20) == {"a" * 14}
    assert shingles("abcdefghijklmn") == {"abcdefghijklmn"}
    assert len(shingles("abcdefghijklmnop")) == 3
    assert shingles("short") == set()


def test_loose_found_needs_half_of_the_passage_shingles():
    passage = flatten("Total current assets 14,688 15,403 Property, plant and equipment")
    n = len(shingles(passage))
    assert loose_found(passage, "xx" + passage + "yy")
    # Keep a prefix holding exactly half of the shingles: found; one fewer: not.
    half = (n + 1) // 2
    assert loose_found(passage, passage[: half + 13])
    assert not loose_found(passage, passage[: half + 12])
    # Spacing, case, punctuation and thousands separators do not matter.
    assert loose_found(passage, flatten("TOTAL CURRENT ASSETS $14688 $ 15403\nProperty plant "
                                        "& Equipment"))
    assert not loose_found(passage, flatten("an unrelated page of the filing, page 7"))


def test_loose_found_short_and_empty_passages():
    assert loose_found(flatten("Net sales"), flatten("total net sales rose"))  # whole
    assert not loose_found(flatten("Net sales"), flatten("net revenue"))
    assert not loose_found("", "anything")


def test_loose_scoring_of_a_context():
    gold = "Consolidated Statement of Income Years ended December 31 (Millions) Net sales 34,229"
    question = q(evidence=[[gold, "another passage that is nowhere to be found"]])
    extracted = "CONSOLIDATED STATEMENT OF INCOME\nYears ended December 31 (Millions)\n" \
                "Net sales $ 34229"
    s = score_context(question, ctx("miss", extracted), matching="loose")
    assert (s.any_hit, s.full_hit, s.evidence_recall, s.rr) == (True, False, 0.5, 0.5)
    assert score_context(question, ctx(extracted), matching="exact").any_hit is False
    with pytest.raises(ValueError):
        score_context(question, ctx(extracted), matching="fuzzy")


def test_page_hit_counts_pages_the_packed_text_still_reaches():
    question = q(evidence=[["x"]], pages=[5])
    page4, page5 = "text of page four. ", "text of page five."
    piece = Piece(page4 + page5, "d", pages=((0, 4), (len(page4), 5)))
    assert piece.covered_pages == {4, 5}
    assert score_context(question, pack([piece], 10_000), pages=True).page_hit is True
    # Cut before page 5 begins: only page 4 is covered.
    cut = pack([piece], count_tokens(page4) - 1)
    assert cut.pieces[0].covered_pages == {4}
    assert score_context(question, cut, pages=True).page_hit is False
    # Another document's page 5, a piece without marks, or pages not asked for: no hit / n/a.
    other = Piece(page5, "e", pages=((0, 5),))
    assert score_context(question, pack([other, Piece(page5, "d")], 10_000),
                         pages=True).page_hit is False
    assert score_context(question, pack([piece], 10_000)).page_hit is None
    assert score_context(q(evidence=[["x"]]), pack([piece], 10_000), pages=True).page_hit is None
    agg = aggregate([score_context(question, pack([piece], 10_000), pages=True)])
    assert (agg["page_hit"], agg["page_hit_n"]) == (1.0, 1)


def test_page_marks_and_gold_pages_of_a_paged_dataset(tmp_path):
    pages = ["page one\nline", "", "page three"]
    text = "\n".join(pages)
    ds = Dataset(name="p", root=tmp_path, docs={"f.pdf": text}, questions=(),
                 matching="loose", pages={"f.pdf": (0, 14, 15)})
    assert ds.paged and ds.doc_path("f.pdf") == tmp_path / "docs" / "f.pdf"
    assert [ds.page_text("f.pdf", p) for p in (1, 2, 3, 4)] == [*pages, ""]
    assert ds.page_marks("f.pdf", 0, len(text)) == ((0, 1), (15, 3))  # page 2 is empty
    assert ds.page_marks("f.pdf", 9, 12) == ((0, 1),)
    assert ds.page_marks("f.pdf", 14, 20) == ((1, 3),)  # the joining line break is no page
    from benchmarks.harness.methods.oracle import OracleMethod

    oracle = OracleMethod()
    oracle.build(ds, None)
    question = Question(id="q", doc_id="f.pdf", question="?", evidence=(("three",),),
                        sections=(), answers=(), meta={"pages": [3, 1, 3]})
    got = list(oracle.retrieve(question, "per-doc", 100))
    assert [(p.text, p.covered_pages) for p in got] == [("page three", {3}),
                                                        ("page one\nline", {1})]


def test_pdf_dataset_end_to_end_with_page_hits(tmp_path):
    """A two-filing PDF dataset: plain page text for the baselines, the library's converter
    for proxy-pointer, loose matching, and a page hit for every method."""
    fpdf = pytest.importorskip("fpdf")
    pytest.importorskip("pypdfium2")
    pages = [("Item 1. Business", "The company sells brass widgets to crane makers in twelve "
              "countries and to shipyards along the coast."),
             ("Item 1A. Risk Factors", "Floods at the northern plant could stop widget output "
              "for months, because the plant lies below the river dike."),
             ("Item 7. Results", "Revenue grew twelve percent to 410 million dollars, led by "
              "crane widgets sold in Norway.")]
    (tmp_path / "docs").mkdir()
    for name in ("a.pdf", "b.pdf"):
        pdf = fpdf.FPDF()
        for heading, body in pages:
            pdf.add_page()
            pdf.set_font("helvetica", "B", 16)
            pdf.cell(0, 10, heading, new_x="LMARGIN", new_y="NEXT")
            pdf.set_font("helvetica", size=10)
            pdf.multi_cell(0, 5, body)
        pdf.output(str(tmp_path / "docs" / name))
    rows = [{"id": f"q{i}{d}", "doc_id": d, "question": question, "sections": [],
             "evidence": [[evidence]], "answers": [], "meta": {"pages": [page]}}
            for d in ("a.pdf", "b.pdf")
            for i, (question, evidence, page) in enumerate([
                ("What could floods stop?", "FLOODS at the northern plant could stop "
                 "widget-output for months", 2),
                ("How much did revenue grow?", "Revenue grew twelve percent to 410 million", 3)])]
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    ds = load_dataset(tmp_path)
    assert (ds.matching, ds.paged, ds.warnings) == ("loose", True, ())
    assert set(ds.docs) == {"a.pdf", "b.pdf"} and len(ds.pages["a.pdf"]) == 3
    assert "Floods at the northern plant" in ds.page_text("a.pdf", 2)
    results = run_benchmark(ds, methods=["proxy-pointer", "flat", "bm25", "oracle"],
                            scopes=["per-doc"], budgets=[2000], embedder=HashEmbedder(64),
                            memory=False)
    assert results["dataset"]["matching"] == "loose" and results["dataset"]["pages"] == 6
    for name, m in results["methods"].items():
        agg = m["scopes"]["per-doc"]["budgets"]["2000"]
        # 2,000 tokens hold each whole (tiny) filing: every method finds gold and its page.
        assert (agg["any_hit"], agg["page_hit"], agg["page_hit_n"]) == (1.0, 1.0, 4), name
    report = markdown_report(results)
    assert "Any-hit and page-hit counts: per-doc" in report and "| oracle | 4/4 | 4/4 |" in report


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


def test_a_second_questions_file_is_read_after_the_first(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\ntext\n")
    row = {"id": "1", "doc_id": "a", "question": "?", "evidence": [["text"]], "sections": [],
           "answers": [], "meta": {}}
    (tmp_path / "questions.jsonl").write_text(json.dumps(row) + "\n")
    extra = tmp_path / "written.jsonl"
    extra.write_text(json.dumps({**row, "id": "w1", "meta": {"written": "us"}}) + "\n")
    assert [q.id for q in load_dataset(tmp_path, extra=extra).questions] == ["1", "w1"]
    extra.write_text(json.dumps(row) + "\n")
    with pytest.raises(ValueError, match=r"written.jsonl:1: duplicate question id"):
        load_dataset(tmp_path, extra=extra)


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
@pytest.mark.slow  # every method end to end (34 s); CI runs it
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
