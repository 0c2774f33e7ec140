"""Questions that need a note get it (issue 59): on every dev 10-K that has the note as a
section, "What did <company> acquire in <year>?" hands the business-combinations note (or
a section inside it) and a question about legal proceedings the contingencies note or
Item 3. The statement boost finds notes by their titles, so the hash embedder serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.parse.cards import short_name
from proxy_pointer.search.statements import statement_sections
from proxy_pointer.vocab.filings import FILINGS

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "financebench-dev" / "docs"

QUESTIONS = {
    "business_combinations": "What did {name} acquire in FY{year}?",
    "contingencies": "Is {name} involved in any material legal proceedings in FY{year}?",
}


@pytest.fixture(scope="module")
def tenks() -> Index:
    return Index.build(sorted(str(p) for p in DEV.glob("*_10K.pdf")), embedder=HashEmbedder(64))


def _inside(index: Index, doc_id: str, node_id: str | None, key: str) -> bool:
    """Whether the section, or a section above it, is titled as the note ``key``."""
    tree = index.reader.tree(doc_id)
    while node_id is not None:
        node = tree.get(node_id)
        if key in FILINGS.section_kinds(node.title):
            return True
        node_id = node.parent_id
    return False


@pytest.mark.slow  # the shared dev data: CI runs it
@pytest.mark.skipif(not DEV.is_dir(), reason="financebench-dev is not beside the repo")
@pytest.mark.parametrize("key", sorted(QUESTIONS))
def test_a_question_needing_a_note_gets_it_on_every_dev_10k(tenks: Index, key: str) -> None:
    asked = missed = 0
    for doc, card in sorted(tenks.reader.cards().items()):
        if key not in statement_sections(tenks.reader, doc):
            continue
        asked += 1
        q = QUESTIONS[key].format(name=short_name(card.entity), year=card.fiscal_year)
        res = tenks.retrieve(q, budget=2000, doc_ids=[doc])
        if not any(_inside(tenks, doc, s.node_id, key) for s in res.sections):
            missed += 1
            print("missed", doc, [s.title for s in res.sections])
    assert asked >= 10 and missed == 0


BOREALIS = Path(__file__).parent.parent / "fixtures" / "notes" / "borealis_10k.md"


@pytest.fixture(scope="module")
def borealis() -> Index:
    return Index.build([BOREALIS], embedder=HashEmbedder(256))


def test_two_needed_parts_each_get_a_section_before_either_gets_a_second(
        borealis: Index) -> None:
    """Item 1 has five subsections and the segment note two: "who are its customers"
    needs both, so the note's best subsection comes second, not after all of Item 1."""
    res = borealis.retrieve("Who are the primary customers of Borealis?", budget=2000)
    assert res.expansion.statements == ("business", "segments")
    parents = [borealis.reader.tree(s.doc_id).get(s.node_id).parent_id for s in res.sections]
    tree = borealis.reader.tree("borealis_10k.md")
    item1 = next(n.node_id for n in tree if n.title == "Item 1. Business")
    note = next(n.node_id for n in tree if n.title.startswith("Note 7."))
    assert set(parents[:2]) == {item1, note}
    assert "Our primary customers are grocery chains" in res.context


def test_a_title_that_only_names_a_part_whole() -> None:
    """"Business" is Item 1 only as the whole title: "Business Combinations" stays the
    note, and a subsection "Our Business Partners" is nothing."""
    assert FILINGS.section_kinds("Item 1. Business.") == {"business"}
    assert FILINGS.section_kinds("Note 8. Business Combinations") == {"business_combinations"}
    assert FILINGS.section_kinds("Our Business Partners") == set()
    assert FILINGS.section_kinds(
        "NOTE 24 REPORTABLE OPERATING SEGMENTS AND GEOGRAPHIC OPERATIONS") == {"segments"}
