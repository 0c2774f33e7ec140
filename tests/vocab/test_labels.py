"""The words that label a numbered part of a document ("Item 7A", "Note 12", "Appendix B"):
one list in the vocabulary, each reader taking the rows that say it reads them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from proxy_pointer.convert.numbering import TOP_RANK, numbering_rank
from proxy_pointer.errors import ConfigError
from proxy_pointer.parse.headings import find_headings
from proxy_pointer.search.question import Question
from proxy_pointer.vocab.filings import FILINGS, LABEL_READS, read_vocabulary

PACKAGE = Path(__file__).resolve().parents[2] / "proxy_pointer"


def test_each_reader_reads_the_rows_that_say_so() -> None:
    ranked = {lab.word: lab.rank for lab in FILINGS.ranked_labels}
    assert ranked["part"] == TOP_RANK < ranked["chapter"] < ranked["item"] < ranked["note"]
    assert numbering_rank("PART II") == ranked["part"]
    assert numbering_rank("Appendix B") == numbering_rank("EXHIBIT") == ranked["appendix"]
    assert numbering_rank("TITLE 5") == ranked["title"] and numbering_rank("Title 5") is None
    asked = {lab.word for lab in FILINGS.labels_read("question")}
    assert {"table", "figure", "capítulo"} <= asked and "book" not in asked
    assert Question.of("What does Fig. 3 show, and table 2?").labels == (("figure", "3"),
                                                                         ("table", "2"))
    assert Question.of("the book 2 of volume 3").labels == ()  # ranked, never asked for


def test_a_heading_keyword_comes_from_the_list() -> None:
    """A plain-text "Appendix B Data" is recovered as a heading by its keyword; "Box 2
    Data" is not (box is read only in questions)."""
    text = "Intro text here.\n\nAppendix B Data\n\nThe data.\n\nBox 2 Data\n\nMore.\n"
    titles = [h.plain for h in find_headings(text, text.split("\n"), "d", recover=True).headings]
    assert "Appendix B Data" in titles and "Box 2 Data" not in titles


def test_no_module_outside_the_vocabulary_lists_label_words() -> None:
    """No string in the package's code (docstrings aside) holds two label words as regex
    alternatives ("part|item", "NOTE|Note"): the words live in ``filings.toml``."""
    words = {w.lower() for lab in FILINGS.labels for w in (lab.word, *lab.aliases)}
    alt = re.compile(r"([^\W\d_]+\.?)\|([^\W\d_]+\.?)", re.IGNORECASE)
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.parent.name == "vocab":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                pairs = alt.findall(node.value)
                if any(a.lower() in words and b.lower() in words for a, b in pairs):
                    found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert found == []


def test_a_label_read_nowhere_known_is_a_config_error(tmp_path) -> None:
    shipped = (PACKAGE / "vocab" / "filings.toml").read_text(encoding="utf-8")
    bad = shipped.replace('{ word = "box", reads = ["question"] }',
                          '{ word = "box", reads = ["sidebar"] }')
    assert bad != shipped
    path = tmp_path / "bad.toml"
    path.write_text(bad, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bad\.toml: label 'box' is read in sidebar"):
        read_vocabulary(path)
    assert set(LABEL_READS) == {r for lab in FILINGS.labels for r in lab.reads}
