"""Questions that span periods (issue 59): every year they name is read, and the result
says which the context holds and which filing on the shelf reports the rest."""

from __future__ import annotations

import pytest

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.parse.periods import Period, asked_periods
from proxy_pointer.search.coverage import coverage, printed_years, years_held
from tests.shelf import SHELF, write_10ks


@pytest.mark.parametrize("question, span", [
    ("What is the FY2019 - FY2021 3 year average capex?", (2019, 2020, 2021)),
    ("revenue growth 2019-2021", (2019, 2020, 2021)),
    ("from 2018 through 2020", (2018, 2019, 2020)),
    ("How did the tax rate change between FY2021 and FY2022?", (2021, 2022)),
    ("the year-over-year change in revenue in 2022", (2021, 2022)),
    ("the three-year average as of FY2021", (2019, 2020, 2021)),
    ("average net margin over the past five years as of 2022", (2018, 2019, 2020, 2021, 2022)),
    ("each of the three years ended 2022", (2020, 2021, 2022)),
    ("cash between December 31, 2021 and June 26, 2022", (2021, 2022)),
    ("debt maturities over the next five years as of FY2022", ()),
    ("What was revenue in 2022?", ()),
    ("What did it pay on its 10-year notes issued in 2022?", ()),
    ("a three-year credit facility signed in 2021", ()),
    ("How many years of data are shown?", ()),
])
def test_the_years_a_question_spans(question: str, span: tuple[int, ...]) -> None:
    assert asked_periods(question).span == span


def test_a_range_written_with_a_hyphen_targets_its_latest_year() -> None:
    # "2019-2021" once read as 2019 alone, routing the question to the FY2019 filing
    assert asked_periods("growth 2019-2021").target == Period(2021)


def test_years_printed_as_periods_are_those_on_a_line_of_two_or_more() -> None:
    text = ("Years ended December 31, 2022 2021 2020\nNet sales 34,229 35,355\n"
            "In 2018 we moved our headquarters.\n2019 vs. 2018 change")
    assert printed_years([text]) == {2018, 2019, 2020, 2021, 2022}
    assert printed_years(["In 2018 we moved.", "Revenue 2,021 and 2,020"]) == set()


def test_the_filings_that_report_the_missing_years_are_named() -> None:
    assert years_held(SHELF["acme-2022.pdf"]) == (2020, 2021, 2022)
    assert years_held(SHELF["acme-2022q2.pdf"]) == (2021, 2022)
    assert years_held(SHELF["acme-8k.pdf"]) == (2023,)
    family = {d: c for d, c in SHELF.items() if d.startswith("acme")}
    header = "(Millions) 2022 2021 2020"
    got = coverage((2017, 2018, 2019, 2020, 2021, 2022), [header], ["acme-2022.pdf"], family)
    assert got.found == (2020, 2021, 2022) and got.missing == (2017, 2018, 2019)
    # the FY2020 10-K reports 2018-2020 (the FY2021 one only 2019 of the missing); no
    # filing reports 2017
    assert got.elsewhere == (("acme-2020.pdf", (2018, 2019)),)
    assert got.describe() == ("periods 2017-2022: the context holds 2020-2022; 2018, 2019 in "
                              "acme-2020.pdf; no filing the request may search reports 2017")
    full = coverage((2021, 2022), [header], ["acme-2022.pdf"], family)
    assert not full.missing and full.describe().endswith("every one")
    assert not coverage((), [header], [], family)


def test_the_result_says_which_years_it_holds_and_where_the_rest_are(tmp_path) -> None:
    docs = write_10ks(tmp_path, (2020, 2022))
    index = Index.build([docs], embedder=HashEmbedder(64))
    assert {c.fiscal_year for c in index.reader.cards().values()} == {2020, 2022}
    res = index.retrieve("What was Acme's average net income from FY2018 to FY2022?",
                         budget=400)
    assert res.routing.documents == ("acme_2022_10k.md",)
    p = res.periods
    assert p.asked == (2018, 2019, 2020, 2021, 2022) and p.found == (2020, 2021, 2022)
    assert p.elsewhere == (("acme_2020_10k.md", (2018, 2019)),)
    assert res.to_dict()["periods"]["missing"] == [2018, 2019]
    # a request that may search only the FY2022 filing is told no more than that
    alone = index.retrieve("What was Acme's average net income from FY2018 to FY2022?",
                           budget=400, doc_ids=["acme_2022_10k.md"])
    assert alone.periods.missing == (2018, 2019) and alone.periods.elsewhere == ()
    assert not index.retrieve("What was Acme's net income in FY2022?", budget=400).periods

