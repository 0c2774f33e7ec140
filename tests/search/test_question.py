"""A request reads its question once: one ``Question``, each reading computed the first
time a stage asks for it, and routing reads the same trimmed text as the search."""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from proxy_pointer import HashEmbedder, Index
from proxy_pointer.search.config import MAX_QUESTION_CHARS
from proxy_pointer.search.question import Question
from proxy_pointer.search.routing import Shelf
from tests.shelf import SHELF, write_10ks


def _filings(folder) -> Index:
    docs = write_10ks(folder, (2021, 2022), columns=2,
                      extra="\n## Note 4 — Leases\n\nOperating lease cost was 12 in {year}.\n")
    return Index.build([docs], embedder=HashEmbedder(64))


def _counting(fn: Callable[..., Any], label: str, calls: Counter[str]) -> Callable[..., Any]:
    """``fn``, counting its calls on the question's text under ``label``."""
    def counted(text: Any, *args: Any, **kwargs: Any) -> Any:
        if text == ASKED:
            calls[label] += 1
        return fn(text, *args, **kwargs)
    return counted


ASKED = "What was Acme's 10-K lease cost in FY2022, see note 4?"


def test_each_reading_is_made_once_per_request(tmp_path, monkeypatch) -> None:
    """Routing (names, periods, form), the document choice (cues), understanding (phrase
    words) and ranking (labels, title words) all read the request's one Question: the
    periods and the phrase words of the question are each read once."""
    index = _filings(tmp_path)
    calls: Counter[str] = Counter()
    # every module that holds the readers, so a stage reading the question itself counts
    for name, module in list(sys.modules.items()):
        if not name.startswith("proxy_pointer"):
            continue
        for attr, label in (("asked_periods", "periods"), ("word_spans", "words")):
            original = getattr(module, attr, None)
            if callable(original):
                monkeypatch.setattr(module, attr, _counting(original, label, calls))
    res = index.retrieve(ASKED, budget=300)
    assert res.routing.documents == ("acme_2022_10k.md",)
    assert calls == {"periods": 1, "words": 1}


def test_routing_reads_the_text_the_search_reads() -> None:
    """A question is searched by its first MAX_QUESTION_CHARS characters; a company named
    only past them routes nowhere, as it is searched nowhere."""
    shelf = Shelf(SHELF)
    assert shelf.route("Acme revenue FY2021").documents == ("acme-2021.pdf",)
    long = "x " * MAX_QUESTION_CHARS + "Acme revenue FY2021"
    assert len(Question.of(long).text) == MAX_QUESTION_CHARS
    assert not shelf.route(long).documents


@pytest.mark.parametrize("text, kind, labels", [
    ("Acme's 10-Q for Q2 2022: table 3", "10-Q", (("table", "3"),)),
    ("the earnings release, Fig. 2 and section 2.1", "earnings release",
     (("figure", "2"), ("section", "2.1"))),
    ("How did revenue change?", "", ()),
])
def test_a_question_reads_its_form_and_labels(text, kind, labels) -> None:
    q = Question.of(text)
    assert (q.kind, q.labels) == (kind, labels)
    assert Question.of(q) is q  # made once: a Question passed on is not read again
