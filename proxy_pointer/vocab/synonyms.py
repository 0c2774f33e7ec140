"""Synonyms a user can add, in the format Solr's and Elasticsearch's synonym filters read.

One rule a line::

    # a comment
    PTO, paid time off, vacation        equivalent: any of them adds the others
    capex => capital expenditures, capex    one-way: "capex" is searched as the right side

As in Solr, an explicit rule replaces what it matched by its right side (write the left
term on the right too to keep it); an equivalence adds the other terms. ``\\,`` is a comma
inside a term. Matching is word by word, case aside (:mod:`.phrases`), longest phrase
first, and applied to the question at query time: nothing is re-indexed. A malformed line
is a :class:`SynonymsError` naming the file and the line.

Bounds: a file of at most :data:`MAX_BYTES`, a line of at most :data:`MAX_LINE_CHARS`, a
term of at most :data:`~.phrases.MAX_WORDS` words; a question is rewritten in time linear
in its length (:class:`~.phrases.PhraseSet`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError
from .keys import words
from .phrases import MAX_WORDS, PhraseSet

__all__ = ["MAX_BYTES", "MAX_LINE_CHARS", "Rule", "Synonyms", "SynonymsError"]

MAX_BYTES = 10_000_000
MAX_LINE_CHARS = 10_000


class SynonymsError(ConfigError):
    """A synonyms file that cannot be read: names the file and the line."""


@dataclass(frozen=True)
class Rule:
    """One line: ``terms`` (the left side, or every term of an equivalence), ``targets``
    (the right side of ``=>``; empty for an equivalence) and where it was written."""

    terms: tuple[str, ...]
    targets: tuple[str, ...] = ()
    source: str = ""
    line: int = 0

    @property
    def explicit(self) -> bool:
        return bool(self.targets)


@dataclass(frozen=True)
class Applied:
    """What a rule did to a question: the phrase ``written`` there and the phrases it
    ``added`` (or, for an explicit rule, put in its place)."""

    written: str
    added: tuple[str, ...]
    replaced: bool = False


class Synonyms:
    """Rules applied to questions (module docstring). Combine sets with ``+``."""

    def __init__(self, rules: Iterable[Rule] = (), *, source: str = "") -> None:
        self.rules = tuple(rules)
        self.source = source
        self._hash: int | None = None
        self._phrases: PhraseSet[Rule] = PhraseSet()
        for rule in self.rules:
            for term in rule.terms:
                self._phrases.add(term, rule)

    def __eq__(self, other: object) -> bool:
        """Equal rules are equal sets, however they were read: a view's routing shelf is
        kept per set of aliases, not per object."""
        return isinstance(other, Synonyms) and self.rules == other.rules

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(self.rules)
        return self._hash

    def __add__(self, other: Synonyms) -> Synonyms:
        return Synonyms((*self.rules, *other.rules),
                        source=" + ".join(s for s in (self.source, other.source) if s))

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"Synonyms({len(self.rules)} rules{', ' + self.source if self.source else ''})"

    @classmethod
    def parse(cls, text: str, source: str = "<synonyms>") -> Synonyms:
        """The rules of a synonyms file's ``text``; :class:`SynonymsError` naming ``source``
        and the line for a malformed one."""
        if len(text) > MAX_BYTES:
            raise SynonymsError(f"{source}: over {MAX_BYTES:,} characters")
        rules = []
        for n, line in enumerate(text.splitlines(), 1):
            rule = _rule(line, source, n)
            if rule is not None:
                rules.append(rule)
        return cls(rules, source=source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Synonyms:
        """The rules of the synonyms file at ``path`` (UTF-8)."""
        p = Path(path)
        try:
            if p.stat().st_size > MAX_BYTES:
                raise SynonymsError(f"{p}: over {MAX_BYTES:,} bytes")
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise SynonymsError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from e
        except OSError as e:
            raise SynonymsError(f"{p}: cannot read the synonyms file: "
                                f"{e.strerror or e}") from e
        return cls.parse(text, str(p))

    def apply(self, question: str, *, spans: list[tuple[str, int, int]] | None = None
              ) -> tuple[str, list[Applied]]:
        """``question`` as searched: each explicit rule's match replaced by its right side,
        each equivalence's other terms added after the question; and what was done
        (``spans``: the question's words, when read already)."""
        found = self._phrases.find(question, longest=True, spans=spans)
        if not found:
            return question, []
        out: list[str] = []
        added: list[str] = []
        applied: list[Applied] = []
        pos = 0
        seen: set[tuple[int, int]] = set()
        for m in found:
            if (m.start, m.end) in seen:
                continue  # several rules share the phrase: the first one written wins
            seen.add((m.start, m.end))
            rule, written = m.value, question[m.start:m.end]
            if rule.explicit:
                out.append(question[pos:m.start])
                out.append(", ".join(rule.targets))
                pos = m.end
                applied.append(Applied(written, rule.targets, replaced=True))
            else:
                mine = words(written)
                extra = tuple(t for t in rule.terms if words(t) != mine)
                if extra:  # a rule of one term only holds its phrase together
                    added.extend(extra)
                    applied.append(Applied(written, extra))
        out.append(question[pos:])
        text = "".join(out)
        extra_text = "; ".join(dict.fromkeys(added))
        return (f"{text} ({extra_text})" if extra_text else text), applied


def _rule(line: str, source: str, n: int) -> Rule | None:
    if len(line) > MAX_LINE_CHARS:
        raise SynonymsError(f"{source}, line {n}: over {MAX_LINE_CHARS:,} characters")
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    sides = stripped.split("=>")
    if len(sides) > 2:
        raise SynonymsError(f"{source}, line {n}: more than one '=>' in {_show(stripped)}")
    left = _terms(sides[0], source, n, stripped)
    if len(sides) == 1:
        return Rule(left, (), source, n)
    right = _terms(sides[1], source, n, stripped)
    return Rule(left, right, source, n)


def _terms(side: str, source: str, n: int, line: str) -> tuple[str, ...]:
    parts = _split(side)
    if not side.strip():
        raise SynonymsError(f"{source}, line {n}: a side of '=>' is empty in {_show(line)}")
    out = []
    for part in parts:
        term = " ".join(part.split())
        if not term:
            raise SynonymsError(f"{source}, line {n}: an empty term (two commas in a row, "
                                f"or one at an end) in {_show(line)}")
        count = len(words(term))
        if count == 0:
            raise SynonymsError(f"{source}, line {n}: the term {term!r} has no letters "
                                f"or digits")
        if count > MAX_WORDS:
            raise SynonymsError(f"{source}, line {n}: the term {_show(term)} has over "
                                f"{MAX_WORDS} words")
        out.append(term)
    return tuple(out)


def _split(side: str) -> Sequence[str]:
    """Terms apart by commas; ``\\,`` is a comma inside a term."""
    parts, cur, i = [], [], 0
    while i < len(side):
        c = side[i]
        if c == "\\" and i + 1 < len(side):
            cur.append(side[i + 1])
            i += 2
            continue
        if c == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _show(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")
