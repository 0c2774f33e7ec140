"""Tests for proxy_pointer.tokens: sentence pieces, the cut of a long line whose token counts
stay additive; many texts counted in one tokenizer call, each as it counts alone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from proxy_pointer.tokens import count_tokens, count_tokens_many, sentence_pieces

_TEXT = st.lists(st.sampled_from(["word", "Two.", "three!", "x" * 40, "é", "报告。", "a;b",
                                  " ", "  ", "\t", "3.5", "U.S.", "end?"]),
                 max_size=120).map(" ".join)
# Characters the BERT normalizer treats specially (accents, control and zero-width
# characters, CJK, line ends), words over the 100-character limit of one word piece.
_TRICKY = st.lists(st.sampled_from([
    "a", "Z", " ", "\t", "\n", "\r\n", "\r", ".", "é", "e\u0301", "\u0301", "\x00",
    "\x7f", "\u200b", "\ufeff", "\u3000", "中", "。", "İ", "ß", "😀", "\u2028", "ﬁ",
    "[UNK]", "##", "A" * 101, "word ",
]), max_size=40).map("".join)


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


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=200), _TRICKY), max_size=30))
def test_property_many_texts_count_as_each_alone(texts: list[str]) -> None:
    assert count_tokens_many(texts) == [count_tokens(t) for t in texts]


def test_many_long_texts_count_as_each_alone() -> None:
    texts = ["word " * 5_000, "x" * 30_000, "", "short one", "中文。" * 8_000]
    assert count_tokens_many(texts) == [count_tokens(t) for t in texts]
