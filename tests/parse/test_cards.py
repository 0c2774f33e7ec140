"""Document cards and periods: what a filing, a paper or a manual says it is, read from its
first pages; what a question's periods are; how card filters match."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from growth import best_time
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy_pointer.parse.cards import Card, card_matches, effective_card, read_card, short_name
from proxy_pointer.parse.periods import Period, asked_periods, fiscal_year, quarter_period

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "financebench-dev" / "docs"

TEN_K = """\
UNITED STATES SECURITIES AND EXCHANGE COMMISSION
Washington, D.C. 20549
FORM 10-K
ANNUAL REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the fiscal year ended January 28, 2023
Commission File Number 001-11111 ______ ACME WIDGETS, INC. (Exact name of registrant as \
specified in its charter)
Securities registered pursuant to Section 12(b) of the Act:
Title of each class Trading Symbol(s) Name of each exchange on which registered
Common Stock, $0.01 par value ACMW New York Stock Exchange
0.5% Notes due 2030 ACMW30 New York Stock Exchange

# Item 1. Business

Acme Widgets, Inc. ("Acme" or the "Company") makes widgets. Refer to our Form 10-Q.
"""

TEN_Q = """\
FORM 10-Q
QUARTERLY REPORT PURSUANT TO SECTION 13 OR 15(d) OF THE SECURITIES EXCHANGE ACT OF 1934
For the quarterly period ended December 31, 2022
Commission file number: 1-2222
# GLOBEX PLC
(Exact name of Registrant as specified in its charter)
Ordinary Shares GLBX The Nasdaq Stock Market LLC

# Condensed Statements of Income

|  | Three and six months ended December 31, 2022 |
"""

EIGHT_K = """\
FORM 8-K
CURRENT REPORT
Date of Report (Date of earliest event reported): May 3, 2023
# Initech Corporation
(Exact name of registrant as specified in its charter)
"""

RELEASE = """\
# Summary

Initech Reports Fourth Quarter and Full-Year 2022 Results; Provides 2023 Outlook

PURCHASE, N.Y. - February 9, 2023 - Initech Corporation (NYSE: INTC) today reported results.
Please refer to Initech's Annual Report on Form 10-K.
"""

PAPER = """\
# Attention Over Widgets

## Abstract

We study widgets with attention. Results improve by 3 points in 2021.

## Introduction

Text.
"""

MANUAL = """\
# Pump Station Handbook

## Safety

Wear gloves.

## Maintenance

Grease the bearings in 2024.
"""


def test_an_annual_report_card_reads_its_cover() -> None:
    card = read_card(TEN_K, "UNITED STATES SECURITIES AND EXCHANGE COMMISSION")
    assert card.kind == "10-K"  # the cover's FORM, not "our Form 10-Q" below it
    assert card.entity == "Acme Widgets, Inc." and card.title == "Acme Widgets, Inc."
    # short form, trading symbol (not the notes' ACMW30), and the name it defines for itself
    assert card.names == ("Acme Widgets, Inc.", "Acme Widgets", "ACMW", "Acme")
    # a year ending in January is named by the year before, as retailers name it
    assert (card.period, card.fiscal_year, card.quarter, card.period_end) == (
        "FY2022", 2022, None, "2023-01-28")


def test_a_quarterly_report_knows_its_quarter_and_fiscal_year() -> None:
    card = read_card(TEN_Q, "GLOBEX PLC")
    assert (card.kind, card.entity, card.names) == (
        "10-Q", "Globex PLC", ("Globex PLC", "Globex", "GLBX"))
    # six months into the year at December 31: Q2 of the year ending June 2023
    assert (card.period, card.fiscal_year, card.quarter, card.period_end) == (
        "Q2 FY2023", 2023, 2, "2022-12-31")


def test_a_current_report_is_dated_by_its_event_and_a_release_by_its_quarter() -> None:
    card = read_card(EIGHT_K, "Initech Corporation")
    assert (card.kind, card.entity, card.period, card.period_end) == (
        "8-K", "Initech Corporation", "2023-05-03", "2023-05-03")
    release = read_card(RELEASE, "Summary")
    assert (release.kind, release.entity, release.period, release.quarter) == (
        "earnings release", "Initech Corporation", "Q4 FY2022", 4)
    assert "INTC" in release.names


def test_papers_and_manuals_get_no_entity_and_no_period() -> None:
    paper = read_card(PAPER, "Attention Over Widgets")
    assert (paper.kind, paper.entity, paper.period) == ("paper", "", "")
    assert paper.summary.startswith("We study widgets")
    manual = read_card(MANUAL, "Pump Station Handbook", ["Pump Station Handbook"])
    assert (manual.kind, manual.entity, manual.period, manual.names) == ("", "", "", ())
    assert manual.title == "Pump Station Handbook"
    empty = read_card("", "")
    assert empty == Card()


def test_metadata_overrides_the_card_and_a_period_sets_its_year() -> None:
    card = read_card(MANUAL, "Pump Station Handbook")
    mine = effective_card(card, {"entity": "Pumps Ltd", "period": "Q3 2024", "kind": "manual",
                                 "access": ["ops"]})
    assert (mine.entity, mine.names, mine.kind) == ("Pumps Ltd", ("Pumps Ltd", "Pumps"),
                                                    "manual")
    assert (mine.period, mine.fiscal_year, mine.quarter) == ("Q3 2024", 2024, 3)
    assert mine.title == card.title
    assert effective_card(card, {"year": 2024}) is card  # no card field: unchanged


def test_card_filters_match_names_kinds_and_periods() -> None:
    card = read_card(TEN_Q, "GLOBEX PLC")
    assert card_matches(card, "entity", "globex") and card_matches(card, "entity", "GLBX")
    assert card_matches(card, "entity", "Globex plc") and not card_matches(card, "entity", "Acme")
    assert card_matches(card, "kind", "10-q") and card_matches(card, "kind", "quarterly report")
    assert not card_matches(card, "kind", "10-K")
    for period in ("FY2023", "Q2 FY2023", "fiscal 2023", "2022-12-31", "December 31, 2022"):
        assert card_matches(card, "period", period), period
    for period in ("FY2022", "Q3 FY2023", "2022-09-30"):
        assert not card_matches(card, "period", period), period
    assert card_matches(card, "fiscal_year", "2023") and card_matches(card, "quarter", "2")


def test_short_names_drop_the_legal_suffix_only() -> None:
    assert short_name("The Boeing Company") == "Boeing"
    assert short_name("PepsiCo, Inc.") == "PepsiCo"
    assert short_name("Lockheed Martin Corporation") == "Lockheed Martin"
    assert short_name("Group") == "Group"  # nothing would be left


@pytest.mark.parametrize(("question", "years", "quarter", "dates"), [
    ("Is 3M capital-intensive based on FY2022 data?", (2022,), None, ()),
    ("AMCOR's restructuring liability as oF Q2 of FY2023 close?", (2023,), 2, ()),
    ("the FY2019 - FY2020 revenue growth", (2019, 2020), None, ()),
    ("second quarter of 2023 revenue", (2023,), 2, ()),
    ("FY21 capex", (2021,), None, ()),
    ("fiscal year 2020 margin", (2020,), None, ()),
    ("At the AGM held on May 3, 2023, what passed?", (), None, (date(2023, 5, 3),)),
    ("revenue of $2,021 million grew 2020 % and 1,999 units", (), None, ()),
    ("Is the business cyclical?", (), None, ()),
    ("Q4 2022 and full year", (2022,), 4, ()),
    # as analysts write them
    ("Q22023 revenue", (2023,), 2, ()),
    ("Q2'23 revenue", (2023,), 2, ()),
    ("2Q23 gross margin", (2023,), 2, ()),
    ("3Q FY24 guidance", (2024,), 3, ()),
    ("q1-2023 eps", (2023,), 1, ()),
    ("Q2 FY23 revenue", (2023,), 2, ()),
    ("1H 2023 revenue", (2023,), 2, ()),  # a half: the report that ends it
    ("H2 FY2022 margin", (2022,), 4, ()),
    ("first half of 2023 sales", (2023,), 2, ()),
    ("nine months 2023 cash flow", (2023,), 3, ()),
    ("H1 revenue grew in 2023", (2023,), None, ()),  # a half without its year: no quarter
    ("FY'22 capex", (2022,), None, ()),
    ("fiscal 22 capex", (2022,), None, ()),
    ("the quarter ended July 2, 2023", (), None, (date(2023, 7, 2),)),
])
def test_question_periods(question: str, years: tuple[int, ...], quarter: int | None,
                          dates: tuple[date, ...]) -> None:
    asked = asked_periods(question)
    assert (asked.years, asked.quarter, asked.dates) == (years, quarter, dates)


def test_the_target_is_the_latest_period_named() -> None:
    assert asked_periods("FY2019 - FY2021 average").target == Period(2021)
    assert asked_periods("as of December 31, 2021").target == Period(
        2021, None, date(2021, 12, 31))
    assert asked_periods("nothing here").target is None
    assert fiscal_year(date(2022, 1, 29)) == 2021 and fiscal_year(date(2022, 6, 30)) == 2022
    assert quarter_period(date(2022, 6, 26), 2) == Period(2022, 2, date(2022, 6, 26))
    assert quarter_period(date(2022, 9, 30), 1).year == 2023  # a year ending in June


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400), st.text(max_size=40))
def test_any_text_gets_a_card_without_raising(text: str, title: str) -> None:
    card = read_card(text, title)
    assert isinstance(card, Card)
    assert Card.from_dict(card.to_dict()) == card
    asked_periods(text)


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"(FORM 10-[KQ]\n)?(For the (fiscal year|quarterly period) ended "
                     r"[A-Z][a-z]{2,8} \d{1,2}, (19|20)\d\d\n)?(Date of Report: \w+ \d+, \d{4}\n)?"
                     r"[A-Z ,.]{0,30}\(Exact name of registrant\)", fullmatch=True))
def test_cover_like_text_never_raises(text: str) -> None:
    read_card(text, "")


#: The expected card of every filing on both dev shelves, read from each filing's own
#: cover by hand (a note says where a file's name and its cover disagree).
CARDS = Path(__file__).resolve().parents[2] / "benchmarks" / "routing" / "cards.jsonl"
SHELVES = SHARED.parents[1]


def _labelled() -> list[dict]:
    return [json.loads(line) for line in CARDS.read_text(encoding="utf-8").splitlines()]


def test_the_labelled_cards_cover_both_dev_shelves() -> None:
    rows = _labelled()
    assert {r["shelf"] for r in rows} == {"financebench-dev", "filings-shelf"}
    assert len({r["document"] for r in rows}) == len(rows) == 53
    assert all((r["entity"] and r["kind"] and r["period"]) or "note" in r for r in rows)


@pytest.mark.slow  # the shared dev data: CI runs it
@pytest.mark.skipif(not SHARED.is_dir(), reason="the dev shelves are not beside the repo")
def test_every_dev_filing_gets_its_labelled_card() -> None:
    from proxy_pointer.convert import convert_file
    from proxy_pointer.parse.tree import build_tree

    fields = ("entity", "kind", "period", "period_end")
    want, got = {}, {}
    for row in _labelled():
        path = SHELVES / row["shelf"] / "docs" / row["document"]
        md = convert_file(path).markdown
        tree = build_tree(md, doc_id=path.name)
        card = read_card(md, tree.title, [n.title for n in tree.roots])
        want[row["document"]] = tuple(row[f] for f in fields)
        got[row["document"]] = tuple(getattr(card, f) for f in fields)
    assert got == want


def test_a_form_number_is_not_a_trading_symbol() -> None:
    card = read_card("FORM 10-K NYSE\nCommission File Number 1-1\nACME CORP\n"
                     "(Exact name of registrant)\n", "")
    assert card.names == ("Acme Corp", "Acme")
    release = read_card("Acme reports annual results for 2022 and the quarter.\n", "")
    assert release.kind == ""  # an earnings release names its exchange and symbol


def test_a_glossy_report_states_its_cover_after_the_letter() -> None:
    letter = "# Dear shareholders\n\n" + "We grew our widget business again this year. " * 600
    card = read_card(letter + "\n" + TEN_K.replace("ended January 28, 2023",
                                                   "ended: 12/31/2022"), "Dear shareholders")
    assert (card.kind, card.entity, card.period, card.period_end) == (
        "10-K", "Acme Widgets, Inc.", "FY2022", "2022-12-31")


def test_a_january_year_is_named_as_the_filing_names_it() -> None:
    walmart = TEN_K.replace("January 28, 2023", "January 31, 2023") + (
        "\nIn fiscal 2023, net sales grew. Compared with fiscal 2022, fiscal 2023 was strong.\n")
    assert read_card(walmart, "").period == "FY2023"
    target = TEN_K + "\nIn fiscal 2022 (the year ended January 28, 2023) sales grew.\n"
    assert read_card(target, "").period == "FY2022"
    assert read_card(TEN_K, "").period == "FY2022"  # silent: January names the year before


def test_a_quarter_of_a_january_year_is_named_as_the_filing_names_it() -> None:
    """A retailer's 10-Q: the quarter ended July 28, 2023 is in the year ending January 2024,
    which Walmart calls fiscal 2024 and Target fiscal 2023; the card follows the filing."""
    q2 = TEN_Q.replace("December 31, 2022", "July 28, 2023").replace(
        "Three and six months ended December 31, 2022", "Three and six months ended July 28, 2023")
    walmart = q2 + "\nIn the second quarter of fiscal 2024 sales grew; fiscal 2024 guidance.\n"
    target = q2 + "\nIn the second quarter of 2023 (fiscal 2023) sales fell.\n"
    assert (read_card(walmart, "").period, read_card(walmart, "").period_end) == (
        "Q2 FY2024", "2023-07-28")
    assert read_card(target, "").period == "Q2 FY2023"
    assert read_card(q2, "").period == "Q2 FY2023"  # silent: January names the year before


def test_a_shelf_of_non_calendar_fiscal_years_routes_by_the_filings_calendar() -> None:
    """A synthetic shelf of companies whose years end in January, June and September: a
    question's fiscal quarter is the filing's own, not the calendar's."""
    from proxy_pointer.search.routing import route

    def card(entity: str, kind: str, period: str, end: str) -> Card:
        year = int(period[-4:])
        quarter = int(period[1]) if period.startswith("Q") else None
        return Card(entity, entity, (entity,), kind, period, year, quarter, end)

    shelf = {"shopco-10k-fy2023.pdf": card("Shopco", "10-K", "FY2023", "2023-01-31"),
             "shopco-10q-q2fy2024.pdf": card("Shopco", "10-Q", "Q2 FY2024", "2023-07-28"),
             "juneco-10k-fy2023.pdf": card("Juneco", "10-K", "FY2023", "2023-06-30"),
             "juneco-10q-q1fy2024.pdf": card("Juneco", "10-Q", "Q1 FY2024", "2023-09-30"),
             "septco-10k-fy2023.pdf": card("Septco", "10-K", "FY2023", "2023-09-30")}
    assert route("What were Shopco's sales in Q2 of FY2024?", shelf).documents == (
        "shopco-10q-q2fy2024.pdf",)
    assert route("What were Shopco's FY2023 sales?", shelf).documents == (
        "shopco-10k-fy2023.pdf",)
    assert route("Juneco's Q1 FY2024 margin?", shelf).documents == ("juneco-10q-q1fy2024.pdf",)
    assert route("Juneco's sales for the quarter ended September 30, 2023?", shelf).documents == (
        "juneco-10q-q1fy2024.pdf",)
    # Septco's Q3 of FY2023 has no 10-Q here: that fiscal year's annual report answers
    assert route("Septco's Q3 FY2023 revenue?", shelf).documents == ("septco-10k-fy2023.pdf",)


def test_names_a_question_may_use() -> None:
    from proxy_pointer.parse.cards import _names as names  # the rule itself, on bare names

    assert names("Amazon.com, Inc.", (), "") == ("Amazon.com, Inc.", "Amazon")
    assert names("JPMorgan Chase & Co.", (), "")[1:] == ("JPMorgan Chase", "JPMorgan")
    # a word too rare for the vocabulary starts the name: it names the company alone
    assert names("Costco Wholesale Corporation", (), "")[-1] == "Costco"
    # common words never do
    assert names("General Mills, Inc.", (), "") == ("General Mills, Inc.", "General Mills")
    assert names("American Express Company", (), "")[-1] == "American Express"
    assert names("MGM Resorts International", (), "")[-1] == "MGM Resorts"


@pytest.mark.parametrize("unit", [
    "Acme Widget Holdings Group Partners Trust ",  # capitalised words, never "today"
    "1-12609 ACME CORPORATION " + "x" * 40 + "\n",  # registrant rows that never end in a number
    "January 4, 2023 \n \n",  # dates above no "Date of Report"
    "Acme Corp (formerly ",  # former-name marks that never close
    "first quarter " + "ended " * 5,  # a quarter that ends in no date
])
def test_the_card_rules_cost_linear_time_in_the_cover(unit: str) -> None:
    """Each rule's pattern is bounded per start: 10x the cover costs about 10x (a ratio of
    the best of several repeats, no clock limit)."""
    def cost(text: str) -> float:
        head = "FORM 8-K\nNews Release\nAcme Reports Fourth Quarter Results\n"
        return best_time(lambda: read_card(head + text, ""))

    n = 4_500 // len(unit)  # 10x stays inside the cover pages read (_HEAD_CHARS)
    small, large = cost(unit * n), cost(unit * 10 * n)
    assert large < 25 * small, (small, large)


def test_a_month_is_a_span_and_a_quarter_keeps_its_own_year() -> None:
    march = asked_periods("Who did Acme appoint to its board in March 2023?").target
    assert march == Period(2023, None, date(2023, 3, 31), date(2023, 3, 1))
    assert asked_periods("layoffs in Sept. 2022").target.start == date(2022, 9, 1)
    assert asked_periods("the vote on May 3, 2023").target == Period(2023, None, date(2023, 5, 3))
    # the 2023 outlook is in the fourth-quarter 2022 results: the quarter is 2022's
    asked = asked_periods("What 2023 outlook did Acme give with its fourth-quarter 2022 results?")
    assert asked.target == Period(2022, 4)  # anchored by "with its ... results"
    assert asked_periods("revenue in Q4 2022 against FY2023").target == Period(2023)
    assert asked_periods("Q4 and full year 2022").target == Period(2022, 4)


@pytest.mark.parametrize("unit", ["March ", "March 20", "Q2 FY", "with its fourth quarter "])
def test_periods_cost_linear_time_in_the_question(unit: str) -> None:
    """Every period pattern is bounded per start: 10x the text costs about 10x (a ratio of
    the best of several repeats, no clock limit)."""
    small = best_time(lambda: asked_periods(unit * 500))
    large = best_time(lambda: asked_periods(unit * 5000))
    assert large < 25 * small, (small, large)
