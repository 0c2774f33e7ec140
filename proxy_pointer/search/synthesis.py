"""Synthesis: answer a question from retrieved sections with an LLM, and check its citations.

The pipeline's last step. :func:`build_prompt` lays the sections out with their ids,
breadcrumbs and numbered lines and tells the model to answer only from them, citing every
claim as ``[doc_id#node_id, lines a-b]``. :func:`synthesize` sends that to any :class:`LLM`
and returns an :class:`Answer` whose citations have been parsed and checked against the
sections actually given: a citation of a section that was not retrieved, or of lines outside
it, is reported in ``Answer.invalid_citations`` instead of being trusted.

The LLM backends live in :mod:`proxy_pointer.llm` (any object with ``model_id`` and
``generate`` is an LLM). Example, with the scripted test double::

    >>> from proxy_pointer.llm import ScriptedLLM
    >>> from proxy_pointer.search.sections import Section
    >>> s = Section("p.md", "0001", "Training", ("Paper", "Training"), 1, 3,
    ...             "## Training\\nWe use Adam\\nwith warmup.\\n", 1.0)
    >>> llm = ScriptedLLM("Adam is used [p.md#0001, lines 2-3].")
    >>> answer = synthesize("Which optimizer?", [s], llm)
    >>> answer.grounded, [c.ref for c in answer.citations]
    (True, ['p.md#0001'])
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..documents import CITED_DOC_ID
from ..errors import ConfigError
from ..llm.base import LLM
from ..parse.tree import split_lines
from ..refs import Ref
from ..text.pages import page_label
from .config import check_question
from .sections import Section

__all__ = [
    "ENABLE_SYNTHESIS_HINT",
    "NOTHING_RETRIEVED",
    "NOT_IN_SECTIONS",
    "Answer",
    "Citation",
    "build_prompt",
    "check_citation",
    "parse_citations",
    "synthesize",
]

#: The sentence the model is told to write when the sections do not hold the answer.
NOT_IN_SECTIONS = "The provided sections do not contain the answer."

#: The answer text when retrieval returned nothing (the LLM is not called).
NOTHING_RETRIEVED = "Nothing was retrieved for this question, so there is nothing to answer from."

#: One line for the CLI to print when no LLM is configured.
ENABLE_SYNTHESIS_HINT = (
    "To get a synthesized answer, set GEMINI_API_KEY (or use --llm openai:<model> "
    "--llm-base-url <url> for an OpenAI-compatible server such as Ollama or vLLM)."
)

# --------------------------------------------------------------------------- prompt

_SYSTEM = f"""\
You answer questions about a collection of documents using ONLY the sections given to you \
in <section> blocks. Do not use outside knowledge, and do not guess.

Rules:
1. Every factual claim must be supported by the sections. After each claim, cite the \
section it comes from in square brackets, using the section's id exactly as given and the \
line numbers shown at the left of its lines: [doc_id#node_id, lines a-b]. For a single line \
write [doc_id#node_id, line a]. Several sources go in one bracket separated by "; ": \
[doc_a#0001, lines 3-5; doc_b#0007, line 12]. A section shown without line numbers (one \
marked trimmed="true", where […] stands for omitted text) is cited by id alone: \
[doc_id#node_id].
2. Cite only section ids that appear in the sections, and only lines inside that section's \
line range.
3. If the sections do not contain the answer, reply with exactly this sentence and nothing \
else: "{NOT_IN_SECTIONS}" If they answer only part of the question, answer that part with \
citations and say which part is not covered.
4. Be concise. Quote numbers, names and definitions as the sections state them."""


def _numbered(section: Section) -> str:
    """The section text with its 1-based line numbers, when they can be trusted."""
    lines = [line.rstrip("\r\n") for line in split_lines(section.text)]
    if len(lines) != section.end_line - section.start_line + 1:
        # The text does not map one-to-one onto the stated range (e.g. an edited copy):
        # numbering it would invite wrong citations, so give it plain.
        return "\n".join(lines)
    width = len(str(section.end_line))
    return "\n".join(
        f"{n:>{width}} | {line}" for n, line in enumerate(lines, start=section.start_line)
    )


def build_prompt(question: str, sections: Sequence[Section], note: str = ""
                 ) -> tuple[str, str]:
    """The (system, user) prompt that asks ``question`` over ``sections``; ``note`` (what
    the search could not find as asked: "No document of 3M covers FY2018.") goes with the
    question, so the answer says so rather than answering from another period.

    Each section is given as a ``<section>`` block with its citation id (``Section.ref``),
    breadcrumb and 1-based inclusive line range, followed by its text with line numbers. The
    system prompt demands grounded, cited answers and the fixed sentence
    :data:`NOT_IN_SECTIONS` when the answer is not there. Raises ConfigError on an empty
    question.
    """
    check_question(question)
    blocks = []
    for section in sections:
        attrs = f'id="{section.ref}" lines="{section.start_line}-{section.end_line}"'
        if section.pages is not None:
            a, b = section.pages
            attrs += f' pages="{a}-{b}"' if a != b else f' page="{a}"'
        if section.trimmed:
            attrs += ' trimmed="true"'
        breadcrumb = section.breadcrumb or section.title or section.doc_id
        blocks.append(f"<section {attrs}>\nPath: {breadcrumb}\n{_numbered(section)}\n</section>")
    prompt = (
        f"Sections ({len(blocks)}):\n\n"
        + "\n\n".join(blocks)
        + (f"\n\nNote from the search: {note}" if note else "")
        + f"\n\nQuestion: {question.strip()}\n\n"
        "Answer from the sections above only, citing each claim as "
        "[doc_id#node_id, lines a-b]."
    )
    return _SYSTEM, prompt


# --------------------------------------------------------------------------- citations


@dataclass(frozen=True)
class Citation:
    """One citation found in an answer.

    ``node_id`` is the part of the ref after ``#``: a node id, or for a fallback window its
    lines (``L12-30``). ``start_line`` / ``end_line`` are 1-based and inclusive, as the
    model wrote them (``None`` when it cited the section without lines; equal for a single
    line). ``raw`` is the whole bracket as it appears in the text, e.g. ``"[a.md#0003,
    lines 3-5; b.md#0001]"``, shared by all citations in one bracket. ``pages``: the
    first and last page of the cited lines (or of the whole section when no lines were
    cited), for a section of a converted PDF; such a citation prints as
    ``[report.pdf#0012, p. 37-38]``.
    """

    doc_id: str
    node_id: str
    start_line: int | None
    end_line: int | None
    raw: str
    pages: tuple[int, int] | None = None  # filled in from the cited section of a PDF

    @property
    def ref(self) -> str:
        """``doc_id#node_id`` (or ``doc_id#L12-30``), comparable with ``Section.ref``; as
        written when it is no well-formed ref."""
        target = self.target
        return str(target) if target is not None else f"{self.doc_id}#{self.node_id}"

    @property
    def target(self) -> Ref | None:
        """The cited ref, to open with :meth:`Index.section <proxy_pointer.index.Index.section>`;
        ``None`` when the model wrote no well-formed ref."""
        try:
            return Ref.of(self.doc_id, self.node_id)
        except ConfigError:
            return None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "ref": self.ref,
            "doc_id": self.doc_id,
            "node_id": self.node_id,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "pages": list(self.pages) if self.pages is not None else None,
            "raw": self.raw,
        }

    def __str__(self) -> str:
        if self.pages is not None:
            return f"[{self.ref}, {page_label(self.pages)}]"
        if self.start_line is None:
            return f"[{self.ref}]"
        if self.start_line == self.end_line:
            return f"[{self.ref}, line {self.start_line}]"
        return f"[{self.ref}, lines {self.start_line}-{self.end_line}]"


_BRACKET_RE = re.compile(r"\[([^\[\]\n]*#[^\[\]\n]*)\]")
# A ref: a doc id (documents.CITED_DOC_ID) then '#' and a node id ("0003", "preamble") or a
# line range ("L12-30" for a fallback window, also written "L12 – L30"). Optional line part
# after it.
_REF_RE = re.compile(
    r"""^[`'"*\s]*(?P<doc>""" + CITED_DOC_ID + r""")
        \s*\#(?P<node>[Lp]\d+\s*(?:-|–|—|to)\s*[Lp]?\d+
                    |[A-Za-z0-9](?:[\w.-]*[A-Za-z0-9])?)[`'"*]*
        (?:\s*[,:]?\s*(?:lines?|ll?\.|L)\s*(?P<a>\d+)(?:\s*(?:-|–|—|to)\s*L?(?P<b>\d+))?)?
        [\s.]*$""",
    re.VERBOSE | re.IGNORECASE,
)
_LINES_RE = re.compile(
    r"^\s*(?:lines?|ll?\.|L)\s*(?P<a>\d+)(?:\s*(?:-|–|—|to)\s*L?(?P<b>\d+))?[\s.]*$",
    re.IGNORECASE,
)


_RANGE_RE = re.compile(r"([Lp])(\d+)\s*(?:-|–|—|to)\s*[Lp]?(\d+)", re.IGNORECASE)


def _citation(doc: str, node: str, a: str | None, b: str | None, raw: str) -> Citation:
    start = int(a) if a else None
    end = int(b) if b else start
    if start is not None and end is not None and end < start:
        start, end = end, start
    span = _RANGE_RE.fullmatch(node)
    if span:  # a range as the model spelled it ("L12 – L30"): in a ref's one spelling
        kind, first, last = span.groups()
        kind = "L" if kind in "Ll" else "p"
        node = f"{kind}{first}" if int(first) == int(last) else f"{kind}{first}-{last}"
    return Citation(doc.strip(), node, start, end, raw)


def parse_citations(text: str) -> list[Citation]:
    """Every citation in ``text``, in order of appearance, duplicates kept.

    Understands ``[a#b, lines 3-5]``, ``[a#b, line 3]``, ``[a#b]``, several refs in one
    bracket separated by ``;`` (or by ``,`` before another ref), doc ids that are paths
    (``papers/1503.00841.md``), line-range refs of fallback windows ``[doc#L12-30]`` (also
    ``[doc#L12-30, lines 13-14]``), and en dashes or "to" in ranges.
    Brackets that hold no ref (``[1]``, a link's text) are ignored. Never raises.
    """
    found: list[Citation] = []
    for match in _BRACKET_RE.finditer(text):
        raw = match.group(0)
        for piece in match.group(1).split(";"):
            current: Citation | None = None
            for token in piece.split(","):
                ref = _REF_RE.match(token)
                if ref:
                    if current is not None:
                        found.append(current)
                    current = _citation(ref["doc"], ref["node"], ref["a"], ref["b"], raw)
                    continue
                lines = _LINES_RE.match(token)
                if lines and current is not None and current.start_line is None:
                    current = _citation(
                        current.doc_id, current.node_id, lines["a"], lines["b"], raw
                    )
            if current is not None:
                found.append(current)
    return found


def check_citation(citation: Citation, sections: Iterable[Section]) -> str | None:
    """Why ``citation`` is not backed by ``sections``, or ``None`` when it is.

    A citation is backed when its ref is a given section's ``ref`` and its lines (if any) lie
    within that section's 1-based inclusive range.
    """
    matches = [s for s in sections if s.ref == citation.ref]
    if not matches:
        return f"{citation} cites a section that was not retrieved"
    if citation.start_line is None or citation.end_line is None:
        return None
    if any(
        s.start_line <= citation.start_line and citation.end_line <= s.end_line for s in matches
    ):
        return None
    ranges = ", ".join(f"{s.start_line}-{s.end_line}" for s in matches)
    return f"{citation} cites lines outside the section (lines {ranges})"


def _with_pages(citation: Citation, sections: Sequence[Section]) -> Citation:
    """``citation`` with the pages of what it cites, where that is a section of a PDF."""
    for s in sections:
        if s.ref == citation.ref and s.pages is not None:
            if citation.start_line is None or citation.end_line is None:
                return dataclasses.replace(citation, pages=s.pages)
            if s.start_line <= citation.start_line and citation.end_line <= s.end_line:
                return dataclasses.replace(
                    citation, pages=s.pages_of(citation.start_line, citation.end_line))
    return citation


# --------------------------------------------------------------------------- answer

_NOT_IN_SECTIONS_RE = re.compile(
    r"sections?\s+do(?:es)?(?:\s+not|n['’]t)\s+contain\s+"
    r"(?:the|an|any|enough information to)\s+answer",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Answer:
    """A synthesized answer and how well it is grounded in the sections it was given.

    ``citations`` holds every citation in ``text`` in order; ``invalid_citations`` the subset
    that cite a section not given or lines outside it, with one reason per entry in
    ``warnings``. ``grounded`` is true when the answer cites at least once and every citation
    is valid. ``unanswerable`` is true when the model said the sections do not contain the
    answer (or nothing was retrieved). Token counts are the LLM's (``None`` if not reported
    or no call was made).
    """

    question: str
    text: str
    sections: tuple[Section, ...]
    citations: tuple[Citation, ...]
    invalid_citations: tuple[Citation, ...]
    grounded: bool
    unanswerable: bool
    input_tokens: int | None
    output_tokens: int | None
    model: str
    warnings: tuple[str, ...] = ()

    @property
    def cited_sections(self) -> tuple[Section, ...]:
        """The given sections that at least one valid citation points to, in given order."""
        refs = {c.ref for c in self.citations if c not in self.invalid_citations}
        return tuple(s for s in self.sections if s.ref in refs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``ask --json``): sections as ``Section.to_dict``, each citation
        with a ``valid`` flag, and the reasons for invalid ones in ``warnings``."""
        invalid = set(self.invalid_citations)
        return {
            "question": self.question,
            "text": self.text,
            "model": self.model,
            "grounded": self.grounded,
            "unanswerable": self.unanswerable,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "citations": [c.to_dict() | {"valid": c not in invalid} for c in self.citations],
            "warnings": list(self.warnings),
            "sections": [s.to_dict() for s in self.sections],
        }


def synthesize(question: str, sections: Sequence[Section], llm: LLM, *, note: str = ""
               ) -> Answer:
    """Ask ``llm`` to answer ``question`` from ``sections`` and check the citations;
    ``note`` (the routing's: no document covers the period asked) goes into the prompt
    and the answer's warnings.

    With no sections the LLM is not called and the answer says nothing was retrieved.
    Raises :class:`~proxy_pointer.errors.LLMError` when the LLM fails and ConfigError on an
    empty question.
    """
    sections = tuple(sections)
    check_question(question)
    if not sections:
        return Answer(
            question,
            NOTHING_RETRIEVED,
            (),
            (),
            (),
            grounded=False,
            unanswerable=True,
            input_tokens=None,
            output_tokens=None,
            model=llm.model_id,
            warnings=(note,) if note else (),
        )
    system, prompt = build_prompt(question, sections, note)
    reply = llm.generate(prompt, system=system)
    citations = tuple(_with_pages(c, sections) for c in parse_citations(reply.text))
    invalid: list[Citation] = []
    warnings: list[str] = [note] if note else []
    for citation in citations:
        problem = check_citation(citation, sections)
        if problem is not None:
            invalid.append(citation)
            warnings.append(problem)
    return Answer(
        question=question,
        text=reply.text,
        sections=sections,
        citations=citations,
        invalid_citations=tuple(invalid),
        grounded=bool(citations) and not invalid,
        unanswerable=bool(_NOT_IN_SECTIONS_RE.search(reply.text)),
        input_tokens=reply.input_tokens,
        output_tokens=reply.output_tokens,
        model=reply.model,
        warnings=tuple(warnings),
    )
