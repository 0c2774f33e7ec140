"""Phrases matched word by word, as the vocabulary and user synonyms match them.

A phrase and a question are both read as :func:`~.keys.words` (the text keys' module:
lower-case letters and digits, "&" kept inside a word, so "PP&E" and "D&A" are one word, a
possessive "'s" and a plural "s" dropped). :class:`PhraseSet` then finds every
phrase in a text with one dictionary lookup per (position, phrase length): time linear in
the text, times the number of distinct phrase lengths (at most :data:`MAX_WORDS`). No
regular expression with nested repetition is involved.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .keys import word_spans, words

__all__ = ["MAX_WORDS", "Match", "PhraseSet", "expand_choices"]

T = TypeVar("T")

#: The most words a phrase may have (a synonym rule's phrase is refused past it).
MAX_WORDS = 16
@dataclass(frozen=True)
class Match(Generic[T]):
    """One phrase found: its ``value``, the word positions ``[first, last)`` and the
    characters ``[start, end)`` it covers in the text."""

    value: T
    first: int
    last: int
    start: int
    end: int


class PhraseSet(Generic[T]):
    """Phrases, each with a value, found in texts word by word (module docstring)."""

    def __init__(self, items: Iterable[tuple[str, T]] = ()) -> None:
        self._phrases: dict[tuple[str, ...], list[T]] = {}
        self._lengths: set[int] = set()
        for phrase, value in items:
            self.add(phrase, value)

    def add(self, phrase: str | tuple[str, ...], value: T) -> None:
        key = words(phrase) if isinstance(phrase, str) else phrase
        if not key:
            return
        self._phrases.setdefault(key, []).append(value)
        self._lengths.add(len(key))

    def __len__(self) -> int:
        return len(self._phrases)

    def find(self, text: str, *, longest: bool = False,
             spans: list[tuple[str, int, int]] | None = None) -> list[Match[T]]:
        """Every phrase in ``text``, in text order (a longer phrase first at one place).
        ``longest``: only the longest phrase at each place, and no overlaps (leftmost
        first), as a rewrite needs. ``spans``: ``text``'s words as :func:`~.keys.word_spans`
        reads them, when the caller has read them already."""
        if spans is None:
            spans = word_spans(text)
        seq = [w for w, _, _ in spans]
        lengths = sorted(self._lengths, reverse=True)
        out: list[Match[T]] = []
        i = 0
        while i < len(seq):
            step = 1
            for n in lengths:
                if i + n > len(seq):
                    continue
                values = self._phrases.get(tuple(seq[i:i + n]))
                if values is None:
                    continue
                out.extend(Match(v, i, i + n, spans[i][1], spans[i + n - 1][2]) for v in values)
                if longest:
                    step = n
                    break
            i += step
        return out


def expand_choices(pattern: str) -> list[str]:
    """Every phrase a title pattern stands for: ``(a|b)`` is a choice, ``[a]`` may be
    left out, and they nest: "statement of [changes in] (equity|deficit)" is four
    phrases. The vocabulary keeps such patterns few and short."""
    out = [" ".join(p.split()) for p in _expand(pattern)]
    return list(dict.fromkeys(p for p in out if p))


def _expand(s: str) -> list[str]:
    for i, c in enumerate(s):
        if c in "([":
            close = _closing(s, i)
            inner = s[i + 1:close]
            alts = [x for part in _split_top(inner) for x in _expand(part)]
            if c == "[":
                alts = ["", *alts]
            return [s[:i] + a + rest for a in alts for rest in _expand(s[close + 1:])]
    return [s]


def _closing(s: str, i: int) -> int:
    depth = 0
    for j in range(i, len(s)):
        if s[j] in "([":
            depth += 1
        elif s[j] in ")]":
            depth -= 1
            if depth == 0:
                return j
    raise ValueError(f"unbalanced brackets in {s!r}")


def _split_top(s: str) -> list[str]:
    parts, depth, last = [], 0, 0
    for j, c in enumerate(s):
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(s[last:j])
            last = j + 1
    parts.append(s[last:])
    return parts
