"""Reporting periods: what a filing covers and what a question asks about.

A :class:`Period` is a fiscal year, optionally one of its quarters, and where known the
exact date it ends (or, for a current report, the date of its event). Fiscal years are
named by the calendar year they end in, except a year ending in January, which is named
by the year before ("fiscal 2021" ended January 29, 2022), as retailers report.

The same reader serves both sides, so that "FY2022", "fiscal 2022", "Q2 of FY2023",
"second quarter of 2023", "as of December 31, 2021" and a bare "2022" in a question meet
"For the fiscal year ended December 31, 2022" or "For the quarterly period ended June 26,
2022" on a cover page (:mod:`.cards`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from ..vocab.filings import FILINGS, Vocabulary

__all__ = ["Asked", "Dates", "Period", "asked_periods", "date_pattern", "dates_of",
           "fiscal_year", "parse_date", "quarter_period", "year_end_of"]


def date_pattern(month: str) -> str:
    """A date with months written by ``month`` (a pattern): "December 31, 2022", "Dec. 31
    2022", "31 December 2022", "2022-12-31" or "12/31/2022"."""
    return (rf"(?:{month}\s+\d{{1,2}},?\s+(?:19|20)\d\d|\d{{1,2}}\s+{month}\s+(?:19|20)\d\d"
            r"|(?:19|20)\d\d-\d\d-\d\d|\d{1,2}/\d{1,2}/(?:19|20)\d\d)")


@dataclass(frozen=True, eq=False)
class Dates:
    """The patterns that read dates and periods with one vocabulary's month names and
    report words, compiled once per vocabulary (:func:`dates_of`): ``date`` the pattern of
    a date (for a caller's own patterns), ``months`` each month name and abbreviation's
    number."""

    vocabulary: Vocabulary
    date: str
    months: dict[str, int]
    date_re: re.Pattern[str]
    month_year: re.Pattern[str]
    report: re.Pattern[str]


@lru_cache(maxsize=8)
def dates_of(vocabulary: Vocabulary) -> Dates:
    """:class:`Dates` of ``vocabulary``."""
    date = date_pattern(vocabulary.month_pattern)
    # ... a report, a filing, or an annual or quarterly form as a question writes it
    reports = sorted({w.lower() for f in vocabulary.forms
                      if f.nature in ("annual", "quarterly") for w in (f.name, *f.written)},
                     key=lambda w: (-len(w), w))
    return Dates(
        vocabulary, date, vocabulary.month_numbers, re.compile(date, re.I),
        re.compile(rf"\b({vocabulary.month_pattern})\s+(?:of\s+)?((?:19|20)\d\d)\b", re.I),
        re.compile(r"^[^.?!;]{0,30}?\b(?:report|filing|statements?|results|release|"
                   + "|".join(r"\s+".join(map(re.escape, w.split())) for w in reports)
                   + r")\b", re.I))

_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2,
             "3rd": 3, "4th": 4}


@dataclass(frozen=True)
class Period:
    """A fiscal ``year``, its ``quarter`` (1-4, ``None`` for the whole year) and the date
    it ends or its event happened (``end``, ``None`` when not stated)."""

    year: int
    quarter: int | None = None
    end: date | None = None
    #: the first day of a span the question names ("in March 2023": March 1 to 31), with
    #: ``end`` its last; ``None`` for a single date or a fiscal period
    start: date | None = None

    @property
    def label(self) -> str:
        """``"FY2022"`` or ``"Q2 FY2023"`` (a current report's card shows its date instead)."""
        if self.quarter:
            return f"Q{self.quarter} FY{self.year}"
        return f"FY{self.year}"


def parse_date(text: str, *, vocabulary: Vocabulary = FILINGS) -> date | None:
    """The first date written in ``text`` (see :func:`date_pattern`; months as
    ``vocabulary`` names them), or ``None``."""
    rules = dates_of(vocabulary)
    m = rules.date_re.search(text)
    if m is None:
        return None
    s = m.group(0).lower().replace(",", " ").replace(".", " ")
    try:
        if re.fullmatch(r"\d{4}-\d\d-\d\d", s.strip()):
            y, mo, d = (int(x) for x in s.strip().split("-"))
            return date(y, mo, d)
        if "/" in s:  # US order: month/day/year
            mo, d, y = (int(x) for x in s.strip().split("/"))
            return date(y, mo, d)
        parts = s.split()
        if parts[0].isdigit():  # 31 December 2022
            d, mon, y = int(parts[0]), parts[1], int(parts[2])
        else:
            mon, d, y = parts[0], int(parts[1]), int(parts[2])
        return date(y, rules.months[mon[:4] if mon[:4] == "sept" else mon[:3]], d)
    except (ValueError, KeyError, IndexError):
        return None


def fiscal_year(end: date) -> int:
    """The name of the fiscal year that ends on ``end`` (January ends name the year before)."""
    return end.year - 1 if end.month == 1 else end.year


def quarter_period(end: date, quarter: int) -> Period:
    """The period of fiscal ``quarter`` ending on ``end``: its fiscal year is the one that
    ends ``4 - quarter`` quarters later (a Q2 ending December 31, 2022 of a June year is
    Q2 FY2023), named by :func:`fiscal_year`."""
    return Period(fiscal_year(year_end_of(end, quarter)), quarter, end)


def year_end_of(end: date, quarter: int) -> date:
    """The first day of the month in which the fiscal year of ``quarter`` (ending on
    ``end``) ends: ``4 - quarter`` quarters later."""
    month = end.month + 3 * (4 - quarter)
    return date(end.year + (month - 1) // 12, (month - 1) % 12 + 1, 1)


@dataclass(frozen=True)
class Asked:
    """The periods a question names: the fiscal ``years`` (``FY2021``, ``fiscal 2021``,
    bare ``2021``), a ``quarter`` of the latest of them, and exact ``dates``."""

    years: tuple[int, ...] = ()
    quarter: int | None = None
    dates: tuple[date, ...] = ()
    anchor: Period | None = None
    #: the year written with the quarter ("fourth-quarter 2022"), ``None`` when none was
    quarter_year: int | None = None
    #: months named with their year and no day ("in March 2023"), ``(year, month)``
    months: tuple[tuple[int, int], ...] = ()
    #: the fiscal years a question spanning periods needs, oldest first: a range filled in
    #: ("FY2019 - FY2021", "from 2018 through 2020"), "three-year" or "past five years"
    #: counted back from the latest year named ("the next five years" is no span),
    #: "year-over-year" or "prior year" adding the year before, several years or dates
    #: named; ``()`` when it asks about one period
    span: tuple[int, ...] = ()

    @property
    def target(self) -> Period | None:
        """The period the question is about: the one it is anchored to ("As of FY2020, what
        does it expect to pay in 2023?" asks the FY2020 report about a later year), else
        the latest one it names (a filing reports the years before it too, so "FY2019 -
        FY2021" is answered by the FY2021 one)."""
        if self.anchor is not None:
            return self.anchor
        if self.dates and (not self.years or fiscal_year(max(self.dates)) >= max(self.years)):
            d = max(self.dates)
            return Period(d.year, None, d)
        if self.months and not self.dates and max(self.months)[0] >= max(self.years, default=0):
            y, m = max(self.months)
            return Period(y, None, _month_end(y, m), date(y, m, 1))
        if not self.years:
            return None
        latest = max(self.years)
        # "2023 outlook with its fourth-quarter 2022 results": the quarter is 2022's
        quarter = self.quarter if self.quarter_year in (None, latest) else None
        return Period(latest, quarter)

    def __bool__(self) -> bool:
        return bool(self.years or self.dates or self.months)


def _month_end(year: int, month: int) -> date:
    first_next = date(year + month // 12, month % 12 + 1, 1)
    return date.fromordinal(first_next.toordinal() - 1)


_FY = re.compile(r"\b(?:fy|fiscal(?:\s+year)?)\s*'?((?:19|20)?\d\d)\b", re.I)
# A quarter as analysts write it, with its year if written: "Q2 2023", "Q22023", "Q2'23",
# "2Q23", "3Q FY24", "q1-2023", "second quarter of fiscal 2023"; a half ("1H 2023", "H2 FY22",
# "first half of 2023") or "six"/"nine months" asks for the report that ends it (a half is
# the second or fourth quarter's); those count only with their year written.
_QUARTER = re.compile(
    r"\b(?:q([1-4])|([1-4])q|(first|second|third|fourth|1st|2nd|3rd|4th)[\s-]+(?:fiscal\s+)?"
    r"quarter|h([12])|([12])h|(first|second)[\s-]+half|(six|nine)[\s-]+months)"
    r"(?:[\s/-]*(?:of\s+)?(?:the\s+)?(?:fiscal\s+year\s+|fiscal\s+|fy\s*)?'?"
    r"((?:19|20)\d\d|\d\d)\b)?",
    re.I)
_YEAR_GROUP = 8
_HALVES = {"1": 2, "2": 4, "first": 2, "second": 4, "six": 2, "nine": 3}


def _quarter_of(m: re.Match[str]) -> int | None:
    """The quarter a :data:`_QUARTER` match asks for (a half or "months" form only when its
    year is written)."""
    q = m.group(1) or m.group(2)
    if q:
        return int(q)
    if m.group(3):
        return _ORDINALS[m.group(3).lower()]
    if not m.group(_YEAR_GROUP):
        return None
    half = m.group(4) or m.group(5) or m.group(6) or m.group(7)
    return _HALVES[half.lower()]
_YEAR = re.compile(r"(?<![\d$.,-])((?:19|20)\d\d)(?![\d,.]?\d|\s?%)")
# a range of years: "2019-2021", "FY2019 - FY2021", "from 2018 through 2020", "2019 to 2021"
_RANGE = re.compile(r"(?<![\d$.,-])(?:fy\s*'?|fiscal\s+)?((?:19|20)\d\d)\s*"
                    r"(?:-|–|—|to|through|thru)\s*(?:fy\s*'?|fiscal\s+)?((?:19|20)\d\d)"
                    r"(?![\d,.]?\d|\s?%)", re.I)
_COUNTS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
           "nine": 9, "ten": 10}
# "three-year average", "3 year", "past five years", "last 3 fiscal years", "each of the
# three years"
_N_YEARS = re.compile(r"\b(next\s+|following\s+|coming\s+|upcoming\s+)?"
                      r"(two|three|four|five|six|seven|eight|nine|ten|[2-9]|10)[\s-]+"
                      r"(?:fiscal[\s-]+)?years?\b(?!\s+(?:senior\s+|term\s+|revolving\s+|credit\s+)?"
                      r"(?:notes?|bonds?|loans?|debentures?|facilit(?:y|ies)|term|agreements?|"
                      r"contracts?|leases?|warrant(?:y|ies)|treasur(?:y|ies)|swaps?|revolver|"
                      r"maturit(?:y|ies)|commitments?|guarantees?)\b)", re.I)
_PRIOR = re.compile(r"\b(?:year[\s-]+over[\s-]+year|yoy|y/y|prior[\s-]+(?:fiscal\s+)?year|"
                    r"previous[\s-]+(?:fiscal\s+)?year|preceding\s+year|a\s+year\s+earlier)\b",
                    re.I)
_MAX_SPAN = 30  # years a range may fill
# a month and its year with no day: "March 2023", "in Jan. 2023", "august of 2023"


def asked_periods(question: str, *, vocabulary: Vocabulary = FILINGS) -> Asked:
    """The periods ``question`` names (:class:`Asked`); empty when it names none. Amounts
    ("$2,021"), percentages and other numbers are not years. Months and the forms a
    question names a report by are ``vocabulary``'s."""
    rules = dates_of(vocabulary)
    years: list[int] = []
    dates = []
    rest = question
    for m in rules.date_re.finditer(question):
        d = parse_date(m.group(0), vocabulary=vocabulary)
        if d is not None:
            dates.append(d)
    rest = rules.date_re.sub(" ", rest)
    months = []
    for m in rules.month_year.finditer(rest):
        mon = m.group(1).lower().rstrip(".")
        number = rules.months.get(mon[:4] if mon[:4] == "sept" else mon[:3])
        if number is not None:
            months.append((int(m.group(2)), number))
    ranged: set[int] = set()
    for m in _RANGE.finditer(rest):
        lo, hi = sorted((int(m.group(1)), int(m.group(2))))
        years += [lo, hi]
        if hi - lo < _MAX_SPAN:
            ranged.update(range(lo, hi + 1))
    rest = _RANGE.sub(" ", rest)
    quarter = quarter_year = None
    for m in _QUARTER.finditer(rest):
        q = _quarter_of(m)
        if q is None:
            continue
        quarter, quarter_year = q, None
        if m.group(_YEAR_GROUP):
            quarter_year = _full_year(m.group(_YEAR_GROUP))
            years.append(quarter_year)
    for m in _FY.finditer(rest):
        years.append(_full_year(m.group(1)))
    rest = _FY.sub(" ", rest)
    years.extend(int(m.group(1)) for m in _YEAR.finditer(rest))
    return Asked(tuple(sorted(set(years))), quarter if years else None, tuple(sorted(set(dates))),
                 _anchor(question, rules), quarter_year if years else None,
                 tuple(sorted(set(months))),
                 _span(question, set(years) | ranged | {fiscal_year(d) for d in dates}))


def _span(question: str, years: set[int]) -> tuple[int, ...]:
    """:attr:`Asked.span` of a question that names ``years`` (ranges filled in)."""
    if not years:
        return ()
    latest = max(years)
    out = set(years)
    for m in _N_YEARS.finditer(question):
        if m.group(1):  # "the next five years": ahead of the period, not a span of it
            continue
        word = m.group(2).lower()
        n = _COUNTS.get(word) or int(word)
        out.update(range(latest - n + 1, latest + 1))
    if _PRIOR.search(question):
        out.add(latest - 1)
    return tuple(sorted(out)) if len(out) > 1 else ()


# "as of FY2020", "as at December 31, 2021": the period a question's figures are taken at;
# "in its FY2020 report", "according to the 2019 10-K": the filing it names by its period
_AS_OF = re.compile(r"\bas\s+(?:of|at)\s+", re.I)
_IN_REPORT = re.compile(r"\b(?:in|per|according\s+to|from|with)\s+(?:its|the|their)\s+",
                        re.I)
_ANCHOR_CHARS = 40  # a period written within this many characters after the phrase


def _anchor(question: str, rules: Dates) -> Period | None:
    """The period a question is anchored to (see :attr:`Asked.target`), or ``None``: the
    first phrase that writes one. Each window read is at most ``_ANCHOR_CHARS`` long."""
    spans = [(m.end(), False) for m in _AS_OF.finditer(question)]
    spans += [(m.end(), True) for m in _IN_REPORT.finditer(question)]
    for start, report in sorted(spans):
        window = question[start:start + _ANCHOR_CHARS]
        if report and not rules.report.match(window):
            continue
        m = rules.date_re.match(window)
        if m is not None and (d := parse_date(m.group(0), vocabulary=rules.vocabulary)
                              ) is not None:
            return Period(d.year, None, d)
        head = rules.date_re.sub(" ", window)
        quarter = _QUARTER.match(head)
        fy = _FY.match(head)
        year = _YEAR.match(head)
        if quarter and quarter.group(_YEAR_GROUP) and (q := _quarter_of(quarter)):
            return Period(_full_year(quarter.group(_YEAR_GROUP)), q)
        if fy:
            return Period(_full_year(fy.group(1)))
        if year:
            return Period(int(year.group(1)))
    return None


def _full_year(text: str) -> int:
    y = int(text)
    return y if y >= 100 else 2000 + y
