"""Document cards: what a document is, read from its own first pages without an LLM.

A shelf holds many documents of the same kind: a company's 10-Ks of five years, its 10-Qs
and earnings releases, side by side with other companies'. Before any section can be
right, the document must be, so each document gets a :class:`Card`: its ``title``, the
``entity`` it is about and the ``names`` that entity goes by, its ``kind`` and the
``period`` it covers. For filings these come from the cover page (the registrant's name
above "Exact name of registrant", the form, "For the fiscal year ended ...", "For the
quarterly period ended ...", "Date of Report ...", the trading symbol) or an earnings
release's first lines ("PepsiCo, Inc. (NASDAQ: PEP) today reported results for the
fourth quarter and full-year 2022"); for papers, the title and abstract; otherwise the
title and top headings. Nothing is guessed: a field the text does not state stays empty,
and a user's metadata (``entity``, ``kind``, ``period``, ...) overrides any field
(:func:`effective_card`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from datetime import date
from functools import lru_cache
from typing import Any

from ..tokens import count_tokens
from ..vocab.filings import FILINGS, Vocabulary
from .periods import Period, asked_periods, dates_of, fiscal_year, parse_date, year_end_of

__all__ = ["CARD_FIELDS", "KIND_WORDS", "Card", "abbreviates", "card_matches",
           "effective_card", "read_card", "short_name"]

_HEAD_CHARS = 50_000  # the cover pages, after a glossy report's letter to shareholders
_QUARTER_CHARS = 80_000  # "three and six months ended" is in the first statements

_EARNINGS_PERIOD = re.compile(
    r"\b(?:(first|second|third|fourth)[\s-]+quarter|q([1-4]))\b(?:\s+and\s+(?:full|fiscal)"
    r"[\s-]+year)?(?:\s+(?:of\s+)?(?:fiscal\s+(?:year\s+)?)?)?\s*((?:19|20)\d\d)", re.I)
# the date above its label: "January 4, 2023\nDate of Report (date of earliest event reported)"
_MONTHS_ENDED = re.compile(r"\b(?:three\s+and\s+)?(six|nine)\s+months\s+ended", re.I)
_REGISTRANT = re.compile(r"\(\s*exact\s+name\s+of\s+(?:the\s+)?registrant", re.I)
_FILE_NUMBER = re.compile(r"commission\s+file\s+(?:number|no\.?)\s*:?\s*[\d-]+", re.I)
_REGISTRANTS = 4  # rows of a registrant table read: the filer and up to three others
# a release's dateline naming the company's exchange and symbol ("PURCHASE, N.Y. - February
# 9, 2023 - PepsiCo, Inc. (NASDAQ: PEP)"); a name may start in lower case ("eBay Inc.")
_DATELINE = re.compile(
    r"(\b(?:[A-Z]|[a-z]{1,3}[A-Z])[\w&.,'’ -]{1,80}?)\s*\(\s*(?:NYSE|NASDAQ|Nasdaq)(?:\s+\w+)?"
    r"\s*:\s*([A-Z.]{1,6})\)")
# a dateline naming no exchange: "CHICAGO, IL - McDonald's Corporation today announced",
# "SANTA CLARA, Calif., Jan. 26, 2023 -- Intel Corporation today reported"; at most six
# capitalised words before "today", so each start costs a bounded step
_NAME_WORD = r"(?:[A-Z]|[a-z]{1,3}[A-Z])[\w&.'’-]*"
# "for the first quarter ended March 31, 2023", "its first quarter fiscal 2024 ended April 30"



@dataclass(frozen=True, eq=False)
class _Rules:
    """The card rules that read a vocabulary's words, compiled once per vocabulary
    (:func:`_rules`): how a cover names its form ("FORM 10-K" in capitals: the cover's,
    not "our Form 10-K"), the forms read by a headline (the release) or an abstract (the
    paper), a release's headline and dateline verbs, a registrant table's row (file
    number, name, where organised, employer number: "1-12609 PG&E CORPORATION California
    94-3234914"), a trading symbol before its exchange, the marks before a former name and
    the legal suffixes a short name drops."""

    vocabulary: Vocabulary
    form: re.Pattern[str]
    release: str
    paper: str
    earnings: re.Pattern[str]
    registrant_row: re.Pattern[str]
    ticker: re.Pattern[str]
    release_line: re.Pattern[str]
    suffixes: frozenset[str]
    # a cover's or a release's period, dates written with the vocabulary's months: "for the
    # fiscal year ended", "quarterly period ended", "Date of Report ...: <date>" (or the
    # date above its label), a release's "for the first quarter ended <date>"
    annual: re.Pattern[str]
    quarterly: re.Pattern[str]
    event: re.Pattern[str]
    event_above: re.Pattern[str]
    release_end: re.Pattern[str]


@lru_cache(maxsize=8)
def _rules(vocabulary: Vocabulary) -> _Rules:
    verb = vocabulary.release_verb_pattern
    date = dates_of(vocabulary).date
    return _Rules(
        vocabulary=vocabulary,
        form=re.compile(rf"\bFORM\s+({vocabulary.form_pattern})\b"),
        release=vocabulary.read_by("headline"), paper=vocabulary.read_by("abstract"),
        # "Intel Reports Fourth-Quarter ... Results", "... Announces ... Results"
        earnings=re.compile(
            rf"\b(?:{verb})\b[^.\n]{{0,80}}?\b(?:quarter|full[- ]year|fiscal[- ]year|annual)\b"
            r"[^.\n]{0,60}?\bresults\b", re.I),
        registrant_row=re.compile(
            rf"^[ \t]*\d{{1,4}}-\d{{3,6}}[ \t]+(\S[^\n]{{0,100}}?)[ \t]+"
            rf"(?:{vocabulary.jurisdiction_pattern})[ \t]+\d{{2}}-\d{{7}}[ \t]*$", re.M),
        ticker=re.compile(rf"(?<![\w$./-])([A-Z]{{1,5}}(?:\.[A-Z])?),?\s+"
                          rf"{vocabulary.exchange_pattern}"),
        release_line=re.compile(
            rf"(?<![\w&.'’-])({_NAME_WORD}(?:[ \t]+(?:&[ \t]+)?{_NAME_WORD}){{0,5}}),?[ \t]+"
            rf"today[ \t]+(?:{verb})\b"),
        suffixes=frozenset(vocabulary.legal_suffixes),
        annual=re.compile(
            rf"\b(?:fiscal\s+year|for\s+the\s+year)\s+ended\s*:?\s*({date})", re.I),
        quarterly=re.compile(rf"\bquarterly\s+period\s+ended\s*:?\s*({date})", re.I),
        event=re.compile(rf"\bDate\s+of\s+Report[^:]{{0,60}}:\s*({date})", re.I),
        event_above=re.compile(rf"({date})[ \t]*\n\s*\(?Date\s+of\s+Report\b", re.I),
        release_end=re.compile(rf"\bquarter\b[^.\n]{{0,40}}?\bended\s+({date})", re.I))


_GENERIC = {"company", "the company", "we", "us", "our", "registrant", "corporation",
            "parent", "issuer"}
# a title that is the file's name: the endings of the formats read ("report.html")
_FILE_ENDINGS = (".pdf", ".md", ".markdown", ".htm", ".html", ".xhtml", ".docx", ".txt")
_ABSTRACT = re.compile(r"^#{1,6}\s*abstract\b", re.I | re.M)


@dataclass(frozen=True)
class Card:
    """What a document is: ``title``; ``entity`` (the company a filing is by) and every
    ``names`` it goes by (short form, trading symbol, names it defines for itself:
    "3M", "MMM", "Amex"); ``kind`` ("10-K", "10-Q", "8-K", "earnings release", "paper", or
    empty); ``period`` (``"FY2022"``, ``"Q2 FY2023"``, an event's ISO date) with its
    ``fiscal_year``, ``quarter`` and ISO ``period_end``; ``summary`` (a paper's abstract or
    a document's top headings, shortened)."""

    title: str = ""
    entity: str = ""
    names: tuple[str, ...] = ()
    kind: str = ""
    period: str = ""
    fiscal_year: int | None = None
    quarter: int | None = None
    period_end: str = ""
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, as stored with the document and shown by ``documents``."""
        d = asdict(self)
        d["names"] = list(self.names)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Card:
        """Inverse of :meth:`to_dict`; unknown keys are ignored, wrong types dropped."""
        if not data:
            return cls()
        out: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in data:
                continue
            v = data[f.name]
            if f.name == "names":
                if isinstance(v, str):
                    v = [v]
                if isinstance(v, list | tuple):
                    out["names"] = tuple(str(x) for x in v if str(x).strip())
            elif f.name in ("fiscal_year", "quarter"):
                if isinstance(v, int) and not isinstance(v, bool):
                    out[f.name] = v
                elif isinstance(v, str) and v.strip().isdigit():
                    out[f.name] = int(v)
            elif v is not None:
                out[f.name] = str(v)
        return cls(**out)


#: The card fields a ``where`` filter and a user's metadata may name.
CARD_FIELDS = ("title", "entity", "names", "kind", "period", "fiscal_year", "quarter",
               "period_end", "summary")


def effective_card(card: Card, metadata: Mapping[str, Any], *,
                   vocabulary: Vocabulary = FILINGS) -> Card:
    """``card`` with the user's ``metadata`` fields of the same names in its place (the
    user knows better than a cover page). A metadata ``period`` such as ``"FY2021"`` or
    ``"Q2 2023"`` also sets the fiscal year and quarter; a metadata ``entity`` also names
    (its short form by ``vocabulary``'s legal suffixes)."""
    given = {k: metadata[k] for k in CARD_FIELDS if k in metadata}
    if not given:
        return card
    over = Card.from_dict(given)
    changes = {k: getattr(over, k) for k in given}
    if "period" in given and not ({"fiscal_year", "quarter"} & given.keys()):
        asked = asked_periods(over.period, vocabulary=vocabulary)
        target = asked.target
        changes["fiscal_year"] = target.year if target else None
        changes["quarter"] = target.quarter if target else None
        if "period_end" not in given:  # the cover's end date belongs to the cover's period
            changes["period_end"] = target.end.isoformat() if target and target.end else ""
    if "entity" in given and "names" not in given:
        changes["names"] = _names(over.entity, (), "", _rules(vocabulary))
    return replace(card, **changes)


def read_card(text: str, title: str = "", headings: Sequence[str] = (), *,
              vocabulary: Vocabulary = FILINGS) -> Card:
    """The card of a document whose Markdown is ``text`` (``title`` and top-level
    ``headings`` from its tree), read with ``vocabulary``'s forms and words."""
    r = _rules(vocabulary)
    head = _plain(text[:_HEAD_CHARS])
    kind = _kind(head, r)
    entity, ticker = _entity(head, kind, r)
    period = _period(head, text, kind, r)
    # a combined report's other registrants ("Pacific Gas and Electric Company" on PG&E
    # Corporation's cover) are names the filing goes by too
    others = [n for m in list(r.registrant_row.finditer(head))[1:_REGISTRANTS]
              if kind and (n := _clean_name(m.group(1)))]
    extra = (*((ticker,) if ticker else ()),
             *(x for n in others for x in (n, short_name(n, vocabulary=vocabulary))))
    names = _names(entity, extra, text, r)
    summary = _abstract(text) if _ABSTRACT.search(text[:_HEAD_CHARS]) else ""
    if summary and not kind:
        kind = r.paper
    if not summary:
        summary = "; ".join(h for h in headings[:8] if h)[:300]
    return Card(
        title=entity if kind and entity and _is_cover_title(title) else title,
        entity=entity, names=names, kind=kind,
        period=_label(period, kind, r), fiscal_year=period.year if period else None,
        quarter=period.quarter if period else None,
        period_end=period.end.isoformat() if period and period.end else "", summary=summary)


def short_name(name: str, *, vocabulary: Vocabulary = FILINGS) -> str:
    """A company's name without "The", a web suffix and its legal suffixes (``vocabulary``'s:
    "The Boeing Company" -> "Boeing", "PepsiCo, Inc." -> "PepsiCo", "Amazon.com, Inc." ->
    "Amazon", "JPMorgan Chase & Co." -> "JPMorgan Chase"); the name itself when nothing is
    left."""
    suffixes = _rules(vocabulary).suffixes
    words = re.sub(r"[.,]", " ", re.sub(r"\.com\b", "", name, flags=re.I)).split()
    if words and words[0].lower() == "the":
        words = words[1:]
    while len(words) > 1 and words[-1].lower().replace(".", "") in suffixes:
        words = words[:-1]
    return " ".join(words) or name


# --- the rules ------------------------------------------------------------------------------
def _plain(text: str) -> str:
    """Markdown and HTML markup out, one space between words, lines kept."""
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"[*#|`>]+|\[[ xX]\]", " ", text)
    return "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines())


def _kind(head: str, r: _Rules) -> str:
    lead = head[:4000]
    m = r.form.search(head)  # "FORM 10-K" in capitals is the cover's, wherever it is
    if m:
        return m.group(1).upper()
    if r.release and r.earnings.search(head[:1500]) and (
            _DATELINE.search(head[:6000]) or r.release_line.search(head[:6000])
            or r.vocabulary.release_header_pattern.search(head[:600])):
        return r.release
    for phrase, form in r.vocabulary.cover_phrases:
        if phrase in lead:
            return form
    return ""


def _entity(head: str, kind: str, r: _Rules) -> tuple[str, str]:
    """The registrant's name and trading symbol, or ``("", "")`` for a non-filing."""
    ticker = ""
    m = r.ticker.search(head)
    if m and kind:
        ticker = m.group(1)
    m = _REGISTRANT.search(head)
    if m:
        before = head[:m.start()].rstrip()
        line = before.rsplit("\n", 1)[-1]
        line = re.split(r"_{3,}|" + _FILE_NUMBER.pattern, line, flags=re.I)[-1].strip()
        if not line:
            lines = [x for x in before.split("\n") if x.strip()]
            line = lines[-1].strip() if lines else ""
        name = _clean_name(line)
        if name:
            return name, ticker
    m = r.registrant_row.search(head) if kind and kind != r.release else None
    if m:
        name = _clean_name(m.group(1))
        if name:
            return name, ticker
    if kind and kind != r.release:
        m = _FILE_NUMBER.search(head)
        if m:
            after = [x.strip() for x in head[m.end():].split("\n") if x.strip()][:1]
            caps = re.match(r"(?:[A-Z0-9&][A-Z0-9&.,'’-]*(?:\s+|$))+", after[0]) if after else None
            line = caps.group(0) if caps and sum(c.isalpha() for c in caps.group(0)) > 1 else (
                after[0] if after else "")
            if line and _looks_like_name(line):
                return _clean_name(line), ticker
    if r.release and kind == r.release:
        m = _DATELINE.search(head[:6000])
        if m:
            name = _clean_name(re.split(r"\s[-–—]\s|\b20\d\d\b", m.group(1))[-1])
            return name, m.group(2)
        m = r.release_line.search(head[:6000])
        if m:
            return _clean_name(m.group(1)), ""
    return "", ""


def _looks_like_name(line: str) -> bool:
    letters = [c for c in line if c.isalpha()]
    return 2 <= len(line) <= 80 and bool(letters) and (
        sum(c.isupper() for c in letters) / len(letters) > 0.6)


def _clean_name(text: str) -> str:
    """A name as a cover prints it, one space between words, one apostrophe (’ is '), and
    a name in capitals in its usual case ("PG&E CORPORATION" -> "PG&E Corporation",
    "McDONALD'S CORPORATION" -> "McDonald's Corporation")."""
    name = re.sub(r"\s+", " ", text).strip(" ,;:-_\\").replace("’", "'")
    if not name or len(name) > 100:
        return ""
    letters = [c for c in name if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) / len(letters) > 0.8:
        name = " ".join(w.lower() if i and w.lower() in _LOWER_WORDS else _word_case(w)
                        for i, w in enumerate(name.split()))
    return name


_LOWER_WORDS = frozenset({"and", "of", "the", "for", "in", "on"})  # inside a cased name


def _word_case(word: str) -> str:
    """One word of a name in capitals, in its usual case: legal abbreviations, words with
    a digit or an ampersand as printed; "Mc" and "Mac" keep their capital after them."""
    if (len(word) <= 3 and word in ("PLC", "LLC", "AG", "SE", "NV", "SA")) or any(
            c.isdigit() or c == "&" for c in word):
        return word
    for prefix in ("Mc", "Mac"):
        rest = word[len(prefix):]
        if word.startswith(prefix) and len(rest) > 1 and rest.isupper():
            return prefix + rest.capitalize()
    return word.capitalize() if word.isupper() else word


def _period(head: str, text: str, kind: str, r: _Rules) -> Period | None:
    m = r.annual.search(head)
    if m and not _dated_within_year(kind, r):
        end = parse_date(m.group(1), vocabulary=r.vocabulary)
        return Period(_own_year(end, text), None, end) if end else None
    m = r.quarterly.search(head)
    if m and (end := parse_date(m.group(1), vocabulary=r.vocabulary)) is not None:
        months = _MONTHS_ENDED.search(text[:_QUARTER_CHARS])
        quarter = {"six": 2, "nine": 3}[months.group(1).lower()] if months else 1
        # a fiscal year ending in January or February named as the filing names it
        # (Walmart's quarter ended July 28, 2023 is in "fiscal 2024", Target's in "2023")
        return Period(_own_year(year_end_of(end, quarter), text), quarter, end)
    m = r.event.search(head) or r.event_above.search(head)
    if m and (when := parse_date(m.group(1), vocabulary=r.vocabulary)) is not None:
        return Period(when.year, None, when)
    if r.release and kind == r.release:
        m = _EARNINGS_PERIOD.search(head[:3000])
        if m:
            q = int(m.group(2)) if m.group(2) else ("first", "second", "third",
                                                     "fourth").index(m.group(1).lower()) + 1
            ended = r.release_end.search(head[:3000])
            end = parse_date(ended.group(1), vocabulary=r.vocabulary) if ended else None
            return Period(int(m.group(3)), q, end)
    return None


def _dated_within_year(kind: str, r: _Rules) -> bool:
    """Whether a filing of ``kind`` reports less than a fiscal year (a quarter, an event, a
    release), so its cover's "fiscal year ended" is not its period."""
    form = r.vocabulary.form(kind)
    return form is not None and form.nature in ("quarterly", "current")


def _own_year(end: date, text: str) -> int:
    """The name of the fiscal year ending on ``end`` as the filing itself writes it, where
    the calendar leaves it open (a year ending in January or February: Walmart's ending
    January 31, 2023 is "fiscal 2023", Target's ending January 28, 2023 "fiscal 2022");
    :func:`~.periods.fiscal_year`'s rule where the text does not say."""
    if end.month > 2:
        return fiscal_year(end)
    window = text[:_QUARTER_CHARS * 4]
    said = {y: len(re.findall(rf"\bfiscal\s+(?:year\s+)?{y}\b", window, re.I))
            for y in (end.year, end.year - 1)}
    if said[end.year] != said[end.year - 1]:
        return max(said, key=lambda y: said[y])
    return fiscal_year(end)


def _label(period: Period | None, kind: str, r: _Rules) -> str:
    if period is None:
        return ""
    if r.vocabulary.event_dated(kind) and period.end is not None:
        return period.end.isoformat()
    return period.label


def _names(entity: str, extra: Sequence[str], text: str, r: _Rules | None = None
           ) -> tuple[str, ...]:
    """Every name the entity goes by: itself, its short form, ``extra`` (a trading symbol)
    and names the document defines for it ("American Express Company (“Amex”)") that
    abbreviate it."""
    r = r or _rules(FILINGS)
    if not entity:
        return tuple(extra)
    short = short_name(entity, vocabulary=r.vocabulary)
    names = [entity, short, *extra]
    first = short.split()[0]
    if " " in short and len(first) >= 4 and first.isalpha() and count_tokens(first.lower()) > 1:
        # A word too rare for the tokenizer's 30,000-word vocabulary that starts the name
        # names the company alone ("Costco", "Verizon", "JPMorgan"); "American", "General"
        # or "Best" do not.
        names.append(first)
    if text:
        for form in {entity, short}:
            pat = re.escape(form).replace(r"\ ", r"\s+")
            for m in re.finditer(rf"{pat},?\s*\((?:the\s+)?[“\"]([^”\"]{{2,40}})[”\"]"
                                 rf"((?:\s*,?\s*(?:or\s+)?(?:the\s+)?[“\"][^”\"]{{2,40}}[”\"])*)",
                                 text, re.I):
                quoted = [m.group(1), *re.findall(r"[“\"]([^”\"]{2,40})[”\"]", m.group(2))]
                names.extend(q.strip(" ,") for q in quoted if abbreviates(q.strip(" ,"), entity))
            # "Block, Inc. (f/k/a Square, Inc.)": the name it went by before
            for m in re.finditer(rf"{pat},?\s*\(\s*(?:{r.vocabulary.former_name_pattern})\s+"
                                 r"([^()\n]{2,60}?)\s*\)", text, re.I):
                former = _clean_name(m.group(1))
                if former:
                    names.extend((former, short_name(former, vocabulary=r.vocabulary)))
    seen: dict[str, str] = {}
    for n in names:
        if n and n.lower() not in _GENERIC:
            seen.setdefault(n.lower(), n)
    return tuple(seen.values())


def abbreviates(short: str, long: str) -> bool:
    """Whether ``short`` names the company ``long``: its leading words ("Acme" of "Acme
    Widgets, Inc."), or an abbreviation of it, whose letters appear in ``long`` in order,
    starting with its first letter (Schwartz and Hearst's test) and taking the initial of
    every word of its short form ("Amex" or "AMEX" of "American Express Company", not
    "EBITDA" or "Ames")."""
    if not short.strip() or short.lower() in _GENERIC:
        return False
    words = short_name(long).lower().split()
    given = short.lower().replace(",", " ").replace(".", " ").split()
    if given and given == words[:len(given)]:
        return True
    return _fits("".join(c for c in short.lower() if c.isalnum()), words)


def _fits(s: str, words: list[str]) -> bool:
    """Whether ``s`` is, word by word, each word's initial and some more of its letters.

    Memoised on (position in ``s``, word): at most ``len(s) * len(words)`` states, each
    trying the lengths of its word's part until one is not in order, so the cost is
    polynomial (the plain recursion was exponential in the number of words: a 10-word
    name took minutes)."""
    seen: dict[tuple[int, int], bool] = {}

    def fits(i: int, j: int) -> bool:
        if j == len(words) or i == len(s):
            return j == len(words) and i == len(s)
        key = (i, j)
        if key not in seen:
            w = words[j]
            seen[key] = s[i] == w[0] and any(
                fits(i + 1 + k, j + 1)
                for k in _in_order_lengths(s, i + 1, w[1:]))
        return seen[key]

    return fits(0, 0)


def _in_order_lengths(s: str, start: int, whole: str) -> range:
    """The lengths ``k`` for which ``s[start:start + k]`` is a subsequence of ``whole``:
    every length up to the longest such prefix (a longer one never is if a shorter is not)."""
    it = iter(whole)
    k = 0
    while start + k < len(s) and s[start + k] in it:
        k += 1
    return range(k + 1)


def _abstract(text: str) -> str:
    m = _ABSTRACT.search(text)
    if m is None:
        return ""
    body = text[m.end():m.end() + 2000].split("\n#", 1)[0]
    return re.sub(r"\s+", " ", body).strip()[:300]


def _is_cover_title(title: str) -> bool:
    """A title that is the filing's cover line ("UNITED STATES SECURITIES AND EXCHANGE
    COMMISSION", "Table of Contents") rather than its name."""
    t = title.lower()
    return not t or "securities and exchange commission" in t or t.startswith(
        ("table of contents", "form ", "introduction")) or t.endswith(_FILE_ENDINGS)


# --- filters --------------------------------------------------------------------------------
#: Kinds a filter or a question may name by their common words (the vocabulary's forms).
KIND_WORDS = FILINGS.kind_words


def card_matches(card: Card, key: str, value: str, *,
                 vocabulary: Vocabulary = FILINGS) -> bool:
    """Whether ``card`` holds ``key=value`` (a ``where`` filter on a card field): ``entity``
    and ``names`` match any name the entity goes by, case aside; ``kind`` its kind or a
    common word for it ("annual report" for a 10-K); ``period`` the same fiscal year (and
    quarter, when the value names one) or the same end date; other fields their text."""
    want = value.strip().lower()
    if key in ("entity", "names"):
        names = {n.lower() for n in (card.entity, *card.names) if n}
        return want in names or short_name(value, vocabulary=vocabulary).lower() in names
    if key == "kind":
        return want == card.kind.lower() or want in vocabulary.kind_words.get(card.kind, ())
    if key == "period":
        if want == card.period.lower():
            return True
        target = asked_periods(value, vocabulary=vocabulary).target
        if target is None:
            return False
        if target.end is not None and card.period_end:
            return target.end.isoformat() == card.period_end
        return card.fiscal_year == target.year and (
            target.quarter is None or card.quarter == target.quarter)
    got = getattr(card, key, None)
    return got is not None and str(got).lower() == want
