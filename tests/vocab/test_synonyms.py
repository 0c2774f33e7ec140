"""Synonym files in the Solr / Elasticsearch format: parsed, applied to questions, refused with
the file and line when malformed, and linear in the question's length."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from proxy_pointer.vocab.phrases import MAX_WORDS
from proxy_pointer.vocab.synonyms import Synonyms, SynonymsError

RULES = """\
# HR words
PTO, paid time off, vacation
401k => retirement plan, 401k
WFH => remote work
comma\\, inside, with comma
"""


def test_equivalents_add_the_others_and_explicit_rules_replace() -> None:
    syn = Synonyms.parse(RULES, "hr.txt")
    assert len(syn) == 4
    text, applied = syn.apply("How much PTO do new staff get?")
    assert text == "How much PTO do new staff get? (paid time off; vacation)"
    assert [(a.written, a.added, a.replaced) for a in applied] == [
        ("PTO", ("paid time off", "vacation"), False)]
    text, _ = syn.apply("Can I wfh on Fridays and join the 401K?")
    assert text == "Can I remote work on Fridays and join the retirement plan, 401k?"
    # a phrase of several words matches word by word, case and plurals aside
    text, applied = syn.apply("Is Paid-Time-Off carried over?")
    assert applied[0].added == ("PTO", "vacation")
    assert Synonyms.parse(RULES).apply("comma, inside")[0].endswith("(with comma)")
    assert syn.apply("Nothing to see") == ("Nothing to see", [])


def test_the_longest_phrase_wins_and_sets_combine() -> None:
    syn = Synonyms.parse("time, period\npaid time off, PTO\n", "a.txt") + Synonyms.parse(
        "vacation, holiday\n", "b.txt")
    text, applied = syn.apply("paid time off and vacation")
    assert [a.written for a in applied] == ["paid time off", "vacation"]
    assert text == "paid time off and vacation (PTO; holiday)"
    assert syn.source == "a.txt + b.txt"


@pytest.mark.parametrize(("line", "message"), [
    ("a => b => c", "more than one '=>'"),
    ("a,,b", "an empty term"),
    ("a, b,", "an empty term"),
    (" => b", "a side of '=>' is empty"),
    ("a => ", "a side of '=>' is empty"),
    ("%%, a", "the term '%%' has no letters or digits"),
    (", ".join(["w " * (MAX_WORDS + 1)] * 2), f"has over {MAX_WORDS} words"),
])
def test_a_malformed_line_names_the_file_and_the_line(tmp_path: Path, line: str,
                                                       message: str) -> None:
    path = tmp_path / "synonyms.txt"
    path.write_text(f"# fine\nPTO, paid time off\n{line}\n")
    with pytest.raises(SynonymsError, match=f"{path}, line 3: .*") as e:
        Synonyms.load(path)
    assert message in str(e.value)


def test_a_missing_or_binary_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SynonymsError, match="cannot read the synonyms file"):
        Synonyms.load(tmp_path / "none.txt")
    bad = tmp_path / "bin.txt"
    bad.write_bytes(b"\xff\xfe\x00a, b")
    with pytest.raises(SynonymsError, match=f"{bad}: not UTF-8"):
        Synonyms.load(bad)


def test_applying_rules_is_linear_in_the_question() -> None:
    """Pathological questions (one word repeated, a phrase's prefix repeated) cost time in
    proportion to their length: 10x the text may cost at most ~10x (20x allowed for noise)."""
    rules = "\n".join(f"{' '.join(['jan'] * n)} x, y{n}" for n in range(1, MAX_WORDS))
    syn = Synonyms.parse(rules + "\npaid time off, PTO\n")

    def cost(text: str) -> float:
        t = time.perf_counter()
        syn.apply(text)
        return time.perf_counter() - t

    for unit in ("jan ", "paid time ", "paid-"):
        small = min(cost(unit * 2_000) for _ in range(3))
        large = min(cost(unit * 20_000) for _ in range(3))
        assert large < 20 * small + 0.05, (unit, small, large)
