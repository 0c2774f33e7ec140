"""The filing vocabulary, read from ``filings.toml`` beside this module: one home for the
words of filings that cards, routing, periods, the PDF converter and query understanding
read.

The data says what filings call things (forms and their nature, statement titles, line
items as filings print them, months, legal suffixes, exchanges) and what a question means
by a concept (a ratio, a margin, a trend): the statements that answer it and the line
items it needs. Code here only types the rows and derives what each reader needs from them
(a statement-title pattern, a form's words); :data:`FILINGS` is the vocabulary, read once.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .keys import singular, words
from .phrases import PhraseSet, expand_choices

__all__ = ["FILINGS", "LABEL_READS", "READ_BY", "CardExample", "Concept", "Form", "FormCue",
           "Label", "LineItem", "Statement", "Vocabulary", "read_vocabulary"]

_PATH = Path(__file__).with_name("filings.toml")


@dataclass(frozen=True)
class Form:
    """A form kind (``"10-K"``, ``"earnings release"``), its ``nature`` (annual, quarterly,
    current, proxy, registration, other), how questions write it, the fiscal ``years`` one
    filing of it reports (its own and the comparatives before it), how a document is known
    to be one (``read_by``: its ``cover`` page, naming "FORM <name>" or one of its
    ``cover_phrases``; a release's ``headline``; a paper's ``abstract``) and whether its
    period is the date of the event it reports (``event_dated``: a current report)."""

    name: str
    nature: str
    written: tuple[str, ...]
    years: int = 1
    read_by: str = "cover"
    cover_phrases: tuple[str, ...] = ()
    event_dated: bool = False

    @property
    def cover(self) -> bool:
        """Whether a cover page names it as "FORM <name>"."""
        return self.read_by == "cover"


@dataclass(frozen=True)
class Label:
    """A word that labels a numbered part of a document ("Item 7A", "Note 12", "Appendix
    B"): the heading ``rank`` its numbering gives (``None``: none), whether it is numbered
    by a letter or not at all (``lettered``), where else it is read (``reads``, of
    :data:`LABEL_READS`), whether a bare number stands for it in a title (``structural``),
    its other spellings (``aliases``) and whether it counts only in capitals where case is
    read (``upper_only``)."""

    word: str
    rank: int | None = None
    reads: tuple[str, ...] = ()
    lettered: bool = False
    structural: bool = False
    upper_only: bool = False
    aliases: tuple[str, ...] = ()

    @property
    def cased(self) -> tuple[str, ...]:
        """The word as a heading prints it where case is read: "PART" and "Part" ("TITLE"
        alone when ``upper_only``)."""
        up = self.word.upper()
        return (up,) if self.upper_only else (up, self.word.capitalize())


@dataclass(frozen=True)
class Statement:
    """A part of a filing a question may need: a primary statement, an MD&A discussion or a
    note (``kind``); ``titles`` every section title it goes by (choices expanded), the
    start of a title; ``whole`` the titles that name it only as the whole title ("Business"
    is Item 1, "Business Combinations" is not); ``kind_words`` the words that tell a
    statement title's kind; ``named`` how a question names it."""

    key: str
    kind: str
    label: str
    titles: tuple[str, ...]
    kind_words: tuple[str, ...]
    named: tuple[str, ...]
    whole: tuple[str, ...] = ()


@dataclass(frozen=True)
class LineItem:
    """A line item: the ``statement`` it is printed in, the ``names`` filings print it by
    and the other ways a question ``written`` it ("capex", "COGS")."""

    key: str
    statement: str
    names: tuple[str, ...]
    written: tuple[str, ...]


@dataclass(frozen=True)
class Concept:
    """What a question may ask for without naming a statement (a ratio, a margin, a
    trend): the phrases that name it, the ``statements`` that answer it (first needed
    first), the ``items`` it needs, and the examples its tests check."""

    key: str
    written: tuple[str, ...]
    statements: tuple[str, ...]
    items: tuple[str, ...]
    matches: tuple[str, ...]
    misses: tuple[str, ...]


@dataclass(frozen=True)
class FormCue:
    """Phrases of a question (``written``) that lean to some ``forms`` over a company's
    other filings of the period, and the examples its tests check."""

    forms: tuple[str, ...]
    written: tuple[str, ...]
    matches: tuple[str, ...]
    misses: tuple[str, ...]


@dataclass(frozen=True)
class CardExample:
    """A document's first lines (``text``) standing for one ``layout``, and the card
    fields (``expected``) the card rules must read from it."""

    layout: str
    text: str
    expected: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one is read per file
class Vocabulary:
    """The filing vocabulary (module docstring)."""

    labels: tuple[Label, ...]
    months: tuple[str, ...]
    legal_suffixes: tuple[str, ...]
    exchanges: tuple[str, ...]
    statement_qualifiers: tuple[str, ...]
    secondary_statement_words: tuple[str, ...]
    auditor_report_titles: tuple[str, ...]
    notes_titles: tuple[str, ...]
    continued_marks: tuple[str, ...]
    part_names: tuple[str, ...]
    release_verbs: tuple[str, ...]
    release_headers: tuple[str, ...]
    former_name_marks: tuple[str, ...]
    jurisdictions: tuple[str, ...]
    card_examples: tuple[CardExample, ...]
    form_cues: tuple[FormCue, ...]
    forms: tuple[Form, ...]
    statements: tuple[Statement, ...]
    items: tuple[LineItem, ...]
    concepts: tuple[Concept, ...]
    #: the file's name without its suffix and the SHA-256 of its bytes: what an index
    #: records of the vocabulary it was read with
    name: str = ""
    sha256: str = ""
    path: str = ""  # the file it was read from

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its file and hash (a worker process reads the file once and checks
        the hash), so the shipped vocabulary stays one object in every process."""
        return (_reread, (self.path, self.sha256))

    def statement(self, key: str) -> Statement:
        return next(s for s in self.statements if s.key == key)

    def labels_read(self, where: str) -> tuple[Label, ...]:
        """The label words read ``where`` (one of :data:`LABEL_READS`), in the file's
        order."""
        return tuple(lab for lab in self.labels if where in lab.reads)

    def cased_labels(self, where: str) -> str:
        """The label words read ``where`` as a pattern's alternatives, each as headings
        print it (:attr:`Label.cased`: "PART|Part|ITEM|Item")."""
        return "|".join(w for lab in self.labels_read(where) for w in lab.cased)

    @property
    def ranked_labels(self) -> tuple[Label, ...]:
        """The label words whose numbering gives a heading rank, in the file's order."""
        return tuple(lab for lab in self.labels if lab.rank is not None)

    def item(self, key: str) -> LineItem:
        return next(i for i in self.items if i.key == key)

    def form(self, name: str) -> Form | None:
        """The form named ``name`` (a card's kind); ``None`` for "" or a name not in the
        file."""
        return self._forms.get(name)

    @cached_property
    def _forms(self) -> dict[str, Form]:
        return {f.name: f for f in self.forms}

    def read_by(self, means: str) -> str:
        """The form a document is known as by ``means`` other than its cover ("headline":
        the earnings release; "abstract": the paper); "" when no form is."""
        return self._read_by.get(means, "")

    @cached_property
    def _read_by(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for f in self.forms:
            out.setdefault(f.read_by, f.name)
        return out

    def event_dated(self, kind: str) -> bool:
        """Whether a filing of ``kind`` is dated by its event (an 8-K, a 6-K)."""
        f = self.form(kind)
        return f is not None and f.event_dated

    @cached_property
    def cover_phrases(self) -> tuple[tuple[str, str], ...]:
        """``(phrase, form)`` of each phrase a cover names its form by without "FORM <name>"
        ("ANNUAL REPORT PURSUANT" -> 10-K), in the file's order."""
        return tuple((p, f.name) for f in self.forms for p in f.cover_phrases)

    def natures(self, nature: str) -> tuple[str, ...]:
        """The names of the forms of one nature: ``natures("annual")`` -> 10-K, 10-KT, ..."""
        return self._natures.get(nature, ())

    @cached_property
    def _natures(self) -> dict[str, tuple[str, ...]]:
        out: dict[str, tuple[str, ...]] = {}
        for f in self.forms:
            out[f.nature] = (*out.get(f.nature, ()), f.name)
        return out

    @cached_property
    def kind_words(self) -> dict[str, tuple[str, ...]]:
        """Each form's name and the words a filter or a question names it by, lower-case:
        ``"10-K"`` -> 10-k, 10k, 10 k, form 10-k, annual report, annual (its nature, for
        annual and quarterly reports)."""
        out = {}
        for f in self.forms:
            names = [f.name.lower(), *(w.lower() for w in f.written)]
            if f.nature in ("annual", "quarterly"):
                names.append(f.nature)
            out[f.name] = tuple(dict.fromkeys(names))
        return out

    @cached_property
    def form_pattern(self) -> str:
        """The forms a cover page names ("FORM 10-K"), as alternatives (longest first)."""
        names = sorted((f.name for f in self.forms if f.cover), key=lambda n: (-len(n), n))
        return "|".join(re.escape(n).replace(r"\ ", " ") for n in names)

    @cached_property
    def exchange_pattern(self) -> str:
        """A stock exchange as a cover page writes it ("The New York Stock Exchange")."""
        names = (r"\s+".join(map(re.escape, e.split())) for e in self.exchanges)
        return rf"(?:The\s+)?(?:{'|'.join(names)})"

    @cached_property
    def cues(self) -> PhraseSet[int]:
        """Every form cue's phrases -> the cue's position in :attr:`form_cues`."""
        return PhraseSet((w, i) for i, c in enumerate(self.form_cues) for w in c.written)

    def cued_forms(self, question: str, *, spans: list[tuple[str, int, int]] | None = None
                   ) -> dict[str, tuple[str, ...]]:
        """The forms ``question``'s words lean to, each with the phrases that cue it, found
        word by word in linear time (``spans``: its words, when read already)."""
        out: dict[str, list[str]] = {}
        for m in self.cues.find(question, spans=spans):
            for form in self.form_cues[m.value].forms:
                out.setdefault(form, []).append(question[m.start:m.end])
        return {f: tuple(dict.fromkeys(p)) for f, p in out.items()}

    @cached_property
    def release_verb_pattern(self) -> str:
        """A release's verb ("reports", "Announces") as alternatives, longest first."""
        return "|".join(sorted(map(re.escape, self.release_verbs), key=lambda v: (-len(v), v)))

    @cached_property
    def release_header_pattern(self) -> re.Pattern[str]:
        """A line that is a release's header ("News Release", "Exhibit 99.1"), alone on its
        line or leading it (a header often runs into the headline when text is extracted)."""
        alts = sorted((r"\s+".join(map(re.escape, h.split())) for h in self.release_headers),
                      key=lambda a: -len(a))
        return re.compile(rf"^[#\s]*(?:{'|'.join(alts)})\b", re.IGNORECASE | re.MULTILINE)

    @cached_property
    def former_name_pattern(self) -> str:
        """The marks before a former name ("formerly known as", "f/k/a"), longest first."""
        alts = sorted((r"\s+".join(map(re.escape, m.split())) for m in self.former_name_marks),
                      key=lambda a: -len(a))
        return "|".join(alts)

    @cached_property
    def jurisdiction_pattern(self) -> str:
        """A state or country a registrant is organised in, as alternatives."""
        alts = sorted((r"\s+".join(map(re.escape, j.split())) for j in self.jurisdictions),
                      key=lambda a: -len(a))
        return "|".join(alts)

    @cached_property
    def month_pattern(self) -> str:
        """A regular expression for a month's name or abbreviation ("Dec.", "Sept"). The
        letters after the abbreviation are bounded by the longest month's, so a run of
        month-like letters ("janjanjan...") costs linear time, not quadratic."""
        abbr = sorted({m[:3] for m in self.months} | {"sept"}, key=lambda s: (-len(s), s))
        rest = max(len(m) for m in self.months) - 3
        return rf"(?:{'|'.join(abbr)})[a-z]{{0,{rest}}}\.?"

    @cached_property
    def month_numbers(self) -> dict[str, int]:
        """Month name and three-letter abbreviation (and "sept") -> 1..12."""
        out = {m: i for i, m in enumerate(self.months, 1)}
        out.update({m[:3]: i for m, i in list(out.items())})
        out["sept"] = 9
        return out

    @cached_property
    def statement_pattern(self) -> re.Pattern[str]:
        """A primary statement's title at the start of a line, after up to three
        qualifiers ("Condensed Consolidated Statements of Cash Flows"); a word's plural
        ``s`` and possessive apostrophe aside, "consolidated" allowed after "of"."""
        quals = "|".join(r"\s+".join(map(re.escape, q.split())) for q in self.statement_qualifiers)
        alts = [_title_regex(t) for s in self.statements if s.kind == "statement"
                for t in s.titles]
        return re.compile(rf"^(?:(?:{quals})\s+){{0,3}}(?:{'|'.join(alts)})\b", re.IGNORECASE)

    @cached_property
    def auditor_report_pattern(self) -> re.Pattern[str]:
        """The auditor's report's title at the start of a heading."""
        return _heading_start(self.auditor_report_titles)

    @cached_property
    def notes_pattern(self) -> re.Pattern[str]:
        """The notes' title ("Notes to Consolidated Financial Statements") at the start of a
        heading."""
        return _heading_start(self.notes_titles)

    @cached_property
    def continued_pattern(self) -> re.Pattern[str]:
        """A mark of a statement page that continues the statement, anywhere in its title:
        a word ("continued") or a parenthesis ("(cont'd)")."""
        return re.compile("|".join(rf"\b{re.escape(m)}\b" if m.isalpha() else re.escape(m)
                                   for m in self.continued_marks), re.IGNORECASE)

    def statement_kind(self, title: str) -> str:
        """Which primary statement a statement title names, by its words in the file's
        order ("... Income and Comprehensive Income" is comprehensive income); the title
        in lower case when none says."""
        low = " ".join(words(title))
        for s in self.statements:
            if s.kind == "statement" and any(
                    re.search(rf"\b{re.escape(' '.join(words(w)))}\b", low) for w in s.kind_words):
                return s.key
        return title.lower()

    @cached_property
    def titles(self) -> PhraseSet[str]:
        """Every title of every statement, discussion and note -> its key."""
        return PhraseSet((t, s.key) for s in self.statements for t in s.titles)

    @cached_property
    def _whole_titles(self) -> dict[tuple[str, ...], set[str]]:
        out: dict[tuple[str, ...], set[str]] = {}
        for s in self.statements:
            for t in s.whole:
                out.setdefault(words(t), set()).add(s.key)
        return out

    def secondary(self, title: str) -> bool:
        """Whether a statement's title makes it another entity's than the filer's
        consolidated one ("Parent Company - Condensed Balance Sheets")."""
        have = f" {' '.join(words(title))} "
        return any(f" {' '.join(words(w))} " in have for w in self.secondary_statement_words)

    def section_kinds(self, title: str) -> set[str]:
        """The statements (discussions, notes) a section title is: the title, without its
        qualifiers and a leading numbering, starts with one of their titles ("Consolidated
        Statements of Income and Comprehensive Income" is an income statement)."""
        seq = list(words(title))
        quals = {words(q) for q in self.statement_qualifiers}
        numbered = False
        while seq and (seq[0].isdigit() or seq[0] in ("note", "item") or (
                numbered and len(seq[0]) == 1 and seq[0].isalpha())):  # "NOTE D"
            numbered = seq.pop(0) in ("note", "item")
        changed = True
        while changed and seq:
            changed = False
            for q in quals:
                if tuple(seq[:len(q)]) == q:
                    seq = seq[len(q):]
                    changed = True
        if len(seq) > 2 and seq[1] == "of" and seq[2] == "consolidated":
            seq.pop(2)
        text = " ".join(seq)
        found = self.titles.find(text)
        kinds = {m.value for m in found if m.first == 0}
        kinds |= self._whole_titles.get(tuple(seq), set())
        # a combined title ends in a note's ("Liabilities, Commitments and Contingencies")
        kinds |= {m.value for m in found if m.last == len(seq) and m.first > 0
                  and seq[m.first - 1] == "and" and self.statement(m.value).kind == "note"}
        return kinds


def _heading_start(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """Title patterns (choices expanded) as a pattern that matches where a heading begins,
    words apart by any white space, a word ending where a phrase ends."""
    alts = [r"\s+".join(map(re.escape, t.split())) for p in patterns for t in expand_choices(p)]
    return re.compile(rf"^\s*(?:{'|'.join(alts)})\b", re.IGNORECASE)


def _title_regex(title: str) -> str:
    """A title phrase as a pattern: words apart by white space, each with an optional
    plural ``s`` and possessive apostrophe, "of" followed by an optional
    "consolidated"."""
    parts = []
    for w in title.split():
        w = w.lower()
        stem = singular(w)
        parts.append(re.escape(stem) + r"s?['’]?" if len(stem) > 2 else re.escape(stem))
        if w == "of":
            parts[-1] += r"(?:\s+consolidated)?"
    return r"\s+".join(parts)


def read_vocabulary(path: str | Path = _PATH) -> Vocabulary:
    """The vocabulary in ``path`` (the shipped ``filings.toml`` by default);
    :class:`~proxy_pointer.errors.ConfigError` naming the file and the row for a row that
    names a statement or line item the file does not define."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the vocabulary: {e}") from e
    w = data.get("words", {})
    vocab = Vocabulary(
        labels=tuple(Label(str(r["word"]), None if r.get("rank") is None else int(r["rank"]),
                           _tup(r, "reads"), bool(r.get("lettered", False)),
                           bool(r.get("structural", False)), bool(r.get("upper_only", False)),
                           _tup(r, "aliases")) for r in data.get("label", ())),
        months=tuple(w.get("months", ())), legal_suffixes=tuple(w.get("legal_suffixes", ())),
        exchanges=tuple(w.get("exchanges", ())),
        statement_qualifiers=tuple(w.get("statement_qualifiers", ())),
        secondary_statement_words=tuple(w.get("secondary_statement_words", ())),
        auditor_report_titles=tuple(w.get("auditor_report_titles", ())),
        notes_titles=tuple(w.get("notes_titles", ())),
        continued_marks=tuple(w.get("continued_marks", ())),
        part_names=tuple(w.get("part_names", ())),
        release_verbs=tuple(w.get("release_verbs", ())),
        release_headers=tuple(w.get("release_headers", ())),
        former_name_marks=tuple(w.get("former_name_marks", ())),
        jurisdictions=tuple(w.get("jurisdictions", ())),
        card_examples=tuple(CardExample(r["layout"], r["text"], tuple(
            (k, tuple(v) if isinstance(v, list) else v) for k, v in r.items()
            if k not in ("layout", "text"))) for r in data.get("card_example", ())),
        form_cues=tuple(FormCue(_tup(r, "forms"), _tup(r, "written"), _tup(r, "matches"),
                                _tup(r, "misses")) for r in data.get("form_cue", ())),
        forms=tuple(Form(r["name"], r["nature"], _tup(r, "written"), int(r.get("years", 1)),
                         str(r.get("read_by", "cover")), _tup(r, "cover_phrases"),
                         bool(r.get("event_dated", False)))
                    for r in data.get("form", ())),
        statements=tuple(Statement(r["key"], r["kind"], r["label"],
                                   tuple(t for p in r["titles"] for t in expand_choices(p)),
                                   _tup(r, "kind_words"), _tup(r, "named"),
                                   tuple(t for p in r.get("whole", ()) for t in expand_choices(p)))
                         for r in data.get("statement", ())),
        items=tuple(LineItem(r["key"], r["statement"], _tup(r, "names"), _tup(r, "written"))
                    for r in data.get("item", ())),
        concepts=tuple(Concept(r["key"], _tup(r, "written"), _tup(r, "statements"),
                               _tup(r, "items"), _tup(r, "matches"), _tup(r, "misses"))
                       for r in data.get("concept", ())),
        name=path.stem, sha256=hashlib.sha256(raw).hexdigest(), path=str(path))
    _check(vocab, path)
    return vocab


def _tup(row: dict[str, Any], key: str) -> tuple[str, ...]:
    return tuple(str(x) for x in row.get(key, ()))


#: How a document may be known to be of a form (:attr:`Form.read_by`).
READ_BY = ("cover", "headline", "abstract")
#: Where a label word is read besides heading ranks (:attr:`Label.reads`).
LABEL_READS = ("heading", "contents", "line", "question", "float", "bare")


def _check(vocab: Vocabulary, path: Path) -> None:
    for lab in vocab.labels:
        bad = [r for r in lab.reads if r not in LABEL_READS]
        if bad:
            raise ConfigError(f"{path}: label {lab.word!r} is read in {', '.join(bad)}; "
                              f"choose from {', '.join(LABEL_READS)}")
    for f in vocab.forms:
        if f.read_by not in READ_BY:
            raise ConfigError(f"{path}: form {f.name!r} is read by {f.read_by!r}; "
                              f"choose one of {', '.join(READ_BY)}")
    statements = {s.key for s in vocab.statements}
    items = {i.key for i in vocab.items}
    for i in vocab.items:
        if i.statement not in statements:
            raise ConfigError(f"{path}: item {i.key!r} names no statement: {i.statement!r}")
    for c in vocab.concepts:
        bad = [s for s in c.statements if s not in statements] + [
            x for x in c.items if x not in items]
        if bad:
            raise ConfigError(f"{path}: concept {c.key!r} names what the file does not "
                              f"define: {', '.join(bad)}")


_READ: dict[str, Vocabulary] = {}  # path -> the vocabulary read from it, in this process


def _reread(path: str, sha256: str) -> Vocabulary:
    """The vocabulary of ``path`` as a pickle names it: read once per process; a
    :class:`~proxy_pointer.errors.ConfigError` when the file changed since."""
    vocab = _READ.get(path)
    if vocab is None:
        vocab = _READ.setdefault(path, read_vocabulary(path))
    if vocab.sha256 != sha256:
        raise ConfigError(f"{path}: the vocabulary changed while it was in use")
    return vocab


FILINGS = read_vocabulary()
_READ.setdefault(FILINGS.path, FILINGS)
