"""benchmarks/quality/bench_concepts.py: questions split by what they say, and the tally it
reports."""

from __future__ import annotations

from benchmarks.quality.bench_concepts import KINDS, markdown, question_kind, tally


def test_questions_are_split_by_what_they_name() -> None:
    assert question_kind("Using the cash flow statement, how much capex?") == "names a statement"
    assert question_kind("What was the largest liability in the Balance Sheet?") == (
        "names a statement")
    assert question_kind("Is the company's quick ratio healthy?") == "names a concept"
    assert question_kind("Who are the primary customers of Boeing?") == "needs a note"
    assert question_kind("What did 3M acquire in 2022?") == "needs a note"
    # spanning periods comes first, even with a statement named
    assert question_kind("Using the income statement, the FY2019 - FY2021 average margin?") == (
        "spans periods")
    assert question_kind("How does the attention layer work?") == "other"


def test_the_written_questions_are_in_the_dataset_format_and_of_the_two_new_kinds() -> None:
    import json
    from pathlib import Path

    rows = [json.loads(line) for line in (Path(__file__).parents[2] / "benchmarks" / "questions"
                                          / "financebench-dev.jsonl").read_text().splitlines()]
    assert len(rows) == 10 and all(r["meta"]["written"] for r in rows)
    assert {question_kind(r["question"]) for r in rows} == {"needs a note", "spans periods"}
    assert all(r["meta"]["kind"] == question_kind(r["question"]) for r in rows)


def test_the_tally_counts_hits_per_kind_and_skips_questions_without_gold() -> None:
    rows = [{"scope": "per-doc", "method": m, "question_id": q, "budget": 500, "any_hit": hit}
            for m, q, hit in (("proxy-pointer-no-vocabulary", "a", False),
                              ("proxy-pointer", "a", True),
                              ("proxy-pointer-no-vocabulary", "b", True),
                              ("proxy-pointer", "b", True),
                              ("proxy-pointer", "c", None))]
    kinds = {"a": "names a concept", "b": "other", "c": "other"}
    got = tally(rows, kinds)
    assert got["per-doc"]["proxy-pointer"] == {"names a concept": {"500": [1, 1]},
                                               "other": {"500": [1, 1]}}
    text = markdown({"set": {"budgets": [500], "tally": got, "kinds": kinds, "written": ["b"]}})
    assert "| per-doc | names a concept | 1 | 0 | 0 → 1 |" in text
    assert "| per-doc | other | 1 | 1 | 1 → 1 |" in text
    assert set(KINDS) == {"spans periods", "names a statement", "needs a note",
                          "names a concept", "other"}
