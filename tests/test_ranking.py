"""Sections ranked as sections (chunks / collapsed / traverse) and packed by evidence.

The fixture is a hand-made handbook whose answers are known: each subsection holds one
topic, Chapter 1's own text names all of its subsections, Chapter 2 has no text of its own.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.llm import LLMReply
from proxy_pointer.ranking import group, rank_nodes
from proxy_pointer.tokens import count_tokens

FIXTURES = Path(__file__).parent / "fixtures" / "ranking"
DOC = "handbook.md"
MODES = ("chunks", "collapsed", "traverse")
CHILD_Q = "Why do bronze impellers erode after storms and when are they replaced?"
CHAPTER_Q = "Which parts does pump maintenance cover, each on its own schedule?"
PIPES_Q = "What slows corrosion of cast iron mains?"


@pytest.fixture(scope="module")
def index() -> Index:
    return Index.build([FIXTURES], embedder=HashEmbedder(256))


@pytest.mark.parametrize("mode", MODES)
def test_question_about_a_child_gets_the_child_not_the_parent(index: Index, mode: str) -> None:
    res = index.retrieve(CHILD_Q, mode=mode, budget=2000)
    top = res.sections[0]
    assert top.title == "1.1 Impellers" and not top.trimmed
    assert "### 1.2" not in top.text
    # The chapter may follow, but only with its own text: nothing is handed over twice.
    for s in res.sections[1:]:
        if s.title == "Chapter 1: Pumps":
            assert "### 1.1" not in s.text and "Bronze impellers" not in s.text


@pytest.mark.parametrize("mode", MODES)
def test_question_about_a_whole_chapter_gets_the_chapter(index: Index, mode: str) -> None:
    res = index.retrieve(CHAPTER_Q, mode=mode, budget=2000)
    top = res.sections[0]
    assert top.title == "Chapter 1: Pumps" and not top.trimmed
    for heading in ("### 1.1 Impellers", "### 1.2 Seals", "### 1.3 Bearings"):
        assert heading in top.text
    assert "## Chapter 2" not in top.text


def test_traverse_with_a_beam_of_one_follows_one_branch(index: Index) -> None:
    res = index.retrieve(PIPES_Q, mode="traverse", beam=1, budget=2000)
    assert res.sections[0].title == "2.1 Corrosion"
    # One branch: Chapter 2 and what lies above it (the handbook's own opening line).
    assert all(s.path[1:2] in ((), ("Chapter 2: Pipes",)) for s in res.sections)
    assert any(s.path[1:2] == ("Chapter 2: Pipes",) for s in res.sections)
    # Collapsed search ranks the same answer first but still lets the other chapter compete.
    wide = index.retrieve(PIPES_Q, mode="collapsed", budget=2000)
    assert wide.sections[0].title == "2.1 Corrosion"
    assert any(s.path[1:2] == ("Chapter 1: Pumps",) for s in wide.sections)


def test_collapsed_tree_adds_ancestors_that_carry_their_subtree_hits(index: Index) -> None:
    q = np.asarray(index.embedder.embed_query(PIPES_Q), np.float32)
    rows = index.rows_for([DOC])
    scores, found = index.dense_search(q, len(rows), rows=rows)
    ranked = list(zip(found.tolist(), scores.tolist(), strict=True))
    flat = group(index, ranked)
    tree = index.tree(DOC)
    pipes = next(n.node_id for n in tree.nodes if n.title == "Chapter 2: Pipes")
    assert pipes not in {c.node_id for c in flat}  # no chunk of its own
    collapsed = {c.node_id: c for c in rank_nodes(index, flat, q, "collapsed")}
    child_rows = {r for c in flat if c.node_id in tree.get(pipes).children for r in c.rows}
    assert set(collapsed[pipes].rows) == child_rows
    assert rank_nodes(index, flat, q, "chunks") == flat


@pytest.mark.parametrize("packing", ["evidence", "sections"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("budget", [20, 45, 80, 150, 400])
def test_budget_is_never_exceeded(index: Index, packing: str, mode: str, budget: int) -> None:
    for q in (CHILD_Q, CHAPTER_Q, PIPES_Q, "pump " * 500):
        res = index.retrieve(q, mode=mode, packing=packing, budget=budget)
        assert res.tokens_used <= budget
        assert res.tokens_used == sum(count_tokens(s.text) for s in res.sections)
        assert all(s.tokens == count_tokens(s.text) for s in res.sections)


def test_evidence_packing_hands_over_the_matching_block_with_its_heading(index: Index) -> None:
    q = "Torque every flange bolt in a star pattern"
    res = index.retrieve(q, budget=60, k=1, mode="chunks")
    (sec,) = res.sections
    assert sec.title == "2.2 Joints"
    assert sec.text.startswith("### 2.2 Joints")
    assert "star pattern" in sec.text
    # With room to spare the same section comes whole, and other sections fill the rest.
    full = index.retrieve(q, budget=400)
    assert full.sections[0].title == "2.2 Joints" and not full.sections[0].trimmed
    assert full.tokens_used > 200


def test_evidence_packing_prefers_the_best_blocks_of_a_long_section(tmp_path: Path) -> None:
    paras = [f"Paragraph {i} talks about topic{i} and nothing else at length here." for i in
             range(30)]
    paras[17] = "The turbine gearbox failed because the lubricant pump clogged with sludge."
    (tmp_path / "long.md").write_text("# Report\n\n## Findings\n\n" + "\n\n".join(paras) + "\n")
    idx = Index.build([tmp_path], embedder=HashEmbedder(256))
    res = idx.retrieve("why did the turbine gearbox fail lubricant pump sludge", budget=80)
    (sec,) = res.sections
    assert sec.trimmed and sec.text.startswith("## Findings")
    assert paras[17] in sec.text and "[…]" in sec.text
    assert res.tokens_used <= 80


def test_invalid_modes_and_packings_are_refused(index: Index) -> None:
    from proxy_pointer.errors import ConfigError

    with pytest.raises(ConfigError, match="mode"):
        index.retrieve(CHILD_Q, mode="raptor")
    with pytest.raises(ConfigError, match="packing"):
        index.retrieve(CHILD_Q, packing="greedy")
    with pytest.raises(ConfigError, match="beam"):
        index.retrieve(CHILD_Q, beam=0)


def _twice(tmp_path: Path, *, edit: bool = False) -> Path:
    """A corpus that holds the handbook twice: an identical copy, or one with a word changed."""
    root = tmp_path / "corpus"
    (root / "republished").mkdir(parents=True)
    text = (FIXTURES / DOC).read_text()
    (root / DOC).write_text(text)
    copy = text.replace("every quarter", "each quarter") if edit else text
    (root / "republished" / DOC).write_text(copy)
    return root


@pytest.mark.parametrize("edit", [False, True], ids=["identical", "one-word-changed"])
def test_copies_are_handed_over_once_with_every_location(tmp_path: Path, edit: bool) -> None:
    idx = Index.build([_twice(tmp_path, edit=edit)], embedder=HashEmbedder(256))
    single = Index.build([FIXTURES], embedder=HashEmbedder(256))
    for q in (CHILD_Q, CHAPTER_Q, PIPES_Q):
        res = idx.retrieve(q, budget=2000)
        texts = [s.text for s in res.sections]
        assert len(texts) == len(set(texts)), "a copy ate the budget"
        top = res.sections[0]
        assert top.title == single.retrieve(q, budget=2000).sections[0].title
        other = "republished/handbook.md" if top.doc_id == DOC else DOC
        assert top.also_in == (f"{other}#{top.node_id}",)
        assert top.to_dict()["also_in"] == [f"{other}#{top.node_id}"]


def test_duplicate_documents_are_reported_at_indexing(tmp_path: Path) -> None:
    root = _twice(tmp_path)
    (root / "other.md").write_text("# Other\n\nSomething else entirely, long enough to chunk.\n")
    idx = Index.build([root], embedder=HashEmbedder(256))
    report = idx.update([root])
    assert report.duplicates == ()  # nothing changed, nothing to report
    (root / "third.md").write_text((FIXTURES / DOC).read_text())
    report = idx.update([root])
    assert report.duplicates == (("republished/handbook.md", DOC), ("third.md", DOC))
    assert "2 duplicate documents" in report.summary()
    edited = Index.build([_twice(tmp_path / "e", edit=True)], embedder=HashEmbedder(256))
    assert edited.update([tmp_path / "e" / "corpus"]).duplicates == ()


def test_two_stage_search_keeps_the_best_documents(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / DOC).write_text((FIXTURES / DOC).read_text())
    (root / "garden.md").write_text(
        "# Garden Pump Notes\n\nA small garden pump lifts rain water from the butt to the beds."
        " Its impeller clogs with leaves in autumn, so rinse it weekly.\n\n## Hoses\n\n"
        "Hoses crack in frost; drain them before winter and store them coiled indoors.\n")
    idx = Index.build([root], embedder=HashEmbedder(256))
    both = idx.retrieve(CHILD_Q, budget=2000)
    assert {s.doc_id for s in both.sections} == {DOC, "garden.md"}
    one = idx.retrieve(CHILD_Q, budget=2000, documents=1)
    assert {s.doc_id for s in one.sections} == {DOC}
    assert one.sections[0].title == "1.1 Impellers"


class _PickingLLM:
    """Answers a rerank prompt with the numbers of the breadcrumbs that mention ``word``."""

    model_id = "picker"

    def __init__(self, word: str, fail: bool = False) -> None:
        self.word, self.fail, self.prompts = word, fail, []

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        from proxy_pointer.errors import LLMError

        self.prompts.append(prompt)
        if self.fail:
            raise LLMError("server down")
        picks = [line.split("]")[0].strip("[") for line in prompt.splitlines()
                 if line.startswith("[") and self.word in line]
        return LLMReply(", ".join(picks) or "none of them", 10, 2, self.model_id)


def test_llm_rerank_reorders_by_breadcrumbs_with_one_call(index: Index) -> None:
    plain = index.retrieve(CHILD_Q, budget=2000)
    assert plain.sections[0].title == "1.1 Impellers"
    llm = _PickingLLM("Joints")
    res = index.retrieve(CHILD_Q, budget=2000, rerank_llm=llm, rerank_top=10)
    assert res.sections[0].title == "2.2 Joints"
    assert len(llm.prompts) == 1 and "rerank" in res.timings
    prompt = llm.prompts[0]
    assert "Pump Station Handbook > Chapter 2: Pipes > 2.2 Joints" in prompt
    assert "Bronze impellers erode" not in prompt  # breadcrumbs only, no section text
    # A failing call or a reply without numbers leaves the order alone.
    for broken in (_PickingLLM("Joints", fail=True), _PickingLLM("no such title")):
        same = index.retrieve(CHILD_Q, budget=2000, rerank_llm=broken)
        assert [s.ref for s in same.sections] == [s.ref for s in plain.sections]


class _SummaryLLM:
    """Summarizes a section as a fixed phrase per title, so a summary can be searched for."""

    model_id = "summarizer"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        self.prompts.append(prompt)
        section = prompt.splitlines()[1]
        word = "zanzibar" if "Seals" in section else "ordinary"
        return LLMReply(f"A {word} overview of {section}.", 50, 10, self.model_id)


def test_llm_summaries_are_extra_proxies_cached_by_content(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy_pointer.chunking import ChunkConfig
    from proxy_pointer.errors import ConfigError

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "docs"
    root.mkdir()
    (root / DOC).write_text((FIXTURES / DOC).read_text())
    llm = _SummaryLLM()
    config = ChunkConfig(summaries=True)
    idx = Index.build([root], embedder=HashEmbedder(256), chunk_config=config, noise_llm=llm)
    plain = Index.build([root], embedder=HashEmbedder(256))
    sections = {c.node_id for c in plain.chunks}
    assert len(llm.prompts) == len(sections)  # one call per section with text
    assert len(idx.chunks) == len(plain.chunks) + len(sections)
    assert all("Bronze impellers" not in p or "1.1 Impellers" in p for p in llm.prompts)
    # Only the summary says "zanzibar": a hit on it ranks its section, sliced from source.
    top = idx.retrieve("zanzibar", budget=2000).sections[0]
    assert top.title == "1.2 Seals" and "Mechanical seals" in top.text
    # A changed section is asked for again; the others come from the cache.
    (root / DOC).write_text((FIXTURES / DOC).read_text().replace("every month", "weekly"))
    idx.update([root])
    assert len(llm.prompts) == len(sections) + 1 and "1.3 Bearings" in llm.prompts[-1]
    with pytest.raises(ConfigError, match="index-time LLM"):
        Index.build([root], embedder=HashEmbedder(256), chunk_config=config)
