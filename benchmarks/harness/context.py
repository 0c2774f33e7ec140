"""Packing ranked passages into a token budget: the one rule every method is held to.

**Packing rule.** A method returns passages (windows, sections, PageIndex nodes) in rank
order. The context is built by taking them in that order while they fit; the first passage
that does not fit whole is cut to its longest prefix that fills the remaining budget
(:func:`proxy_pointer.tokens.truncate_to_tokens`) and packing stops there. Tokens are MiniLM
word pieces counted by :mod:`proxy_pointer.tokens`, never anything else. Passages are joined
with a blank line, which costs no tokens. Whatever a method returns beyond the budget is
discarded before scoring, so evidence that only appears after the cut never counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from proxy_pointer.tokens import count_tokens, truncate_to_tokens

__all__ = ["SEPARATOR", "Context", "Piece", "pack"]

SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Piece:
    """One ranked passage: its text, the document it comes from and, when the method points
    at a section, that section's heading path (``None`` for a plain text window).

    ``tokens`` may carry a precomputed :func:`count_tokens` of ``text`` (-1: not counted yet).
    ``pages``, for a document with pages (a PDF), marks where in ``text`` each page's text
    begins: ``(character offset, 1-based page)`` pairs in text order, so a prefix of the
    piece keeps the marks of the pages it still reaches (:attr:`covered_pages`).
    """

    text: str
    doc_id: str
    path: tuple[str, ...] | None = None
    tokens: int = -1
    pages: tuple[tuple[int, int], ...] = ()

    @property
    def covered_pages(self) -> frozenset[int]:
        """The pages some character of ``text`` came from (empty without page marks)."""
        n = len(self.text)
        return frozenset(page for offset, page in self.pages if offset < n)


@dataclass(frozen=True)
class Context:
    """The passages that fit a budget (the last possibly cut) and the tokens they use.

    ``cut`` is true when a passage was shortened or dropped to respect the budget.
    """

    pieces: tuple[Piece, ...]
    tokens: int
    budget: int
    cut: bool

    @property
    def text(self) -> str:
        return SEPARATOR.join(p.text for p in self.pieces)


def pack(pieces: Iterable[Piece], budget: int) -> Context:
    """Apply the packing rule (module docstring) to ``pieces`` in order; returns a Context.

    Raises ValueError for a negative budget.
    """
    if budget < 0:
        raise ValueError(f"budget must be >= 0, got {budget}")
    kept: list[Piece] = []
    used = 0
    cut = False
    for piece in pieces:
        n = piece.tokens if piece.tokens >= 0 else count_tokens(piece.text)
        room = budget - used
        if n <= room:
            kept.append(piece if piece.tokens == n else _with_tokens(piece, piece.text, n))
            used += n
            continue
        cut = True
        prefix = truncate_to_tokens(piece.text, room) if room > 0 else ""
        if prefix:
            m = count_tokens(prefix)
            kept.append(_with_tokens(piece, prefix, m))
            used += m
        break
    return Context(pieces=tuple(kept), tokens=used, budget=budget, cut=cut)


def _with_tokens(piece: Piece, text: str, n: int) -> Piece:
    return Piece(text=text, doc_id=piece.doc_id, path=piece.path, tokens=n, pages=piece.pages)
