"""Which of a company's filings answers (search/choice.py): routing's candidates with their
card priors, the document score's parts, two close filings both kept, and the choice end to
end on a small shelf whose release and annual report share a period."""

from __future__ import annotations

import pytest
from shelf import SHELF

from proxy_pointer import Index, Retriever
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.search.choice import Evidence, Weights, choose
from proxy_pointer.search.routing import route
from proxy_pointer.vocab.filings import FILINGS


def _candidates(question: str) -> dict[str, float]:
    return {d: p for d, p, _ in route(question, SHELF).candidates}


def test_routing_hands_over_the_filings_that_cover_the_period_with_their_priors() -> None:
    got = _candidates("Acme FY2022 revenue")
    assert got["acme-2022.pdf"] == 1.0  # the cards' choice
    assert got["acme-2022q4-release.pdf"] == pytest.approx(0.8 * 4 / 5)  # covers it too
    assert got["acme-2022q2.pdf"] == pytest.approx(0.8 * 2 / 5)
    assert "acme-2021.pdf" not in got and "block-2021.pdf" not in got
    # a form the question's words lean to: its nearest filing, at prior 0
    got = _candidates("What 2023 outlook did Acme give with its Q4 2023 results?")
    assert got["acme-2022q4-release.pdf"] == 0.0


def test_a_form_named_outright_adds_no_cued_filing() -> None:
    assert set(_candidates("Acme FY2022 10-K non-GAAP measures")) == {"acme-2022.pdf"}


def test_each_named_company_is_its_own_group() -> None:
    groups = {g for _, _, g in route("Compare Acme and Globex FY2021 margins",
                                     SHELF).candidates}
    assert len(groups) == 2


def _e(doc: str, prior: float, content: float, cues: tuple[str, ...] = (), group: int = 0
       ) -> Evidence:
    return Evidence(doc, prior, content, cues, group)


def test_the_score_is_the_prior_plus_weighed_content_and_cues() -> None:
    w = Weights(content=1.0, cue=0.5, margin=0.0)
    found = [_e("10k", 1.0, 0.4), _e("release", 0.64, 0.7, ("non-GAAP",))]
    choice = choose(found, w)
    assert choice.documents == ("release",)  # 0.64 + 0.7 + 0.5 beats 1.0 + 0.4
    assert [round(s, 2) for _, s, _ in choice.scores] == [1.84, 1.4]
    assert "cue 0.5 (non-GAAP)" in choice.scores[0][2]
    assert choose(found, Weights(content=1.0, cue=0.0, margin=0.0)).documents == ("10k",)


def test_two_close_filings_are_both_kept_and_groups_are_chosen_apart() -> None:
    found = [_e("a", 1.0, 0.5), _e("b", 1.0, 0.45), _e("c", 0.2, 0.0),
             _e("x", 1.0, 1.0, group=1)]
    assert choose(found, Weights(margin=0.1)).documents == ("x", "a", "b")
    assert choose(found, Weights(margin=0.01)).documents == ("x", "a")


def test_every_form_cue_matches_its_examples_and_misses_its_near_misses() -> None:
    for cue in FILINGS.form_cues:
        for q in cue.matches:
            assert set(cue.forms) <= set(FILINGS.cued_forms(q)), q
        for q in cue.misses:
            assert not set(cue.forms) & set(FILINGS.cued_forms(q)), q


def test_form_cues_are_found_in_linear_steps() -> None:
    """Cues are phrases looked up word by word: the matches grow with the text, one per
    cue written (a count, not a clock)."""
    unit = "adjusted guidance risk factors annual meeting "
    small, large = (sum(len(v) for v in FILINGS.cued_forms(unit * n).values())
                    for n in (100, 1000))
    assert 0 < small and large <= 10 * small


COVER_10K = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION
FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the fiscal year ended December 31, 2022
ACME WIDGETS, INC.
(Exact name of registrant as specified in its charter)

# Item 1A. Risk Factors

Our widget plants depend on one supplier of steel springs; a strike there would stop output.

# Item 8. Financial Statements

Net sales were $900 million in 2022 and $850 million in 2021.
"""

RELEASE = """News Release
Acme Widgets Reports Fourth Quarter and Full-Year 2022 Results
DAYTON, Ohio - February 2, 2023 - Acme Widgets, Inc. (NYSE: ACMW) today reported results.

# Highlights

Adjusted EBITDA was $210 million; non-GAAP EPS was $1.10.

# Outlook

For 2023 the company expects adjusted EBITDA guidance of $220 million to $230 million.
"""

PAPER = "# Widgets under load\n\n## Abstract\n\nAdjusted EBITDA guidance of widget makers.\n"


@pytest.fixture(scope="module")
def shelf() -> Index:
    idx = Index(embedder=HashEmbedder(128))
    idx.add_texts([("acme-10k.md", COVER_10K), ("acme-release.md", RELEASE),
                   ("paper.md", PAPER)])
    return idx


def test_a_question_for_the_release_gets_it_and_the_result_says_why(shelf: Index) -> None:
    q = "What adjusted EBITDA guidance did Acme give for FY2022?"
    res = shelf.retrieve(q, budget=400)
    (best, score, why), (other, second, _) = res.routing.scores
    assert (best, other) == ("acme-release.md", "acme-10k.md") and score > second
    assert "cue 0.5 (adjusted, EBITDA, guidance)" in why and "choose" in res.timings
    assert "acme-release.md" in res.routing.documents
    alone = Retriever(shelf.reader, choice=Weights(margin=0.0)).retrieve(q, budget=400)
    assert alone.routing.documents == ("acme-release.md",)
    assert {s.doc_id for s in alone.sections} <= {"acme-release.md", "paper.md"}
    # without the choice, the cards alone send a fiscal year to its annual report
    cards = Retriever(shelf.reader, choice=None).retrieve(q, budget=400)
    assert cards.routing.documents == ("acme-10k.md",) and not cards.routing.scores


def test_a_question_for_the_annual_report_keeps_it(shelf: Index) -> None:
    res = shelf.retrieve("What risk factors does Acme describe for FY2022?", budget=400)
    assert res.sections[0].doc_id == "acme-10k.md"
    assert "acme-release.md" not in res.routing.documents


def test_documents_no_card_claims_are_never_dropped(shelf: Index) -> None:
    res = shelf.retrieve("What adjusted EBITDA guidance did Acme give for FY2022?",
                         budget=4000, k=10)
    assert "paper.md" in {s.doc_id for s in res.sections}


def test_the_cli_says_which_filings_were_weighed(shelf: Index, tmp_path, capsys) -> None:
    from proxy_pointer.cli import main

    shelf.save(tmp_path / "idx")
    assert main(["query", "--index", str(tmp_path / "idx"),
                 "What adjusted EBITDA guidance did Acme give for FY2022?"]) == 0
    out = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("--- ")]
    routed = next(i for i, ln in enumerate(out) if ln.startswith("--- routed by Acme, FY2022"))
    assert out[routed + 1].startswith("--- filings weighed: acme-release.md ")
    assert "cue 0.5 (adjusted, EBITDA, guidance)" in out[routed + 1]
