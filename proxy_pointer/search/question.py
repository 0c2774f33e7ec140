"""One question as every stage of a request reads it, read once.

A request reads its question in several ways: routing by the names, periods and form it
writes, the document choice by the phrases that lean to a form, understanding by its
phrase words, ranking by the labels it names ("table 3") and the title words it uses.
:class:`Question` is made once per request (:meth:`Question.of`, the text trimmed to what
search reads, like LlamaIndex's ``QueryBundle``) and computes each reading the first time a
stage asks for it, so no stage reads the text again and routing reads the same trimmed
text as the search. Every reading is linear in the question's length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from ..parse.periods import Asked, asked_periods
from ..vocab.filings import FILINGS, Vocabulary
from ..vocab.keys import singular, word_spans
from .config import MAX_QUESTION_CHARS

__all__ = ["Question"]

_NAME_WORD = re.compile(r"[\w&]+")
_CAPITALS = re.compile(r"(?<![\w&])[A-Z]{2,6}(?![\w&])")
_WORD = re.compile(r"\w+")


@lru_cache(maxsize=8)
def _labels(vocabulary: Vocabulary) -> tuple[re.Pattern[str] | None, dict[str, str]]:
    """The pattern of a label a question names ("table 3", "section 2.1") from
    ``vocabulary``'s label words read in questions (``None``: it has none), and each other
    spelling's word ("fig." -> "figure")."""
    asked = vocabulary.labels_read("question")
    if not asked:
        return None, {}
    pattern = re.compile(
        rf"\b({'|'.join(re.escape(w) for lab in asked for w in (lab.word, *lab.aliases))})\s+"
        r"((?:\d+[a-z]?(?:\.\d+)*)|(?:[ivxlc]+)\b|(?:[a-z]\b(?:\.\d+)*))",
        re.IGNORECASE)
    return pattern, {a.lower().rstrip("."): lab.word for lab in asked for a in lab.aliases}


@dataclass(frozen=True, eq=False)
class Question:
    """A question as the stages read it: its ``text`` (as searched) and, each computed
    once when first read, the periods it asks, the form it names, the phrases that lean
    to a form, its words as names, phrases and title words, and the labels it names; the
    forms, cues and label words are ``vocabulary``'s."""

    text: str
    vocabulary: Vocabulary = field(default=FILINGS, repr=False)

    @classmethod
    def of(cls, question: str | Question, *, vocabulary: Vocabulary = FILINGS) -> Question:
        """``question`` as a :class:`Question` read with ``vocabulary``, its text trimmed
        to the characters search reads (:data:`~.config.MAX_QUESTION_CHARS`); a Question
        is handed back as it is."""
        if isinstance(question, Question):
            return question
        return cls(question[:MAX_QUESTION_CHARS], vocabulary)

    @cached_property
    def asked(self) -> Asked:
        """The periods it names (:func:`~proxy_pointer.parse.periods.asked_periods`)."""
        return asked_periods(self.text, vocabulary=self.vocabulary)

    @cached_property
    def kind(self) -> str:
        """The form it names ("10-Q", "earnings release"), or ""."""
        q = self.text.lower()
        paper = self.vocabulary.read_by("abstract")
        for kind, words in self.vocabulary.kind_words.items():
            if kind == paper:
                continue
            if any(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", q) for w in words
                   if w not in ("annual", "quarterly", "earnings")):
                return kind
        return ""

    @cached_property
    def cued_forms(self) -> dict[str, tuple[str, ...]]:
        """The forms its words lean to, each with the phrases that cue it
        (:meth:`~proxy_pointer.vocab.filings.Vocabulary.cued_forms`)."""
        return self.vocabulary.cued_forms(self.text, spans=self.spans)

    @cached_property
    def lower(self) -> bool:
        """Whether it is written all in lower case (names are then read in lower case)."""
        return self.text == self.text.lower()

    @cached_property
    def name_words(self) -> tuple[str, ...]:
        """Its distinct words as names are looked up: lower case, "&" inside a word."""
        return tuple(dict.fromkeys(_NAME_WORD.findall(self.text.lower())))

    @cached_property
    def capitals(self) -> tuple[str, ...]:
        """Its words of two to six capitals ("AMEX"), as abbreviations are looked up."""
        return tuple(_CAPITALS.findall(self.text))

    @cached_property
    def spans(self) -> list[tuple[str, int, int]]:
        """Its phrase words with their spans (:func:`~proxy_pointer.vocab.keys.word_spans`),
        as the vocabulary and synonyms find phrases in it."""
        return word_spans(self.text)

    @cached_property
    def title_words(self) -> frozenset[str]:
        """Its words as section titles are matched: lower case, plural "s" dropped."""
        return frozenset(singular(w) for w in _WORD.findall(self.text.lower()))

    @cached_property
    def labels(self) -> tuple[tuple[str, str], ...]:
        """The heading labels it names, first first: ``(("chapter", "2"), ("box", "1.1"))``
        (the vocabulary's label words read in questions)."""
        pattern, aliases = _labels(self.vocabulary)
        out: list[tuple[str, str]] = []
        for word, num in pattern.findall(self.text) if pattern is not None else ():
            word, num = word.lower().rstrip("."), num.lower()
            word = aliases.get(word, word)
            if (word, num) not in out:
                out.append((word, num))
        return tuple(out)
