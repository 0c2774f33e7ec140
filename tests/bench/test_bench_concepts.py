"""benchmarks/bench_concepts.py: questions split by what they say, and the tally it reports."""

from __future__ import annotations

from benchmarks.bench_concepts import KINDS, markdown, question_kind, tally


def test_questions_are_split_by_what_they_name() -> None:
    assert question_kind("Using the cash flow statement, how much capex?") == KINDS[0]
    assert question_kind("What was the largest liability in the Balance Sheet?") == KINDS[0]
    assert question_kind("Is the company's quick ratio healthy?") == KINDS[1]
    assert question_kind("Who are the primary customers of Boeing?") == KINDS[2]


def test_the_tally_counts_hits_per_kind_and_skips_questions_without_gold() -> None:
    rows = [{"scope": "per-doc", "method": m, "question_id": q, "budget": 500, "any_hit": hit}
            for m, q, hit in (("proxy-pointer-no-vocabulary", "a", False),
                              ("proxy-pointer", "a", True),
                              ("proxy-pointer-no-vocabulary", "b", True),
                              ("proxy-pointer", "b", True),
                              ("proxy-pointer", "c", None))]
    kinds = {"a": KINDS[1], "b": KINDS[2], "c": KINDS[2]}
    got = tally(rows, kinds)
    assert got["per-doc"]["proxy-pointer"] == {KINDS[1]: {"500": [1, 1]},
                                               KINDS[2]: {"500": [1, 1]}}
    text = markdown({"set": {"budgets": [500], "tally": got}})
    assert "| per-doc | names a concept | 1 | 0 → 1 |" in text
    assert "| per-doc | other | 1 | 1 → 1 |" in text
