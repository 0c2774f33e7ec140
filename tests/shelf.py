"""A shelf of document cards shaped like a real one, for the routing and document-choice
tests: one company's filings of several years and kinds, a renamed company, another
company, and documents that are not filings at all."""

from __future__ import annotations

from pathlib import Path

from proxy_pointer.parse.cards import Card


def filing(entity: str, names: tuple[str, ...], kind: str, fy: int, quarter: int | None = None,
            end: str = "") -> Card:
    period = f"Q{quarter} FY{fy}" if quarter else (end if kind == "8-K" else f"FY{fy}")
    return Card(title=entity, entity=entity, names=(entity, *names), kind=kind, period=period,
                fiscal_year=fy, quarter=quarter, period_end=end)


SHELF = {
    "acme-2020.pdf": filing("Acme Corp", ("Acme", "ACM"), "10-K", 2020, end="2020-12-31"),
    "acme-2021.pdf": filing("Acme Corp", ("Acme", "ACM"), "10-K", 2021, end="2021-12-31"),
    "acme-2022.pdf": filing("Acme Corp", ("Acme", "ACM"), "10-K", 2022, end="2022-12-31"),
    "acme-2022q2.pdf": filing("Acme Corp", ("Acme", "ACM"), "10-Q", 2022, 2, "2022-06-30"),
    "acme-2022q4-release.pdf": filing("Acme Corp", ("Acme", "ACM"), "earnings release", 2022, 4),
    "acme-8k.pdf": filing("Acme Corp", ("Acme", "ACM"), "8-K", 2023, end="2023-05-03"),
    # renamed: the trading symbol kept makes both names one entity
    "square-2020.pdf": filing("Square, Inc.", ("Square", "SQ"), "10-K", 2020, end="2020-12-31"),
    "block-2021.pdf": filing("Block, Inc.", ("Block", "SQ"), "10-K", 2021, end="2021-12-31"),
    "globex-2021.pdf": filing("Globex PLC", ("Globex", "GLBX"), "10-K", 2021, end="2021-06-30"),
    "paper.md": Card(title="Attention over widgets", kind="paper", summary="We study widgets."),
    "manual.md": Card(title="Pump handbook"),
}


def write_10ks(folder: Path, years: tuple[int, ...], columns: int = 3, extra: str = "") -> Path:
    """Acme Corp's 10-K of each of ``years`` as Markdown in ``folder/docs``: a cover the
    cards read, an income statement printing ``columns`` years, then ``extra``."""
    docs = folder / "docs"
    docs.mkdir()
    for year in years:
        shown = [year - i for i in range(columns)]
        (docs / f"acme_{year}_10k.md").write_text(
            f"# FORM 10-K\n\nANNUAL REPORT\n\nFor the fiscal year ended December 31, {year}\n\n"
            f"Acme Corp\n\n(Exact name of registrant as specified in its charter)\n\n"
            f"## Consolidated Statements of Operations\n\n"
            f"(Millions) {' '.join(map(str, shown))}\n"
            f"Net sales {' '.join(str(900 - 50 * i) for i in range(columns))}\n"
            f"Net income {' '.join(str(90 - 10 * i) for i in range(columns))}\n"
            + extra.format(year=year), encoding="utf-8")
    return docs
