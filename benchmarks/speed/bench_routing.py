"""What routing costs per question as a shelf grows (search/routing.py).

A :class:`~proxy_pointer.search.routing.Shelf` is built once per view and generation (timed
apart), then each question is routed. A synthetic shelf of filings: ``companies`` companies
with five annual reports and three quarterly reports each (their cards only: routing reads
nothing else), and questions that
name a company and a period, a company only, a period only, or neither. Reports the median
and 95th-percentile milliseconds of :func:`~proxy_pointer.search.routing.route` per
question at each size, and the share routed to the right document (a check, not a tuned
number: the shelf is generated to be unambiguous).

    python -m benchmarks.speed.bench_routing [--sizes 100 1000 5000] \
        [--out-dir benchmarks/results/routing]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from proxy_pointer.parse.cards import Card
from proxy_pointer.search.routing import Shelf

_SYLLABLES = "ka lo mi ter van sol dra gen or bel tri mon qua zen fal rix ped cor lum nor".split()


def _shelf(companies: int, rng: random.Random) -> dict[str, Card]:
    cards: dict[str, Card] = {}
    names: set[str] = set()
    while len(names) < companies:
        names.add("".join(rng.choice(_SYLLABLES) for _ in range(3)).capitalize())
    for n, name in enumerate(sorted(names)):
        entity, symbol = f"{name} Corporation", f"X{n:04d}"[:5]
        for year in range(2018, 2023):
            cards[f"{name}-{year}-10K"] = Card(entity, entity, (entity, name, symbol), "10-K",
                                               f"FY{year}", year, None, f"{year}-12-31")
        for q in (1, 2, 3):
            cards[f"{name}-2023-Q{q}"] = Card(entity, entity, (entity, name, symbol), "10-Q",
                                              f"Q{q} FY2023", 2023, q, f"2023-{3 * q:02d}-30")
    return cards


def _questions(cards: dict[str, Card], rng: random.Random, n: int) -> list[tuple[str, str]]:
    docs = sorted(d for d in cards if d.endswith("10K"))
    out = []
    for i in range(n):
        d = rng.choice(docs)
        c = cards[d]
        name = c.names[1]
        shape = i % 4
        if shape == 0:
            out.append((f"What was {name}'s FY{c.fiscal_year} capital expenditure?", d))
        elif shape == 1:
            out.append((f"Is {name}'s business cyclical?", ""))
        elif shape == 2:
            out.append((f"What was revenue growth in FY{c.fiscal_year}?", ""))
        else:
            out.append(("How is goodwill tested for impairment?", ""))
    return out


def run(sizes: list[int], questions: int = 200) -> list[dict]:
    rows = []
    for companies in sizes:
        rng = random.Random(companies)
        cards = _shelf(companies, rng)
        qs = _questions(cards, rng, questions)
        t = time.perf_counter()
        shelf = Shelf(cards)  # once per view and generation, as the retriever keeps it
        build_ms = (time.perf_counter() - t) * 1000
        times, right, asked = [], 0, 0
        for q, want in qs:
            t = time.perf_counter()
            r = shelf.route(q)
            times.append((time.perf_counter() - t) * 1000)
            if want:
                asked += 1
                right += r.documents == (want,)
        times.sort()
        rows.append({"companies": companies, "documents": len(cards), "questions": len(qs),
                     "shelf_build_ms": round(build_ms, 1),
                     "p50_ms": round(statistics.median(times), 3),
                     "p95_ms": round(times[int(0.95 * (len(times) - 1))], 3),
                     "routed_right": f"{right}/{asked}"})
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--out-dir", default="benchmarks/results/routing")
    args = ap.parse_args()
    rows = run(args.sizes, args.questions)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "routing.json").write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    lines = ["# Routing cost per question", "",
             "Synthetic shelves (each company: five 10-Ks, three 10-Qs); a quarter of the "
             "questions name a company and a year, a quarter a company only, a quarter a "
             "year only, a quarter neither. `Shelf.route()` alone; measured on 2 cores beside "
             "other jobs.", "",
             "| companies | documents | shelf built once, ms | p50 ms | p95 ms | "
             "company+year routed right |", "| --- | --- | --- | --- | --- | --- |"]
    lines += [f"| {r['companies']} | {r['documents']} | {r['shelf_build_ms']} | {r['p50_ms']} "
              f"| {r['p95_ms']} | {r['routed_right']} |" for r in rows]
    (out / "routing.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
