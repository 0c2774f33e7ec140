"""The filing vocabulary as data (proxy_pointer/vocab/filings.toml): every row's examples hold,
every reference resolves, and the readers that took their words from it read them the same."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from growth import best_time

from proxy_pointer.errors import ConfigError
from proxy_pointer.parse.cards import KIND_WORDS, Card, card_matches, read_card, short_name
from proxy_pointer.parse.periods import parse_date
from proxy_pointer.search.routing import route
from proxy_pointer.vocab.filings import FILINGS, read_vocabulary
from proxy_pointer.vocab.keys import words
from proxy_pointer.vocab.phrases import PhraseSet, expand_choices
from proxy_pointer.vocab.understanding import understand

CONCEPTS = {c.key: c for c in FILINGS.concepts}


@pytest.mark.parametrize("key", sorted(CONCEPTS))
def test_each_concept_matches_its_examples_and_misses_its_near_misses(key: str) -> None:
    concept = CONCEPTS[key]
    assert concept.matches and concept.misses, f"{key}: a row needs both kinds of example"
    for q in concept.matches:
        assert key in understand(q).concepts, q
    for q in concept.misses:
        assert key not in understand(q).concepts, q


def test_every_reference_resolves_and_every_item_is_printed_somewhere() -> None:
    statements = {s.key for s in FILINGS.statements}
    for c in FILINGS.concepts:
        assert c.statements and set(c.statements) <= statements, c.key
        for item in c.items:
            assert FILINGS.item(item).names, item
    for i in FILINGS.items:
        assert i.statement in statements and i.names, i.key


@pytest.mark.parametrize("statement", FILINGS.statements, ids=lambda s: s.key)
def test_each_statement_title_names_its_section(statement) -> None:
    for title in statement.titles:
        plural = title.title().replace("Statement ", "Statements ", 1)
        for printed in (title.title(), f"Consolidated {plural}",
                        f"CONDENSED CONSOLIDATED {title.upper()}"):
            assert statement.key in FILINGS.section_kinds(printed), printed
    assert FILINGS.section_kinds("Note 7. Stock-Based Compensation") == set()
    assert FILINGS.section_kinds("Note 7. Segment Information") == {"segments"}


def test_statement_titles_as_filings_print_them() -> None:
    kinds = FILINGS.section_kinds
    assert kinds("CONSOLIDATED INCOME STATEMENTS") == {"income"}
    assert kinds("Consolidated Cash Flows Statements") == {"cash_flow"}
    assert kinds("Consolidated Statement of Financial Position") == {"balance_sheet"}
    assert kinds("Consolidated Statements of Earnings") == {"income"}
    assert kinds("Statements of Consolidated Income") == {"income"}
    assert kinds("Consolidated Statement of Changes in Shareholders’ Equity") == {"equity"}
    assert kinds("Consolidated Statements of Income and Comprehensive Income") == {"income"}
    assert kinds("Note 12. Income Taxes") == {"income_taxes"}
    # a statement's name inside another title is not that statement
    assert kinds("Supplemental Balance Sheet Information") == set()
    assert kinds("Selected Income Statement Data by Segment") == set()


def test_the_converter_finds_the_same_statement_titles() -> None:
    pattern = FILINGS.statement_pattern
    for title in ("Consolidated Balance Sheets", "CONDENSED CONSOLIDATED STATEMENTS OF CASH FLOWS",
                  "Statements of Consolidated Operations", "Income Statements",
                  "Consolidated Statements of Shareowners’ Equity",
                  "Consolidated Statement of Financial Condition",
                  "Statement of Profit or Loss", "Parent Company Balance Sheet"):
        m = pattern.match(title)
        assert m is not None and m[0] == title, title
    assert pattern.match("Statements about our business") is None
    assert pattern.match("Balance sheets of our customers") is not None  # a title start
    # the statement's kind, as the converter keeps one heading per kind
    assert FILINGS.statement_kind("Consolidated Statements of Income and Comprehensive "
                                  "Income") == "comprehensive_income"
    assert FILINGS.statement_kind("Consolidated Statements of Operations") == "income"


def test_forms_months_suffixes_and_exchanges_come_from_the_vocabulary() -> None:
    assert KIND_WORDS["10-K"][:3] == ("10-k", "10k", "10 k")
    assert "annual" in KIND_WORDS["10-KT"] and "annual report" in KIND_WORDS["10-K"]
    assert card_matches(Card(kind="10-Q"), "kind", "quarterly report")
    assert FILINGS.natures("annual") == ("10-K", "10-KT", "20-F", "40-F")
    assert parse_date("Sept. 30, 2022").isoformat() == "2022-09-30"
    assert short_name("Acme Widgets Holdings, Inc.") == "Acme Widgets"
    head = ("FORM 10-KT\nTRANSITION REPORT\nACME WIDGETS, INC.\n(Exact name of registrant as "
            "specified in its charter)\nCommon stock ACMW The Nasdaq Stock Market LLC\n")
    card = read_card(head)
    assert (card.kind, card.entity) == ("10-KT", "Acme Widgets, Inc.")
    assert "ACMW" in card.names


def test_a_transition_report_is_an_annual_report_for_routing() -> None:
    """10-KT was a form on covers but no annual report for routing (routing._ANNUAL)."""
    shelf = {
        "acme-2021.pdf": Card(title="Acme", entity="Acme Corp", names=("Acme",), kind="10-K",
                              period="FY2021", fiscal_year=2021, period_end="2021-12-31"),
        "acme-2022t.pdf": Card(title="Acme", entity="Acme Corp", names=("Acme",), kind="10-KT",
                               period="FY2022", fiscal_year=2022, period_end="2022-09-30"),
        "acme-2022q2.pdf": Card(title="Acme", entity="Acme Corp", names=("Acme",), kind="10-Q",
                                period="Q2 FY2022", fiscal_year=2022, quarter=2,
                                period_end="2022-03-31"),
    }
    assert route("What was Acme's FY2022 revenue?", shelf).documents == ("acme-2022t.pdf",)
    # without a period: the latest annual report (the transition report), not the 10-Q alone
    assert route("What are Acme's risks?", shelf).documents == ("acme-2022t.pdf",)


def test_a_title_that_is_an_html_file_name_is_no_title() -> None:
    """'.html'.endswith('.htm') is false: an HTML file's name was taken for its title."""
    head = ("FORM 10-K\nACME WIDGETS, INC.\n(Exact name of registrant as specified in its "
            "charter)\n")
    assert read_card(head, title="acme-10k-2022.html").title == "Acme Widgets, Inc."
    assert read_card(head, title="acme-10k-2022.htm").title == "Acme Widgets, Inc."


def test_phrases_are_matched_word_by_word_in_linear_steps() -> None:
    assert words("Shareholders’ Equity") == ("shareholder", "equity")
    assert words("capital-intensive PP&E; D&A") == ("capital", "intensive", "pp&e", "d&a")
    assert words("the company's sales") == ("the", "company", "sale")
    found = PhraseSet([("working capital", 1), ("capital", 2)]).find(
        "Is working capital positive?", longest=True)
    assert [(m.value, m.start, m.end) for m in found] == [(1, 3, 18)]
    assert expand_choices("statement of [changes in] (equity|deficit)") == [
        "statement of equity", "statement of deficit", "statement of changes in equity",
        "statement of changes in deficit"]


def test_a_broken_vocabulary_file_names_itself_and_the_row(tmp_path: Path) -> None:
    bad = tmp_path / "filings.toml"
    bad.write_text('[[concept]]\nkey = "x"\nwritten = ["x"]\nstatements = ["nowhere"]\n')
    with pytest.raises(ConfigError, match=re.escape(f"{bad}: concept 'x' names what the "
                                                    "file does not define: nowhere")):
        read_vocabulary(bad)
    bad.write_text("[[concept]\n")
    with pytest.raises(ConfigError, match="cannot read the vocabulary"):
        read_vocabulary(bad)
    bad.write_text('[[form]]\nname = "X-1"\nnature = "other"\nread_by = "smell"\n')
    with pytest.raises(ConfigError, match=re.escape(f"{bad}: form 'X-1' is read by 'smell'")):
        read_vocabulary(bad)


def test_understanding_a_question_is_linear_in_its_length() -> None:
    """Phrases are looked up word by word: 10x the text costs about 10x (20x allowed)."""
    def cost(text: str) -> float:
        return best_time(lambda: understand(text), repeats=3)

    for unit in ("working ", "days inventory ", "capex ", "statement of "):
        small, large = cost(unit * 1_000), cost(unit * 10_000)
        assert large < 20 * small + 0.05, (unit, small, large)


@pytest.mark.parametrize("item", FILINGS.items, ids=lambda i: i.key)
def test_each_line_item_written_another_way_is_searched_as_printed(item) -> None:
    for written in item.written:
        e = understand(f"What was the {written} in 2022?")
        assert [a.written for a in e.synonyms] == [written], written
        assert all(n in e.searched for n in item.names), (written, e.searched)
    # a name a filing prints is searched as written: nothing is added
    assert not understand(f"What was the {item.names[0]} in 2022?").synonyms


@pytest.mark.parametrize("form", FILINGS.forms, ids=lambda f: f.name)
def test_each_form_is_named_by_its_written_forms(form) -> None:
    card = Card(kind=form.name)
    for written in (form.name, *form.written):
        assert card_matches(card, "kind", written), written


@pytest.mark.parametrize(("pattern", "matches", "misses"), [
    ("auditor_report_pattern",
     ["Report of Independent Registered Public Accounting Firm",
      "REPORTS OF INDEPENDENT REGISTERED PUBLIC ACCOUNTING FIRM on the Statements",
      "Report of Independent Auditors"],
     ["Management's Report on Internal Control", "See the Report of Independent Auditors",
      "Report of Independent Auditorship"]),
    ("notes_pattern",
     ["Notes to Consolidated Financial Statements", "NOTES TO THE CONDENSED CONSOLIDATED "
      "FINANCIAL STATEMENTS (unaudited)", "Notes to the Financial Statements"],
     ["See Notes to the Consolidated Financial Statements", "Notes to Table 3",
      "Notes to financial statementsx"]),
])
def test_titles_beside_the_statements_are_the_vocabularys(pattern: str, matches: list[str],
                                                          misses: list[str]) -> None:
    rx = getattr(FILINGS, pattern)
    assert all(rx.match(t) for t in matches), matches
    assert not any(rx.match(t) for t in misses), misses


def test_a_continued_statement_page_is_marked_by_the_vocabulary() -> None:
    rx = FILINGS.continued_pattern
    for title in ("Consolidated Balance Sheets (continued)", "Statements of Cash Flows (cont'd)",
                  "BALANCE SHEET (Cont.)"):
        assert rx.search(title), title
    assert not rx.search("Discontinued operations") and not rx.search("Contingencies")


@pytest.mark.parametrize("example", FILINGS.card_examples, ids=lambda e: e.layout[:40])
def test_each_card_example_reads_its_fields(example) -> None:
    card = read_card(example.text, "")
    assert {k: getattr(card, k) for k, _ in example.expected} == dict(example.expected)


def test_the_card_rules_read_words_from_the_vocabulary() -> None:
    vocab = read_vocabulary()
    assert "announces" in vocab.release_verbs and "f/k/a" in vocab.former_name_marks
    assert "California" in vocab.jurisdictions
    assert vocab.release_header_pattern.match("# News Release")
    assert not vocab.release_header_pattern.match("Newsletter Release")


def test_no_form_name_is_written_in_code() -> None:
    """Forms live in the vocabulary: no string in the package's code (docstrings aside) is
    a form's name, so what a form is and how it is read can only differ by its row."""
    import ast

    package = Path(__file__).resolve().parents[2] / "proxy_pointer"
    names = {f.name for f in FILINGS.forms}
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, ast.Module | ast.ClassDef | ast.FunctionDef
                              | ast.AsyncFunctionDef)
                and n.body and isinstance(n.body[0], ast.Expr)
                and isinstance(n.body[0].value, ast.Constant)}
        found += [f"{path.name}:{n.lineno} {n.value!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and n.value in names and id(n) not in docs]
    assert found == []


def test_forms_say_how_they_are_read_and_dated() -> None:
    assert FILINGS.read_by("headline") == "earnings release"
    assert FILINGS.read_by("abstract") == "paper"
    assert FILINGS.event_dated("8-K") and FILINGS.event_dated("6-K")
    assert not FILINGS.event_dated("10-Q") and not FILINGS.event_dated("")
    assert ("ANNUAL REPORT PURSUANT", "10-K") in FILINGS.cover_phrases
    assert "earnings release" not in FILINGS.form_pattern.split("|")
