"""boost_named: a section the question names by all the words of its title comes first."""

from __future__ import annotations

from collections.abc import Sequence

from proxy_pointer.search.question import Question
from proxy_pointer.search.ranking import boost_named
from proxy_pointer.vocab.keys import title_words

TITLES = {0: "Liquidity and Capital Resources", 1: "Overview", 2: "Income Taxes",
          3: "Consolidated Statements of Cash Flows", 4: "Consolidated Balance Sheets"}
RANKED = [(0, 0.9), (1, 0.8), (2, 0.7), (3, 0.2), (4, 0.1)]


class _Crumbs:
    """The one corpus read boost_named makes: each row's breadcrumb."""

    def crumbs(self, rows: Sequence[int]) -> list[tuple[str, ...]]:
        return [("filing.pdf", "Item 8", TITLES[r]) for r in rows]


def _order(question: str, depth: int = 10) -> list[int]:
    return [r for r, _ in boost_named(_Crumbs(), RANKED, Question.of(question), depth)]  # type: ignore[arg-type]


def test_a_statement_named_by_its_words_comes_first_others_keep_their_order() -> None:
    assert _order("Using the cash flow statement, how much cash did operations give?") == [
        3, 0, 1, 2, 4]
    assert _order("What was the largest liability in the Balance Sheet?") == [4, 0, 1, 2, 3]



def test_no_title_named_changes_nothing() -> None:
    # a topic title is no document part: "income taxes" asks about a topic
    assert _order("How did income taxes change?") == [0, 1, 2, 3, 4]
    assert _order("What drove revenue growth?") == [0, 1, 2, 3, 4]
    # one word of a two-word title is not its name; a one-word title names nothing
    assert _order("Give an overview of the balance") == [0, 1, 2, 3, 4]


def test_only_the_first_rows_are_looked_at() -> None:
    assert _order("the balance sheet", depth=4) == [0, 1, 2, 3, 4]


def test_title_words_drop_fillers_and_plurals() -> None:
    assert title_words("Consolidated Statements of Cash Flows") == {"statement", "cash", "flow"}
    assert title_words("CONDENSED CONSOLIDATED BALANCE SHEETS") == {"balance", "sheet"}
