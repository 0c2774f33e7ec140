"""The vocabulary is a value handed in: an index reads its documents' cards and its
questions with the one it is given (a second, tiny vocabulary of Canadian forms proves it),
records it (name and hash), says when a reader uses another, and an update reads every
document again with the reader's."""

from __future__ import annotations

import json
import logging
import pickle
from pathlib import Path

import pytest

from proxy_pointer import HashEmbedder, Index
from proxy_pointer.errors import ConfigError
from proxy_pointer.parse.cards import read_card
from proxy_pointer.search.question import Question
from proxy_pointer.stores import VocabularyInfo
from proxy_pointer.vocab.filings import FILINGS, read_vocabulary

CANADA = read_vocabulary(Path(__file__).parent / "fixtures" / "vocab_ca" / "canada.toml")


def _aif(year: int) -> str:
    return (f"ANNUAL INFORMATION FORM\n\nNorthern Lights Mining Ltd.\n\n(Exact name of "
            f"registrant as specified in its charter)\n\nFor the year ended December 31, "
            f"{year}\n\nCommon Shares NLM Toronto Stock Exchange\n\n# Mineral Properties\n\n"
            f"The Aurora mine produced 12,000 ounces of gold in {year}.\n")


def _shelf(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for year in (2021, 2022):
        (docs / f"nlm_aif_{year}.md").write_text(_aif(year), encoding="utf-8")
    (docs / "manual.md").write_text("# Pump handbook\n\nPrime the pump.\n", encoding="utf-8")
    return docs


def test_cards_and_questions_read_the_vocabulary_they_are_given() -> None:
    card = read_card(_aif(2022), "nlm_aif_2022.md", vocabulary=CANADA)
    assert (card.kind, card.period, card.entity) == ("AIF", "FY2022",
                                                     "Northern Lights Mining Ltd.")
    assert "NLM" in card.names and "Northern Lights Mining" in card.names
    assert read_card(_aif(2022), "nlm_aif_2022.md").kind == ""  # no such form in filings.toml
    assert Question.of("NLM's 2022 annual information form", vocabulary=CANADA).kind == "AIF"
    assert Question.of("NLM's 2022 annual information form").kind == ""
    assert Question.of("Acme's 2022 10-K").kind == "10-K"


@pytest.mark.parametrize("workers", [1, 2])
def test_an_index_reads_and_routes_with_its_vocabulary(tmp_path, workers) -> None:
    """Parsed in this process or in worker processes (the vocabulary travels as its file),
    the cards are the given vocabulary's, and routing by its form names works."""
    docs = _shelf(tmp_path)
    idx = Index.build([docs], embedder=HashEmbedder(64), vocabulary=CANADA, workers=workers)
    kinds = {d: c.kind for d, c in idx.reader.cards().items()}
    assert kinds == {"nlm_aif_2021.md": "AIF", "nlm_aif_2022.md": "AIF", "manual.md": ""}
    res = idx.retrieve("How much gold did Northern Lights Mining produce in its 2021 AIF?",
                       budget=200)
    assert res.routing.documents == ("nlm_aif_2021.md",) and res.routing.kind == "AIF"
    plain = Index.build([docs], embedder=HashEmbedder(64))
    assert {c.kind for c in plain.reader.cards().values()} == {""}


def test_a_vocabulary_pickles_as_its_file() -> None:
    assert pickle.loads(pickle.dumps(FILINGS)) is FILINGS
    again = pickle.loads(pickle.dumps(CANADA))
    assert again.sha256 == CANADA.sha256 and again.form("AIF") is not None


def test_the_manifest_names_the_vocabulary(tmp_path) -> None:
    docs = _shelf(tmp_path)
    location = str(tmp_path / "idx")
    Index.build([docs], embedder=HashEmbedder(64), vocabulary=CANADA).save(location)
    manifest = json.loads(next((tmp_path / "idx").rglob("manifest.json")).read_text())
    assert manifest["vocabulary"] == {"name": "canada", "sha256": CANADA.sha256}
    assert len(FILINGS.sha256) == 64 and FILINGS.name == "filings"


def test_a_reader_with_another_vocabulary_is_told_and_an_update_rereads(
        tmp_path, caplog) -> None:
    docs = _shelf(tmp_path)
    location = str(tmp_path / "idx")
    Index.build([docs], embedder=HashEmbedder(64), vocabulary=CANADA).save(location)
    with caplog.at_level(logging.WARNING, logger="proxy_pointer.index"):
        Index.load(location, embedder=HashEmbedder(64), vocabulary=CANADA)
    assert not caplog.records  # the same vocabulary: nothing to say
    with caplog.at_level(logging.WARNING, logger="proxy_pointer.index"):
        idx = Index.load(location, embedder=HashEmbedder(64))
    assert "read with vocabulary canada" in caplog.text and "filings" in caplog.text
    assert idx.read_with == VocabularyInfo("canada", CANADA.sha256)
    assert {c.kind for c in idx.reader.cards().values()} == {"AIF", ""}
    report = idx.update([docs])
    assert set(report.updated) == {"nlm_aif_2021.md", "nlm_aif_2022.md", "manual.md"}
    assert {c.kind for c in idx.reader.cards().values()} == {""}  # read again: no such form
    assert idx.read_with == VocabularyInfo("filings", FILINGS.sha256)
    assert idx.manifest().vocabulary == idx.read_with


def test_a_vocabulary_file_changed_under_a_pickle_is_refused(tmp_path) -> None:
    path = tmp_path / "v.toml"
    path.write_text((Path(CANADA.path)).read_text(encoding="utf-8"), encoding="utf-8")
    vocab = read_vocabulary(path)
    blob = pickle.dumps(vocab)
    path.write_text(path.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    from proxy_pointer.vocab import filings

    filings._READ.pop(str(path), None)  # as a fresh worker process: nothing read yet
    with pytest.raises(ConfigError, match="changed while it was in use"):
        pickle.loads(blob)


def test_periods_read_the_forms_of_the_vocabulary_as_reports() -> None:
    """"according to its 2021 AIF" anchors the question to 2021 only where the AIF is a
    form of the vocabulary."""
    from proxy_pointer.parse.periods import Period, asked_periods

    q = "What did it say about gold output in 2022, according to its 2021 AIF?"
    assert asked_periods(q, vocabulary=CANADA).anchor == Period(2021)
    assert asked_periods(q).anchor is None
    assert Question.of(q, vocabulary=CANADA).asked.target == Period(2021)
