"""Answer quality: an LLM answers from each method's context, scored by QASPER token F1.

QASPER's answer F1 (Dasigi et al., 2021): lowercase, drop punctuation and the articles
a/an/the, split on whitespace, token-level F1 against each reference answer, best
reference. Synthesis goes through :func:`proxy_pointer.search.synthesis.synthesize`, the library's
own prompt, so every method's context is answered the same way.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from proxy_pointer.tokens import count_tokens

from .context import Context

__all__ = ["AnswerScore", "answer_f1", "answer_question", "token_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def _tokens(text: str) -> list[str]:
    return _ARTICLES.sub(" ", text.lower().translate(_PUNCT)).split()


def token_f1(prediction: str, reference: str) -> float:
    """QASPER/SQuAD token F1 of ``prediction`` against one ``reference``."""
    pred, ref = _tokens(prediction), _tokens(reference)
    if not pred and not ref:
        return 1.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def answer_f1(prediction: str, references: Sequence[str]) -> float | None:
    """Best :func:`token_f1` over the references; ``None`` when there are none."""
    if not references:
        return None
    return max(token_f1(prediction, r) for r in references)


@dataclass(frozen=True)
class AnswerScore:
    """One synthesized answer: its F1 and the prompt/reply sizes in MiniLM word pieces."""

    question_id: str
    f1: float | None
    in_tokens: int
    out_tokens: int
    calls: int
    text: str


def answer_question(question: Any, context: Context, llm: Any) -> AnswerScore:
    """Have ``llm`` answer ``question`` from ``context``; raises LLMError if it fails."""
    from proxy_pointer.search.sections import Section
    from proxy_pointer.search.synthesis import build_prompt, synthesize

    sections = [
        Section(doc_id=p.doc_id, node_id=None, title=(p.path or ("",))[-1], path=p.path or (),
                start_line=1, end_line=max(1, p.text.count("\n") + 1), text=p.text, score=0.0,
                tokens=p.tokens)
        for p in context.pieces
    ]
    answer = synthesize(question.question, sections, llm)
    calls = 1 if sections else 0
    in_tokens = 0
    if sections:
        system, prompt = build_prompt(question.question, sections)
        in_tokens = count_tokens(system) + count_tokens(prompt)
    return AnswerScore(question_id=question.id, f1=answer_f1(answer.text, question.answers),
                       in_tokens=in_tokens, out_tokens=count_tokens(answer.text) if calls else 0,
                       calls=calls, text=answer.text)
