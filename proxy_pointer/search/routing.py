"""Routing: find the right documents before the right sections.

A question over a shelf of filings names what it is about ("What was 3M's FY2021 capital
expenditure?"), and near-identical sections of the wrong year or the wrong company would
otherwise compete with the right one: a 10-K repeats two prior years, and a company's
10-K, 10-Q and earnings release share most of their words. :func:`route` matches the
question against the documents' :class:`~proxy_pointer.parse.cards.Card`:

1. **Entity.** Any name a card's entity goes by (its name, short form, trading symbol and
   names it defines for itself; the initials of an ampersand name, "P&G"; a user's
   aliases) written in the question, as a proper noun, or in lower case where the
   question uses it as a name; documents that share a name (a trading symbol kept through
   a rename) are one entity. A question naming no entity but a period goes, softly, to
   each entity's documents of that period; one naming neither is not routed, unless the
   shelf holds one entity only.
2. **Period.** The period the question is anchored to ("As of FY2020, ..."), else the
   latest one it names (:func:`~proxy_pointer.parse.periods.asked_periods`: a filing
   reports the years before it too): an annual report of that fiscal year first, then an
   earnings release of its fourth quarter, a quarterly report of it, a current report in
   it; a quarter asks for that quarter's report (else that year's annual report); a date
   for the report ending or dated on it. Where no document of the entity covers the period,
   the result says so, and the latest document before it is used (a forecast for FY2023
   is in the FY2022 report). Without a period, the latest annual report and anything
   filed after it.
3. **Kind.** A question naming a kind ("10-Q", "earnings release") keeps that kind where
   the entity has one.

The search is then kept to those documents and to every document whose card names no
entity (a manual, a paper: routing chooses among filings, it never hides the rest);
:class:`Route` says which card fields matched, every document weighed (kept or dropped,
and why) and how sure it is (hard: one document per entity; soft: several fit, and their
sections decide). A question the cards say nothing about is answered over every document.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from typing import Any

from ..parse.cards import Card, abbreviates, short_name
from ..parse.periods import Period
from ..tokens import count_tokens
from ..vocab.filings import FILINGS, Vocabulary
from ..vocab.synonyms import Synonyms
from .question import Question

__all__ = ["Route", "Shelf", "route"]

#: Capitalised words of business prose that are never a company's abbreviation here.
_ACRONYMS = frozenset("CEO CFO COO CTO EPS GAAP EBIT EBITDA FY USD US UK EU ESG AGM SEC IPO "
                      "ROE ROA ROI ROIC FCF CAPEX OPEX LLC LTD INC PLC NYSE NASDAQ YOY QOQ "
                      "TTM LTM API".split())


@dataclass(frozen=True)
class Route:
    """Where a question was sent: ``documents`` (empty: not routed, every document
    searched), the ``names`` it matched and the ``entities`` they belong to, the
    ``period`` and ``kind`` it asked for, and a ``note`` when the shelf cannot answer as
    asked (no document covers the period)."""

    documents: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    entities: tuple[str, ...] = ()
    period: str = ""
    kind: str = ""
    note: str = ""
    #: ``(doc_id, kept, why)`` for each document the cards weighed (the named entities'
    #: documents; for a question naming no company, the first ``_SHOWN`` kept ones)
    considered: tuple[tuple[str, bool, str], ...] = ()
    #: ``"hard"``: one document per entity, the cards decide; ``"soft"``: several fit, and
    #: what their sections say about the question decides (the search ranks them)
    confidence: str = ""
    #: ``(doc_id, prior, group)`` for every filing the document choice weighs
    #: (:mod:`.choice`): the cards' choice (prior 1), the entity's other filings that cover
    #: the period (their card score, below 1) and the nearest filing of a form the question's
    #: words lean to (prior 0); ``group`` numbers the named entities (one group when none is)
    candidates: tuple[tuple[str, float, int], ...] = ()
    #: ``(doc_id, score, why)`` of each candidate the choice scored, best first
    scores: tuple[tuple[str, float, str], ...] = ()
    #: no company named: every filing the first search finds is a candidate too (prior 0),
    #: so what the filings hold decides over the whole shelf, not the period alone
    open: bool = False

    def __bool__(self) -> bool:
        """Whether the question was sent to particular documents (an open route is not,
        until the document choice has chosen)."""
        return bool(self.documents)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, the ``routing`` field of a result."""
        return {"documents": list(self.documents), "names": list(self.names),
                "entities": list(self.entities), "period": self.period, "kind": self.kind,
                "note": self.note, "confidence": self.confidence,
                "considered": [{"document": d, "kept": k, "why": w}
                               for d, k, w in self.considered],
                "scores": [{"document": d, "score": round(x, 4), "why": w}
                           for d, x, w in self.scores]}


def route(question: str | Question, cards: Mapping[str, Card],
          aliases: Synonyms | None = None, *, vocabulary: Vocabulary = FILINGS) -> Route:
    """The documents of ``cards`` that ``question`` is about (:class:`Route`); an empty
    route when it names no entity the cards know (or the shelf is one entity and it
    names no period). ``aliases``: a user's names for entities, in the synonyms format.
    Builds a :class:`Shelf` each call: hold one to route many."""
    return Shelf(cards, aliases, vocabulary=vocabulary).route(question)


class Shelf:
    """The cards of the documents one view may search, indexed for routing: documents
    grouped into entities (those sharing any name are one), each name by its first word,
    each entity by its initial. Built once per view and generation; routing a question
    then costs a lookup per question word, not a pass over the cards. ``vocabulary``: the
    forms the cards' kinds are (their nature, how a question names them, whether an event
    dates them) and the legal suffixes of names."""

    def __init__(self, cards: Mapping[str, Card], aliases: Synonyms | None = None, *,
                 vocabulary: Vocabulary = FILINGS) -> None:
        self.vocabulary = vocabulary
        self.cards = dict(cards)
        self.groups = _entities(self.cards)
        #: Documents whose cards name no entity (papers, manuals): never routed away.
        self.unclaimed = tuple(sorted(d for d, c in self.cards.items() if not c.entity))
        self._by_word: dict[str, list[tuple[str, int]]] = {}
        self._by_initial: dict[str, list[int]] = {}
        self._group_of: dict[str, int] = {}  # document -> its entity's group
        self._by_year: dict[int, list[str]] = {}  # fiscal year -> documents
        # (period, kind) -> its documents for questions naming no company (the oldest
        # dropped past _PERIODS); a Shelf is shared by a view's concurrent requests
        self._periods: dict[tuple[Period, str], tuple[str, ...]] = {}
        self._lock = threading.Lock()
        #: Each group's entity as its latest document names it (a renamed company's new name).
        self.entities: list[str] = []
        for i, members in enumerate(self.groups):
            names = {n for d in members for n in (self.cards[d].entity, *self.cards[d].names)
                     if n}
            names |= _aliases(names, aliases, vocabulary)
            for n in names:
                first = re.match(r"[\w&]*", n.lower())
                self._by_word.setdefault(first.group(0) if first else "", []).append((n, i))
            latest = self.cards[max(members, key=lambda d: _order(self.cards[d]))].entity
            self.entities.append(latest)
            self._by_initial.setdefault(latest[:1].lower(), []).append(i)
            for d in members:
                self._group_of[d] = i
                year = self.cards[d].fiscal_year
                if year is not None:
                    self._by_year.setdefault(year, []).append(d)
        if len(self.groups) > 1:  # a fiscal year asked with no company: known at once
            for year in sorted(self._by_year)[-_PERIODS:]:
                self._periods[(Period(year), "")] = self._period_documents(Period(year), "")

    def route(self, question: str | Question) -> Route:
        """See :func:`route`."""
        if not self.groups:
            return Route()
        cards = self.cards
        question = Question.of(question, vocabulary=self.vocabulary)
        named, hits = self._named(question)
        target = question.asked.target
        kind = question.kind
        if not named:
            if target is not None and len(self.groups) > 1:
                return self._period_only(target, kind)
            if len(self.groups) != 1 or target is None or len(self.groups[0]) != len(cards):
                return Route()
            named = [0]
        return self._for_groups(question, named, hits, target, kind)

    def route_as(self, question: str | Question, doc_id: str) -> Route:
        """The route ``question`` takes had it named the entity of ``doc_id``: a question
        naming no company, once what the filings hold has found the company (its period
        then picks the filing as the cards do); an empty route for an unclaimed document."""
        g = self._group_of.get(doc_id)
        if g is None:
            return Route()
        question = Question.of(question, vocabulary=self.vocabulary)
        r = self._for_groups(question, [g], [], question.asked.target, question.kind)
        note = f"No company named: what the filings hold points to {self.entities[g]}."
        return replace(r, note=" ".join(filter(None, (note, r.note))))

    def family(self, doc_id: str) -> dict[str, Card]:
        """The cards of the filings on this shelf by the entity of ``doc_id`` (itself
        included); empty for an unclaimed document."""
        g = self._group_of.get(doc_id)
        return {} if g is None else {d: self.cards[d] for d in self.groups[g]}

    def _for_groups(self, question: Question, named: list[int], hits: list[str],
                    target: Period | None, kind: str) -> Route:
        """The route to the named groups' filings of ``target`` (module docstring)."""
        cards = self.cards
        written = dict(zip(named, hits, strict=False))
        docs: list[str] = []
        notes: list[str] = []
        considered: list[tuple[str, bool, str]] = []
        candidates: list[tuple[str, float, int]] = []
        cued = () if kind else tuple(question.cued_forms)
        hard = True
        for g in named:
            members = self.groups[g]
            chosen, note = _by_period(members, cards, target, self.entities[g], self.vocabulary)
            if kind:
                of_kind = [d for d in chosen if cards[d].kind == kind] or [
                    d for d in members if cards[d].kind == kind and (
                        target is None or _score(cards[d], target, self.vocabulary) > 0)]
                chosen = of_kind or chosen
            docs.extend(chosen)
            candidates += _candidates(members, cards, chosen, target, kind, cued, g,
                                      self.vocabulary, written.get(g, ""))
            hard = hard and len(chosen) == 1
            considered += [(d, d in chosen, _why(cards[d], target, kind, d in chosen))
                           for d in sorted(members)]
            if note:
                notes.append(note)
        entities = tuple(dict.fromkeys(self.entities[g] for g in named))
        return Route(tuple(sorted(set(docs))), tuple(hits), entities, _asked(target), kind,
                     " ".join(notes), tuple(considered), "hard" if hard else "soft",
                     tuple(candidates))

    def _period_only(self, target: Period, kind: str) -> Route:
        """A question naming a period and no company, over a shelf of several: each
        entity's documents that cover the period best (of the kind asked), soft: what
        their sections say decides. Reads only the cards of the fiscal years the period
        can fall in."""
        key = (target, kind)
        with self._lock:
            docs = self._periods.get(key)
        if docs is None:  # one pass over a year's cards, then kept
            docs = self._period_documents(target, kind)
            with self._lock:
                if len(self._periods) >= _PERIODS:
                    self._periods.pop(next(iter(self._periods)))
                self._periods[key] = docs
        if not docs:
            return Route(note=_UNNAMED, confidence="soft", open=True)
        asked = _asked(target)
        note = (f"No company named: what the filings hold decides, the {len(docs)} that "
                f"cover {asked} first.")
        shown = tuple((d, True, _why(self.cards[d], target, kind, True)) for d in docs[:_SHOWN])
        return Route(docs, (), (), asked, kind, note, shown, "soft",
                     tuple((d, _UNNAMED_PRIOR, 0) for d in docs), open=True)

    def _period_documents(self, target: Period, kind: str) -> tuple[str, ...]:
        """Each entity's documents that cover ``target`` best (of ``kind``), sorted."""
        cards = self.cards
        years = {target.year} if target.end is None else {target.end.year, target.end.year + 1}
        best: dict[int, tuple[int, list[str]]] = {}
        for d in (d for y in sorted(years) for d in self._by_year.get(y, ())):
            score = _score(cards[d], target, self.vocabulary)
            if score <= 0 or (kind and cards[d].kind != kind):
                continue
            g = self._group_of[d]
            if g not in best or score > best[g][0]:
                best[g] = (score, [d])
            elif score == best[g][0]:
                best[g][1].append(d)
        return tuple(sorted(d for _, ds in best.values() for d in ds))

    def _named(self, question: Question) -> tuple[list[int], list[str]]:
        """Indexes of the groups whose names the question writes, and the names as written."""
        found: dict[int, str] = {}
        candidates = [c for w in question.name_words for c in self._by_word.get(w, ())]
        for n, i in sorted(candidates, key=lambda c: -len(c[0])):
            if i not in found and (m := _find(question.text, n, question.lower)):
                found[i] = m
        # "AMEX" for American Express: a capitalised abbreviation of the entity's name.
        for token in question.capitals:
            if token in _ACRONYMS:
                continue
            for i in self._by_initial.get(token[0].lower(), ()):
                if i not in found and abbreviates(token, self.entities[i]):
                    found[i] = token
        order = sorted(found)
        return order, [found[i] for i in order]


# --- entities ---------------------------------------------------------------------------
def _aliases(names: set[str], aliases: Synonyms | None, vocabulary: Vocabulary) -> set[str]:
    """More names of an entity known by ``names``: the initials of a name joined by an
    ampersand ("Procter & Gamble": "P&G", "PnG"; "Johnson & Johnson": "J&J", "JnJ"), and
    every term of a user's alias rule one of whose terms is a name already ("Pepsi,
    PepsiCo"; "Pepsi => PepsiCo")."""
    out = set()
    for n in names:
        parts = re.split(r"\s*(?:&|\band\b)\s*", short_name(n, vocabulary=vocabulary))
        if len(parts) == 2 and all(p[:1].isalpha() and p[:1].isupper() for p in parts):
            a, b = parts[0][0], parts[1][0]
            out |= {f"{a}&{b}", f"{a}n{b}"}
    if aliases is not None:
        known = {n.lower() for n in names}
        for rule in aliases.rules:
            terms = (*rule.terms, *rule.targets)
            if any(t.lower() in known for t in terms):
                out |= set(terms)
    return out


def _entities(cards: Mapping[str, Card]) -> list[list[str]]:
    """Documents with an entity, grouped: documents that share any name are one entity."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    by_name: dict[str, str] = {}
    for d in sorted(cards):
        c = cards[d]
        if not c.entity:
            continue
        parent.setdefault(d, d)
        for n in {c.entity.lower(), *(x.lower() for x in c.names)}:
            if n in by_name:
                parent[find(d)] = find(by_name[n])
            else:
                by_name[n] = d
    out: dict[str, list[str]] = {}
    for d in parent:
        out.setdefault(find(d), []).append(d)
    return sorted(out.values())


def _find(question: str, name: str, lower: bool) -> str:
    """``name`` as the question writes it, or ``""``: as a proper noun (capitalised), a
    trading symbol exactly; written in lower case, a name of several words or with a digit
    ("lockheed martin", "3m"), or one word where it is too rare to be an English word for
    the tokenizer ("pepsico") or the question uses it as a name: possessive ("boeing's") or
    before a year or a form ("boeing 2020 annual report"); "block" or "target" alone are
    words there."""
    if len(name) < 2:
        return ""
    # "Coca-Cola" is also written "Coca Cola"
    pat = r"\s+".join(re.escape(w) for w in name.split()).replace(r"\-", r"[-\s]?")
    symbol = name.isupper() and name.isalpha() and len(name) <= 5
    plain = " " not in name and not any(c.isdigit() for c in name)
    for m in re.finditer(rf"(?<![\w&]){pat}(?![\w&]|-\w)", question, 0 if symbol else re.I):
        text = m.group(0)
        if symbol or not plain or text[0].isdigit() or (text[0].isupper() and not lower):
            return text
        if _NAME_CUE.match(question, m.end()) or _rare(name):
            return text
    return ""


# after a name written in lower case: a possessive, a year or a form ("boeing's",
# "boeing 2020", "boeing 10-k", "boeing annual report")
_NAME_CUE = re.compile(r"['’]s\b|\s+(?:(?:fy\s*)?(?:19|20)\d\d\b|10-?[kq]\b|annual\b|quarterly\b)",
                       re.I)


def _rare(name: str) -> bool:
    """A word the tokenizer's 30,000-word vocabulary does not hold: no English word."""
    return len(name) >= 4 and name.isalpha() and count_tokens(name.lower()) > 1


# --- periods ----------------------------------------------------------------------------
_SHOWN = 20  # documents a question naming no company lists as considered
_PERIODS = 256  # periods whose documents a shelf keeps for questions naming no company


def _asked(target: Period | None) -> str:
    if target is not None and target.start is not None:
        return target.start.isoformat()[:7]  # a month: "2023-03"
    return "" if target is None else target.end.isoformat() if target.end else target.label


def _why(card: Card, target: Period | None, kind: str, kept: bool) -> str:
    """Why routing kept or dropped a document, from its card."""
    what = f"{card.kind or 'document'} {card.period or '(no period)'}"
    if kind and card.kind != kind:
        return f"{what}: the question asks for a {kind}"
    if target is None:
        return f"{what}: " + ("the latest annual report, or filed after it" if kept
                              else "before the latest annual report")
    return f"{what}: " + (f"answers {_asked(target)}" if kept
                          else f"another period than {_asked(target)}, or a closer one exists")


def _by_period(members: Sequence[str], cards: Mapping[str, Card], target: Period | None,
               name: str, vocabulary: Vocabulary) -> tuple[list[str], str]:
    """The documents of one entity (``name``) that answer for ``target``, and a note when
    none covers it (module docstring, step 2)."""
    dated = [d for d in members if cards[d].fiscal_year is not None]
    if not dated:
        return list(members), ""
    if target is None:
        annual = [d for d in dated if cards[d].kind in vocabulary.natures("annual")]
        if not annual:
            return list(members), ""
        last = max(_order(cards[d]) for d in annual)
        return [d for d in dated if _order(cards[d]) >= last], ""
    scores = {d: _score(cards[d], target, vocabulary) for d in dated}
    best = max(scores.values())
    if best > 0:
        return [d for d in dated if scores[d] == best], ""
    asked = target.end.isoformat() if target.end else target.label
    before = [d for d in dated if _order(cards[d]) < _order_of(target)]
    if not before:
        return list(members), f"No document of {name} covers {asked}."
    last = max(_order(cards[d]) for d in before)
    chosen = [d for d in before if _order(cards[d]) == last]
    shown = ", ".join(cards[d].period for d in chosen[:1])
    return chosen, f"No document of {name} covers {asked}; the latest before it ({shown}) is used."


def _candidates(members: Sequence[str], cards: Mapping[str, Card], chosen: Sequence[str],
                target: Period | None, kind: str, cued: Sequence[str], group: int,
                vocabulary: Vocabulary, written: str = "") -> list[tuple[str, float, int]]:
    """The filings of one entity the document choice weighs (:attr:`Route.candidates`):
    ``chosen`` at prior 1; the others that cover ``target`` (of ``kind``, when asked) and
    those whose entity the name as ``written`` was while the newest filing's is another (a
    former name) at their card score scaled below 1; and, for each form in ``cued``, the
    entity's two filings of that form nearest the period (at or before it), at prior 0."""
    out = dict.fromkeys(chosen, 1.0)
    if target is not None:
        for d in members:
            if d not in out and not (kind and cards[d].kind != kind) and (
                    score := _score(cards[d], target, vocabulary)) > 0:
                out[d] = _COVER_PRIOR * score / 5
    if written:  # a former name: the filings it was the entity's name on, too
        def named(d: str) -> bool:
            return written.lower() in {
                cards[d].entity.lower(), short_name(cards[d].entity, vocabulary=vocabulary).lower()}

        newest = max(members, key=lambda d: (_order(cards[d]), d))
        for d in [] if named(newest) else [d for d in members if named(d)]:
            out.setdefault(d, _COVER_PRIOR)
    limit = _order_of(target) if target is not None else None
    for form in cued:
        of_form = sorted((d for d in members if cards[d].kind == form),
                         key=lambda d: (_order(cards[d]), d), reverse=True)
        before = [d for d in of_form if limit is None or _order(cards[d]) <= limit]
        # the nearest at or before the period, and the one before it (a forecast of a
        # period is in the filing before it)
        for d in (before or of_form)[:2]:
            out.setdefault(d, 0.0)
    return [(d, p, group) for d, p in sorted(out.items())]


_COVER_PRIOR = 0.8  # a filing that covers the period, but not the cards' choice: at most this
#: a filing of the period asked when no company is named: the period is a weak sign there
#: (the year may be an event's), what the filings hold decides
_UNNAMED_PRIOR = 0.5
_UNNAMED = "No company named: what the filings hold decides."


def _score(card: Card, target: Period, vocabulary: Vocabulary) -> int:
    """How well a card's period answers the asked one (0: not at all); ``vocabulary``
    says which kinds are annual reports and which the earnings release."""
    annual = vocabulary.natures("annual")
    if target.start is not None and target.end is not None:
        # a month: the filings dated or ending in it, else the calendar year's, below them
        if card.period_end and target.start.isoformat() <= card.period_end <= (
                target.end.isoformat()):
            return 5
        return 3 * _score(card, Period(target.year), vocabulary) // 5  # 5 -> 3, 4 -> 2, 2 -> 1
    if target.end is not None:
        return _date_score(card, target.end, vocabulary)
    if card.fiscal_year != target.year:
        return 0
    if target.quarter is not None:
        if card.quarter == target.quarter:
            return 5
        if card.quarter is None and card.kind in annual:
            # the annual report of that fiscal year covers each of its quarters: its fourth
            # quarter as the year's last, the others where no quarterly report is on the shelf
            return 3 if target.quarter == 4 else 2
        return 0
    if card.quarter is None:
        return 5 if card.kind in annual or not card.kind else 1
    release = vocabulary.read_by("headline")
    if release and card.kind == release and card.quarter == 4:
        return 4
    return 2


def _date_score(card: Card, when: date, vocabulary: Vocabulary) -> int:
    if not card.period_end:
        return 0
    end = date.fromisoformat(card.period_end)
    if end == when:
        return 5
    event = vocabulary.event_dated(card.kind)
    span = 370 if card.quarter is None and not event else 95
    return 3 if not event and end - timedelta(days=span) < when <= end else 0


def _order(card: Card) -> tuple[int, int, str]:
    return (card.fiscal_year or 0, card.quarter or 5, card.period_end)


def _order_of(target: Period) -> tuple[int, int, str]:
    if target.end is not None:
        return (target.year, 0, target.end.isoformat())
    return (target.year, target.quarter or 0, "")
