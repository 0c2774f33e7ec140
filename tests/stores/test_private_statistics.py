"""BM25 statistics scoped to what a caller may read.

A reader's lexical scores weigh terms by the documents it may read only: a hidden
document's words (document frequencies) and lengths change neither the scores nor the
order of what the reader gets. The rescoring that makes this exact is checked against an
index built from the visible rows alone.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import IndexCorruptError
from proxy_pointer.index import Index
from proxy_pointer.stores.bm25 import TermStats, idf
from proxy_pointer.stores.lexical import LENGTHS, LexicalIndex, LexicalWriter

ZOO = ("# Zoo\n\n## Marsupials\n\nA quokka smiles at visitors in the park all day long.\n\n"
       "## Burrows\n\nA wombat digs a burrow under the old fence of the park.\n")
OTHER = "# Garden\n\n## Beds\n\nTomatoes and beans grow in raised beds by the fence.\n"
QUESTION = "quokka wombat"


def _hidden(word: str, times: int = 30) -> str:
    return "# Notes\n\n## Animals\n\n" + (word + " ") * times + "\n"


def _build(loc: str, hidden: str, *, split: bool) -> Index:
    """The public documents and one hidden to readers (in a second segment if ``split``)."""
    emb = HashEmbedder(64)
    idx = Index(embedder=emb)
    idx.add_texts([("zoo.md", ZOO), ("garden.md", OTHER)])
    if split:
        idx.save(loc)
        idx = Index.load(loc, embedder=emb)
    idx.add_text("hidden.md", hidden)
    idx.set_metadata({"hidden.md": {"access": ["hr"]}})
    idx.save(loc)
    return Index.load(loc, embedder=emb)


def _seen(idx: Index, principal: list[str] | None) -> list[tuple[str, float]]:
    r = idx.retrieve(QUESTION, principal=principal)
    return [(s.ref, s.score) for s in r.sections]


def _location(kind: str, path: Path) -> str:
    if kind == "milvus":
        pytest.importorskip("pymilvus")
        pytest.importorskip("milvus_lite")
        path.mkdir(parents=True)
        return f"milvus:{path / 'idx.db'}"
    return str(path / "idx")


@pytest.mark.parametrize("kind,split", [("local", False), ("local", True), ("milvus", False)])
def test_a_hidden_documents_words_change_nothing_a_reader_gets(tmp_path: Path, kind: str,
                                                               split: bool) -> None:
    a = _build(_location(kind, tmp_path / "a"), _hidden("quokka"), split=split)
    b = _build(_location(kind, tmp_path / "b"), _hidden("lemur"), split=split)
    reader_a, reader_b = _seen(a, ["readers"]), _seen(b, ["readers"])
    assert reader_a == reader_b and reader_a[0][0].startswith("zoo.md")
    assert all(not ref.startswith("hidden.md") for ref, _ in reader_a)
    # the pair differs where it may: the owner sees the hidden document's words
    assert _seen(a, None) != _seen(b, None)
    # and the per-line terms that pack sections are weighed the same way
    assert a.reader.term_weights(QUESTION, a.reader.visible_rows(_access(["readers"]))) == \
        b.reader.term_weights(QUESTION, b.reader.visible_rows(_access(["readers"])))


def _access(principal: list[str]):
    from proxy_pointer.access import Access

    return Access.of(principal)


def test_a_hidden_documents_length_changes_nothing_a_reader_gets(tmp_path: Path) -> None:
    # Same words, different lengths: the mean row length is the readers' own too.
    a = _build(str(tmp_path / "a"), _hidden("heron", 5), split=False)
    b = _build(str(tmp_path / "b"), _hidden("heron", 200), split=False)
    assert _seen(a, ["readers"]) == _seen(b, ["readers"])
    ra = a.reader.lexical_search(QUESTION, 5, scope=a.reader.visible_rows(_access(["r"])))
    rb = b.reader.lexical_search(QUESTION, 5, scope=b.reader.visible_rows(_access(["r"])))
    assert ra == rb and ra
    # without the scope, the hidden row's length moves the public scores
    assert a.reader.lexical_search(QUESTION, 5) != b.reader.lexical_search(QUESTION, 5)


def _texts(rng: random.Random, n: int) -> list[str]:
    words = ["tide", "harbour", "ferry", "grain", "canal", "barge", "lock", "mill", "river"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 40))) for _ in range(n)]


@pytest.mark.parametrize("seed", range(5))
def test_rescored_scores_equal_an_index_of_the_scoped_rows_alone(seed: int) -> None:
    rng = random.Random(seed)
    texts = _texts(rng, 60)
    whole = LexicalIndex.build(texts)
    keep = np.asarray(sorted(rng.sample(range(len(texts)), 25)), np.int64)
    alone = LexicalIndex.build([texts[i] for i in keep])
    tokens = ["tide", "ferri", "canal", "mill"]  # stemmed, as the tokenizer writes them
    length = whole.length(keep)
    assert length is not None
    stats = TermStats(idf(whole.doc_freqs(tokens, keep), len(keep)), length / len(keep))
    np.testing.assert_allclose(whole.scores(tokens, stats)[keep], alone.scores(tokens),
                               rtol=1e-6)
    np.testing.assert_array_equal(whole.doc_freqs(tokens, keep), alone.doc_freqs(tokens))


def test_the_streaming_writer_keeps_the_same_row_lengths(tmp_path: Path) -> None:
    texts = [*_texts(random.Random(7), 40), "&", "-- 1 --"]
    built = LexicalIndex.build(texts)
    writer = LexicalWriter(tmp_path / "scratch")
    writer.add(texts[:17])
    writer.add(texts[17:])
    writer.save(tmp_path / "bm25")
    loaded = LexicalIndex.load(tmp_path / "bm25", len(texts))
    assert loaded.lengths is not None and built.lengths is not None
    np.testing.assert_array_equal(loaded.lengths, built.lengths)


def test_an_index_saved_without_row_lengths_still_scopes_frequencies(tmp_path: Path) -> None:
    locs = [tmp_path / "a", tmp_path / "b"]
    _build(str(locs[0]), _hidden("quokka"), split=False)
    _build(str(locs[1]), _hidden("lemur"), split=False)
    for loc in locs:  # as the previous version wrote its segments
        found = list(loc.rglob(LENGTHS))
        assert found
        for f in found:
            f.unlink()
            info = f.parents[1] / "segment.json"
            meta = json.loads(info.read_text())
            del meta["files"][f"bm25/{LENGTHS}"]
            info.write_text(json.dumps(meta))
    a, b = (Index.load(loc, embedder=HashEmbedder(64)) for loc in locs)
    assert _seen(a, ["readers"]) == _seen(b, ["readers"])


def test_a_damaged_row_lengths_file_is_a_clear_error(tmp_path: Path) -> None:
    writer = LexicalWriter(tmp_path / "scratch")
    writer.add(["one two", "three"])
    writer.save(tmp_path / "bm25")
    np.save(tmp_path / "bm25" / LENGTHS, np.zeros(5, np.int32))
    with pytest.raises(IndexCorruptError, match="row lengths"):
        LexicalIndex.load(tmp_path / "bm25", 2)
