"""The reader retrieval is written against: a generation's Reader, its successor after an
update, and the Index that hands it out."""

from __future__ import annotations

import numpy as np
import pytest

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.search.corpus import Corpus, Reader
from proxy_pointer.search.packing import pack
from proxy_pointer.search.ranking import group, select
from proxy_pointer.search.retrieval import Retriever
from proxy_pointer.stores.analyzer import terms
from proxy_pointer.stores.vectors import VectorIndexConfig

DOCS = {
    "a.md": "# Alpha\n\n## Optics\n\nThe telescope mirror is ground from glass.\n\n"
            "## Mounts\n\nAn equatorial mount follows the sky.\n",
    "b.md": "# Beta\n\n## Soil\n\nClay soil holds water; sandy soil drains fast.\n",
}


def small_index() -> Index:
    idx = Index(embedder=HashEmbedder(64))
    for doc_id, text in DOCS.items():
        idx.add_text(doc_id, text)
    return idx


def reads(corpus: Corpus) -> tuple:
    """Everything retrieval reads, in a comparable form."""
    rows = np.arange(len(corpus.chunks))
    q = corpus.embedder.embed_query("telescope mirror")
    return (sorted(corpus.documents), [c.text for c in corpus.chunks],
            corpus.vectors_of(rows).tolist(), corpus.pointers(rows), corpus.crumbs(rows),
            corpus.rows_for(["b.md"]).tolist(), corpus.rows_mentioning("optics").tolist(),
            corpus.term_weights("telescope mirror"),
            corpus.lexical_search("telescope mirror", 3),
            [a.tolist() for a in corpus.dense_search(q, 3)],
            corpus.text("a.md"), corpus.tree("a.md").to_dict(), corpus.line_tokens("a.md"))


def test_index_hands_out_its_current_reader() -> None:
    idx = small_index()
    reader = idx.reader
    assert isinstance(reader, Reader) and idx.reader is reader  # the same until an update
    assert idx.version == reader.version and reads(reader)
    # The writer is not a corpus: nothing of the reader's is passed through.
    assert not any(hasattr(idx, m) for m in ("documents", "chunks", "derived", "text", "tree",
                                             "dense_search", "visible_documents"))


def test_an_update_makes_a_successor_and_the_old_reader_keeps_its_generation() -> None:
    idx = small_index()
    old = idx.reader
    before = Retriever(old).retrieve("equatorial mount", budget=200)
    tree_b = old.tree("b.md")
    old.derived.line_starts("a.md")
    idx.add_text("c.md", "# Gamma\n\n## Mount Everest\n\nThe equatorial mount of Everest.\n")
    new = idx.reader
    assert new is not old and new.version == old.version + 1
    assert new.derived is not old.derived  # derived caches start fresh
    assert new.tree("b.md") is tree_b  # an unchanged document's tree is kept
    assert "c.md" not in old.documents and "c.md" in new.documents
    # A retriever holding the old reader still answers from the old generation.
    assert Retriever(old).retrieve("equatorial mount", budget=200) == before


def test_a_new_vector_setting_hands_out_a_new_reader_and_a_held_one_is_unchanged() -> None:
    """Readers are snapshots: setting ``vector_config`` changes what the index hands out
    next, never the reader a query already holds."""
    idx = small_index()
    held = idx.reader
    flat = held.vector_config
    idx.vector_config = VectorIndexConfig(kind="hnsw", hnsw_m=8)
    assert idx.reader is not held and idx.reader.vector_config.kind == "hnsw"
    assert held.vector_config == flat and held.vector_config.kind != "hnsw"
    assert idx.reader.version == held.version  # the same contents
    assert reads(idx.reader)[:9] == reads(held)[:9]
    with pytest.raises(AttributeError):
        held.vector_config = VectorIndexConfig(kind="hnsw")  # type: ignore[misc]


def test_a_changed_document_gets_a_fresh_tree() -> None:
    idx = small_index()
    tree_a = idx.reader.tree("a.md")
    idx.add_text("a.md", DOCS["a.md"] + "\n## Eyepieces\n\nA wide field eyepiece.\n")
    assert idx.reader.tree("a.md") is not tree_a
    assert [n.title for n in idx.reader.tree("a.md").nodes][-1] == "Eyepieces"


def test_ranking_and_packing_run_on_a_reader_alone() -> None:
    """The retrieval steps need nothing but the Corpus protocol."""
    reader = small_index().reader
    q = reader.embedder.embed_query("telescope mirror glass")
    scores, rows = reader.dense_search(q, 5)
    candidates = group(reader, list(zip(rows.tolist(), scores.tolist(), strict=True)))
    chosen = select(reader, candidates, k=2)
    sections, omitted = pack(reader, chosen, 200, reader.term_weights("telescope mirror"))
    assert sections and set(omitted) <= {"a.md#0002", "b.md#0001"}
    top = sections[0]
    assert top.doc_id == "a.md" and "telescope mirror" in top.text
    assert top.tokens <= 200 and top.ref == "a.md#" + top.node_id


def test_line_caches_follow_the_stored_lines() -> None:
    reader = small_index().reader
    lines = reader.tree("a.md").lines
    starts = reader.derived.line_starts("a.md")
    assert starts[-1] == len(reader.text("a.md")) and len(starts) == len(lines) + 1
    assert reader.derived.line_terms("a.md", 0, len(lines)) == terms(lines)
    with pytest.raises(KeyError):
        reader.tree("nope.md")
