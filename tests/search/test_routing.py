"""Routing a question to the documents its names and periods point at (search/routing.py),
over cards of a shelf shaped like a real one: one company's filings of several years and
kinds, a renamed company, and documents that are not filings at all."""

from __future__ import annotations

import pytest
from shelf import SHELF, filing

from proxy_pointer.search.routing import Shelf, route


def test_a_company_and_year_find_thatfiling() -> None:
    r = route("What was Acme's FY2021 capital expenditure?", SHELF)
    assert r.documents == ("acme-2021.pdf",)
    assert (r.names, r.entities, r.period, r.note) == (("Acme",), ("Acme Corp",), "FY2021", "")
    assert route("How did ACM revenue change between 2020 and 2021?", SHELF).documents == (
        "acme-2021.pdf",)  # the latest year named: a filing reports the years before it


def test_quarters_dates_and_kinds() -> None:
    assert route("Acme backlog in Q2 2022", SHELF).documents == ("acme-2022q2.pdf",)
    assert route("Acme's debt as of June 30, 2022", SHELF).documents == ("acme-2022q2.pdf",)
    assert route("What did Acme shareholders vote on May 3, 2023?", SHELF).documents == (
        "acme-8k.pdf",)
    # an annual report answers a fiscal year before an earnings release of its Q4 does
    assert route("Acme FY2022 revenue", SHELF).documents == ("acme-2022.pdf",)
    r = route("Acme FY2022 revenue in the earnings release", SHELF)
    assert (r.documents, r.kind) == (("acme-2022q4-release.pdf",), "earnings release")


def test_a_period_no_document_covers_is_said_and_the_latest_before_is_used() -> None:
    r = route("What capex is Acme forecasting for FY2024?", SHELF)
    assert r.documents == ("acme-8k.pdf",)
    assert "No document of Acme Corp covers FY2024" in r.note
    r = route("Acme's FY2018 revenue", SHELF)  # nothing before it: every Acme document
    assert len(r.documents) == 6 and r.note == "No document of Acme Corp covers FY2018."


def test_no_period_means_the_latest_annual_report_and_anything_after() -> None:
    r = route("Is Acme's business cyclical?", SHELF)
    assert r.documents == ("acme-2022.pdf", "acme-8k.pdf")
    assert r.period == ""


def test_a_renamed_company_is_one_entity() -> None:
    r = route("FY2020 revenue growth of Block (formerly known as Square)?", SHELF)
    assert r.documents == ("square-2020.pdf",)
    assert r.entities == ("Block, Inc.",)  # named as it is now
    assert route("Block's FY2021 revenue", SHELF).documents == ("block-2021.pdf",)


def test_several_companies_each_get_their_period() -> None:
    r = route("Compare Acme and Globex FY2021 margins", SHELF)
    assert r.documents == ("acme-2021.pdf", "globex-2021.pdf")


def test_questions_the_cards_say_nothing_about_are_not_routed() -> None:
    for q in ("What is attention?", "What was revenue?",
              "how do i grease the block bearings", "Acmeville weather",
              "Is square footage reported?"):
        assert not route(q, SHELF), q
        assert not route(q, SHELF).open  # neither company nor period: the search decides
    assert route("what was acme corp revenue in 2021", SHELF).documents == ("acme-2021.pdf",)
    assert not route("Acme FY2021", {}), "no cards, no routing"


def test_a_shelf_of_one_company_routes_by_period_alone() -> None:
    one = {d: c for d, c in SHELF.items() if d.startswith("acme")}
    assert route("What was revenue in FY2021?", one).documents == ("acme-2021.pdf",)
    assert not route("What was revenue?", one)
    mixed = {**one, "paper.md": SHELF["paper.md"]}  # not one company's shelf any more
    assert not route("What was revenue in FY2021?", mixed)


def test_the_route_is_json_ready() -> None:
    d = route("Acme FY2021", SHELF).to_dict()
    considered = d.pop("considered")
    assert d == {"documents": ["acme-2021.pdf"], "names": ["Acme"], "entities": ["Acme Corp"],
                 "period": "FY2021", "kind": "", "note": "", "confidence": "hard",
                 "scores": []}
    # every document of the entity was weighed, and says why it was kept or dropped
    assert [(c["document"], c["kept"]) for c in considered] == [
        ("acme-2020.pdf", False), ("acme-2021.pdf", True), ("acme-2022.pdf", False),
        ("acme-2022q2.pdf", False), ("acme-2022q4-release.pdf", False), ("acme-8k.pdf", False)]
    assert considered[1]["why"] == "10-K FY2021: answers FY2021"


def test_a_capitalised_abbreviation_names_its_company() -> None:
    shelf = {**SHELF, "amex.pdf": filing("American Express Company", ("American Express", "AXP"),
                                          "10-K", 2022, end="2022-12-31")}
    assert route("Does AMEX have an improving margin in 2022?", shelf).documents == ("amex.pdf",)
    # business acronyms and words that only look like one are not companies
    assert not route("What was EBITDA per the CEO in FY2022?", shelf).names
    assert not route("Ames is a city", shelf)


def test_names_are_written_as_people_write_them() -> None:
    shelf = {"ko.pdf": filing("The Coca-Cola Company", ("Coca-Cola", "KO"), "10-K", 2022),
             "ebay.pdf": filing("eBay Inc.", ("eBay", "EBAY"), "10-K", 2022)}
    assert route("What is Coca Cola's FY2022 revenue?", shelf).documents == ("ko.pdf",)
    assert route("eBay FY2022 revenue", shelf).documents == ("ebay.pdf",)


# --- how analysts write it (issue 46) -------------------------------------------------------
def test_a_question_anchored_to_a_period_goes_to_thatfiling() -> None:
    """"As of FY2020, what does it expect to pay in 2023?" asks the FY2020 report about a
    later year; the latest year named would pick the wrong filing."""
    r = route("As of FY2020, how much does Acme expect to pay in 2022?", SHELF)
    assert (r.documents, r.period) == (("acme-2020.pdf",), "FY2020")
    r = route("As of December 31, 2021, what lease payments did Acme owe for 2023?", SHELF)
    assert r.documents == ("acme-2021.pdf",)
    assert route("In its FY2021 annual report, what did Acme expect for 2023?",
                 SHELF).documents == ("acme-2021.pdf",)
    # without an anchor the latest period named still decides
    assert route("Acme revenue from 2020 to 2021", SHELF).documents == ("acme-2021.pdf",)


def test_a_quarter_without_its_quarterly_report_goes_to_that_years_annual_report() -> None:
    assert route("What did Acme report for Q3 of FY2021?", SHELF).documents == ("acme-2021.pdf",)
    # the quarter's own report first where the shelf has it
    assert route("What did Acme report for Q2 FY2022?", SHELF).documents == ("acme-2022q2.pdf",)


def test_names_written_in_lower_case_where_they_are_used_as_names() -> None:
    shelf = {**SHELF, "boeing-2022.pdf": filing("The Boeing Company", ("Boeing", "BA"), "10-K",
                                                 2022, end="2022-12-31")}
    assert route("what was boeing's net loss in fy2022?", shelf).documents == ("boeing-2022.pdf",)
    assert route("boeing 2022 annual report risks", shelf).documents == ("boeing-2022.pdf",)
    assert route("what is a globex?", shelf).documents == ("globex-2021.pdf",)  # too rare a word
    # a common word alone is no name: "block" here, as "target" or "square"
    assert not route("what does a block of shares cost in 2021?", shelf).names


def test_ampersand_names_and_a_users_aliases() -> None:
    from proxy_pointer.vocab.synonyms import Synonyms

    shelf = {**SHELF,
             "pg-2022.pdf": filing("The Procter & Gamble Company", ("Procter & Gamble", "PG"),
                                    "10-K", 2022, end="2022-06-30"),
             "jnj-2022.pdf": filing("Johnson & Johnson", ("JNJ",), "10-K", 2022,
                                     end="2022-12-31")}
    assert route("What was P&G's FY2022 revenue?", shelf).documents == ("pg-2022.pdf",)
    assert route("Did JnJ's 2022 sales grow?", shelf).documents == ("jnj-2022.pdf",)
    assert not route("What was Widgetco's FY2021 capex?", shelf).names
    aliases = Synonyms.parse("Widgetco, Acme\nNobody => Nowhere Inc\n", "aliases.txt")
    r = route("What was Widgetco's FY2021 capex?", shelf, aliases)
    assert (r.documents, r.names) == (("acme-2021.pdf",), ("Widgetco",))


def test_a_period_and_no_company_goes_to_the_filings_of_that_period_softly() -> None:
    """A question naming no company over a shelf of several: each company's filing of the
    period it names is searched (its card), and what their sections say decides (soft)."""
    r = route("Which company reported record widget sales in FY2021?", SHELF)
    assert r.documents == ("acme-2021.pdf", "block-2021.pdf", "globex-2021.pdf")
    assert (r.names, r.confidence, r.period) == ((), "soft", "FY2021")
    assert r.note.startswith("No company named: what the filings hold decides, the 3 that "
                             "cover FY2021 first") and r.open
    assert all(kept for _, kept, _ in r.considered)
    # a quarter asks for the quarter's reports; a kind keeps that kind
    assert route("Which company grew backlog in Q2 FY2022?", SHELF).documents == (
        "acme-2022q2.pdf",)
    assert route("Which 10-K reported a loss in FY2022?", SHELF).documents == ("acme-2022.pdf",)
    assert not route("Which company reported a loss in FY2030?", SHELF)


def test_a_month_asks_for_the_filings_dated_in_it() -> None:
    r = route("What did Acme announce in May 2023?", SHELF)
    assert r.documents == ("acme-8k.pdf",) and r.period == "2023-05"
    # nothing dated in the month: the calendar year's filings, below a dated one
    assert route("What did Acme announce in July 2022?", SHELF).documents == ("acme-2022.pdf",)


def test_a_former_name_brings_the_filings_it_named() -> None:
    got = {d: p for d, p, _ in route("What did Square report about sellers?", SHELF).candidates}
    assert got["square-2020.pdf"] == pytest.approx(0.8)  # its entity was Square then
    assert "block-2021.pdf" in got  # the latest annual report, as without the old name


def test_a_question_naming_no_company_is_open_and_routed_as_the_found_filing() -> None:
    r = route("Which company makes widgets in FY2030?", SHELF)  # no filing of FY2030
    assert r.open and not r.documents
    again = Shelf(SHELF).route_as("Which company reported FY2021 revenue?", "globex-2021.pdf")
    assert again.documents == ("globex-2021.pdf",) and again.entities == ("Globex PLC",)
    assert again.note.startswith("No company named: what the filings hold points to Globex")
    assert not Shelf(SHELF).route_as("FY2021?", "paper.md")  # unclaimed: no route
