"""Which of the years a question spans the context holds, and which filing holds the rest.

A question that spans periods ("the FY2017 - FY2021 average", "year-over-year", "each of
the three years") needs every one of them (:attr:`~proxy_pointer.parse.periods.Asked.span`).
A filing holds only some: a 10-K's income statement has three years, its balance sheet
two. :func:`coverage` says which asked years the handed sections print as periods (a
year on a line that prints two or more years: a statement's column header, "2022 vs.
2021", a multi-year table) and, for the rest, names the filings of the same company on the
shelf the request may search that report them (:attr:`~proxy_pointer.vocab.filings.Form.
years` of the form, counted back from its fiscal year), fewest first. It reads each
handed section's text once: time linear in the context.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..parse.cards import Card
from ..vocab.filings import FILINGS, Vocabulary

__all__ = ["Coverage", "coverage", "printed_years", "years_held"]

_YEAR = re.compile(r"(?<![\d$.,])((?:19|20)\d\d)(?![\d,.]?\d|\s?%)")


@dataclass(frozen=True)
class Coverage:
    """The ``asked`` fiscal years, those the context ``found`` as periods, and
    ``elsewhere``: ``(doc_id, years)`` of each filing on the shelf that reports asked years
    the context lacks. Empty (false) when the question spans no periods."""

    asked: tuple[int, ...] = ()
    found: tuple[int, ...] = ()
    elsewhere: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.asked)

    @property
    def missing(self) -> tuple[int, ...]:
        """The asked years the context does not hold."""
        return tuple(y for y in self.asked if y not in self.found)

    def to_dict(self) -> dict[str, Any]:
        return {"asked": list(self.asked), "found": list(self.found),
                "missing": list(self.missing),
                "elsewhere": [{"doc_id": d, "years": list(y)} for d, y in self.elsewhere]}

    def describe(self) -> str:
        """One line for people: "periods 2017-2021: the context holds 2019-2021; 2017,
        2018 are in X_2018_10K.pdf"."""
        if not self:
            return ""
        line = f"periods {_years(self.asked)}: "
        if not self.missing:
            return line + "the context holds every one"
        line += (f"the context holds {_years(self.found)}" if self.found
                 else "the context prints none of them as periods")
        line += "".join(f"; {_years(y)} in {d}" for d, y in self.elsewhere)
        held = {y for _, ys in self.elsewhere for y in ys}
        if rest := [y for y in self.missing if y not in held]:
            line += f"; no filing the request may search reports {_years(rest)}"
        return line


def _years(years: Sequence[int]) -> str:
    if len(years) > 2 and list(years) == list(range(years[0], years[-1] + 1)):
        return f"{years[0]}-{years[-1]}"
    return ", ".join(map(str, years))


def years_held(card: Card, vocabulary: Vocabulary = FILINGS) -> tuple[int, ...]:
    """The fiscal years a filing reports: its own and its form's comparatives (the form's
    ``years`` in ``vocabulary``)."""
    if card.fiscal_year is None:
        return ()
    form = vocabulary.form(card.kind)
    n = form.years if form is not None else 1
    return tuple(range(card.fiscal_year - n + 1, card.fiscal_year + 1))


def printed_years(texts: Iterable[str]) -> set[int]:
    """The years printed as periods in ``texts``: on a line that prints two or more."""
    out: set[int] = set()
    for text in texts:
        for line in text.splitlines():
            found = {int(m.group(1)) for m in _YEAR.finditer(line)}
            if len(found) > 1:
                out |= found
    return out


def coverage(span: Sequence[int], texts: Iterable[str], documents: Sequence[str],
             family: Mapping[str, Card], vocabulary: Vocabulary = FILINGS) -> Coverage:
    """:class:`Coverage` of the asked years ``span`` by the handed ``texts`` (from
    ``documents``), naming filings of ``family`` (the same company's, on the shelf) for the
    years missing; ``family`` never includes a document the request may not search."""
    if not span:
        return Coverage()
    found = printed_years(texts) & set(span)
    missing = set(span) - found
    elsewhere: list[tuple[str, tuple[int, ...]]] = []
    reports = {d: years_held(c, vocabulary) for d, c in family.items() if d not in documents}
    held = {d: set(years) & missing for d, years in reports.items()}
    while missing:
        # the filing reporting most of what is missing; then the longer form, the latest
        best = max(sorted(held), key=lambda d: (len(held[d] & missing), len(reports[d]),
                                                 family[d].fiscal_year or 0), default=None)
        if best is None or not held[best] & missing:
            break
        got = held.pop(best) & missing
        elsewhere.append((best, tuple(sorted(got))))
        missing -= got
    return Coverage(tuple(span), tuple(sorted(found)), tuple(elsewhere))
