"""Writes ``financebench-dev.jsonl`` beside it: questions of two kinds (needs a note, spans
periods) written for this project about the financebench-dev filings, each gold passage cut
from the PDF's own page text between two markers copied from the page.

Usage::

    python -m benchmarks.questions.cut_financebench_dev
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.harness.dataset import read_pdf_text

DOCS = Path(__file__).resolve().parents[3] / "shared" / "data" / "financebench-dev" / "docs"
OUT = Path(__file__).with_name("financebench-dev.jsonl")

# (id, document, question, kind, [(first words of the passage, its last words)])
Q = [
    ('pp-note-01', '3M_2022_10K.pdf',
     'What did 3M acquire in 2022?',
     'needs a note',
     [('NOTE 3. Acquisitions and Divestitures',
       'There were no acquisitions that closed during the year ended December 31, 2020.')]),
    ('pp-note-02', 'BOEING_2022_10K.pdf',
     "What are Boeing's scheduled debt maturities over the next five years as of "
     'FY2022?',
     'needs a note',
     [('Scheduled principal payments for debt',
       'Minimum finance lease obligations $69 $52 $41 $22 $5')]),
    ('pp-note-03', 'LOCKHEEDMARTIN_2021_10K.pdf',
     'What lawsuits is Lockheed Martin a party to in FY2021?',
     'needs a note',
     [('United States of America, ex rel. Patzer',
       'Eastern District of Wisconsin.')]),
    ('pp-note-04', 'PEPSICO_2022_10K.pdf',
     "What were PepsiCo's operating lease costs in 2022?",
     'needs a note',
     [('Components of lease cost are as follows:',
       'on sale-leaseback')]),
    ('pp-note-05', 'CORNING_2021_10K.pdf',
     "What was Corning's goodwill balance by segment at the end of 2021?",
     'needs a note',
     [('Display\nTechnologies\nOptical',
       '$ 616 $ 615 $ 2,421')]),
    ('pp-span-01', '3M_2022_10K.pdf',
     "How did 3M's net sales change from 2020 to 2022?",
     'spans periods',
     [('Consolidated Statement of Income\nYears ended December 31',
       'Operating income 6,539 7,369 7,161')]),
    ('pp-span-02', 'BOEING_2022_10K.pdf',
     "What were Boeing's average total revenues over FY2020 - FY2022?",
     'spans periods',
     [('Sales of products $55,893',
       'Cost of services (9,109) (9,283) (9,232)')]),
    ('pp-span-03', 'PEPSICO_2022_10K.pdf',
     "How did PepsiCo's net cash provided by operating activities change year-over-"
     'year in FY2022?',
     'spans periods',
     [('Income taxes payable 57 30 (159)',
       'Capital spending (5,207) (4,625) (4,240)')]),
    ('pp-span-04', 'LOCKHEEDMARTIN_2022Q2_10Q.pdf',
     "How did Lockheed Martin's cash and cash equivalents change between December 31, "
     '2021 and June 26, 2022?',
     'spans periods',
     [('Cash and cash equivalents $ 1,775 $ 3,604',
       'Total current assets 20,973 19,815')]),
    ('pp-span-06', 'CORNING_2021_10K.pdf',
     "How did Corning's goodwill change between 2019 and 2021?",
     'spans periods',
     [('Display\nTechnologies\nOptical',
       '$ 616 $ 615 $ 2,421')]),
]


def main() -> int:
    rows = []
    for qid, doc, question, kind, cuts in Q:
        text, starts = read_pdf_text(DOCS / doc)
        text = text.replace("\xa0", " ")
        evidence, pages = [], []
        for first, last in cuts:
            i = text.index(first)
            j = text.index(last, i) + len(last)
            evidence.append(text[i:j])
            pages.append(sum(1 for s in starts if s <= i))
        rows.append({"id": qid, "doc_id": doc, "question": question, "evidence": [evidence],
                     "sections": [], "answers": [],
                     "meta": {"kind": kind, "pages": pages,
                              "written": "by proxy-pointer's developers from the filing"}})
    OUT.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} questions to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
