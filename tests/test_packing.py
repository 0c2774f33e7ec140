"""The packer on the document shapes that used to lose evidence: one-line sections, tiny
budgets, long sentences; token counts stay exact and every ranked section can be taken."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.tokens import count_tokens, sentence_pieces

ANSWER = "The TV smells of plastic. This smell is normal and will dissipate over time."
QUESTION = "Why does the TV smell of plastic?"
_WORDS = ("screen remote channel volume input signal picture sound menu settings power cable "
          "antenna wifi update firmware brightness contrast speaker standby timer").split()


def manual(topics: int = 20, sentences: int = 60, seed: int = 3) -> str:
    """The issue's reproduction: twenty short topics and one section that is a single line
    of ~6,000 characters holding the answer in its middle."""
    rnd = random.Random(seed)

    def sentence(n: int) -> str:
        return " ".join(rnd.choice(_WORDS) for _ in range(n)).capitalize() + "."

    parts = ["# TV User Manual\n"]
    parts += [f"## Topic {i}\n\n{sentence(60)}\n" for i in range(1, topics + 1)]
    line = [sentence(14) for _ in range(sentences)]
    line.insert(sentences * 2 // 3, ANSWER)
    parts.append("## Other Issues\n\n" + " ".join(line) + "\n")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def hashed(tmp_path_factory) -> Index:
    docs = tmp_path_factory.mktemp("manual")
    (docs / "manual.md").write_text(manual(), encoding="utf-8")
    return Index.build([docs], embedder=HashEmbedder(256))


@pytest.mark.parametrize("packing", ["evidence", "sections"])
@pytest.mark.parametrize("budget", [300, 500, 1000, 2000])
def test_a_one_line_section_is_packed_around_its_answer(hashed: Index, packing: str,
                                                         budget: int) -> None:
    res = hashed.retrieve(QUESTION, budget=budget, packing=packing)
    top = res.sections[0]
    assert top.title == "Other Issues"
    assert ANSWER in top.text  # the sentences around the best chunk, cut between sentences
    assert top.trimmed or top.tokens > 1000  # whole only where the budget allows
    assert top.text.startswith("## Other Issues\n")
    assert res.tokens_used == sum(count_tokens(s.text) for s in res.sections) <= budget
    assert top.tokens <= max(400, 0.3 * budget) or packing == "evidence"


def test_every_kept_piece_is_verbatim_and_gaps_are_marked(hashed: Index) -> None:
    res = hashed.retrieve(QUESTION, budget=500)
    top = res.sections[0]
    line = hashed.tree("manual.md").lines[top.end_line - 1]
    body = top.text.split("\n", 2)[2]  # after the heading and its blank line
    pieces = [p.strip() for p in body.replace("[…]", "\x00").split("\x00") if p.strip()]
    assert pieces and all(p in line for p in pieces)
    assert "[…]" in body  # the line was cut, and says so


def test_no_ranked_section_is_dropped_for_its_size(hashed: Index) -> None:
    res = hashed.retrieve(QUESTION, budget=2000, k=5)
    assert not res.omitted
    assert len(res.sections) == 5


@pytest.mark.parametrize("budget", [1, 20, 60, 150])
def test_tiny_budgets_hold_no_stubs_and_count_exactly(hashed: Index, budget: int) -> None:
    res = hashed.retrieve(QUESTION, budget=budget, k=5)
    assert res.tokens_used == sum(count_tokens(s.text) for s in res.sections) <= budget
    for s in res.sections:
        assert not s.trimmed or s.tokens >= 24  # a trimmed section is a useful window


@pytest.mark.slow
def test_the_issue_reproduction_with_the_real_model(tmp_path: Path) -> None:
    from proxy_pointer import SentenceTransformerEmbedder

    (tmp_path / "manual.md").write_text(manual(), encoding="utf-8")
    idx = Index.build([tmp_path], embedder=SentenceTransformerEmbedder())
    for budget in (1000, 2000):
        for packing in ("evidence", "sections"):
            res = idx.retrieve(QUESTION, budget=budget, packing=packing)
            assert res.sections[0].title == "Other Issues", (budget, packing)
            assert ANSWER in res.sections[0].text


# --- sentence pieces --------------------------------------------------------------------
_TEXT = st.lists(st.sampled_from(["word", "Two.", "three!", "x" * 40, "é", "报告。", "a;b",
                                  " ", "  ", "\t", "3.5", "U.S.", "end?"]),
                 max_size=120).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(text=_TEXT, most=st.integers(1, 40))
def test_property_pieces_tile_the_text_and_their_counts_add_up(text: str, most: int) -> None:
    pieces = sentence_pieces(text, most)
    assert "".join(text[a:b] for a, b, _ in pieces) == text
    assert all(c <= most for _, _, c in pieces)
    assert sum(c for _, _, c in pieces) == count_tokens(text)
    assert all(count_tokens(text[a:b]) == c for a, b, c in pieces)


def test_pieces_end_at_sentences() -> None:
    text = "The pump failed. It was replaced on Monday! Why? Nobody knows; the log is empty."
    got = [text[a:b] for a, b, _ in sentence_pieces(text, 100)]
    assert got == ["The pump failed. ", "It was replaced on Monday! ", "Why? ",
                   "Nobody knows; ", "the log is empty."]
    short = "U.S. law"
    assert [short[a:b] for a, b, _ in sentence_pieces(short, 100)] == ["U.S. ", "law"]


def test_the_two_orders_differ_where_they_should(hashed: Index) -> None:
    # Rank order fills each section to its share before the next (the first stays within
    # it); evidence order takes the best units first, then grows sections past the share.
    ev = hashed.retrieve(QUESTION, budget=1000)
    sec = hashed.retrieve(QUESTION, budget=1000, packing="sections")
    assert ev.context != sec.context
    assert sec.sections[0].tokens <= 400 < ev.sections[0].tokens
