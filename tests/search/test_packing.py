"""The packer on the document shapes that risk losing evidence: one-line sections, tiny
budgets, long sentences; token counts stay exact and every ranked section can be taken.
On the handbook (handbook.py): budgets in every mode, evidence blocks, copies handed over once."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from handbook import CHAPTER_Q, CHILD_Q, DOC, FIXTURES, MODES, PIPES_Q
from handbook import twice as _twice

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.tokens import count_tokens

ANSWER = "The TV smells of plastic. This smell is normal and will dissipate over time."
QUESTION = "Why does the TV smell of plastic?"
_WORDS = ("screen remote channel volume input signal picture sound menu settings power cable "
          "antenna wifi update firmware brightness contrast speaker standby timer").split()


def manual(topics: int = 20, sentences: int = 60, seed: int = 3) -> str:
    """The issue's reproduction: twenty short topics and one section that is a single line
    of ~6,000 characters holding the answer in its middle."""
    rnd = random.Random(seed)

    def sentence(n: int) -> str:
        return " ".join(rnd.choice(_WORDS) for _ in range(n)).capitalize() + "."

    parts = ["# TV User Manual\n"]
    parts += [f"## Topic {i}\n\n{sentence(60)}\n" for i in range(1, topics + 1)]
    line = [sentence(14) for _ in range(sentences)]
    line.insert(sentences * 2 // 3, ANSWER)
    parts.append("## Other Issues\n\n" + " ".join(line) + "\n")
    return "\n".join(parts)


@pytest.fixture(scope="module")
def hashed(tmp_path_factory) -> Index:
    docs = tmp_path_factory.mktemp("manual")
    (docs / "manual.md").write_text(manual(), encoding="utf-8")
    return Index.build([docs], embedder=HashEmbedder(256))


@pytest.mark.parametrize("packing", ["evidence", "sections"])
@pytest.mark.parametrize("budget", [300, 500, 1000, 2000])
def test_a_one_line_section_is_packed_around_its_answer(hashed: Index, packing: str,
                                                         budget: int) -> None:
    res = hashed.retrieve(QUESTION, budget=budget, packing=packing)
    top = res.sections[0]
    assert top.title == "Other Issues"
    assert ANSWER in top.text  # the sentences around the best chunk, cut between sentences
    assert top.trimmed or top.tokens > 1000  # whole only where the budget allows
    assert top.text.startswith("## Other Issues\n")
    assert res.tokens_used == sum(count_tokens(s.text) for s in res.sections) <= budget
    assert top.tokens <= max(400, 0.3 * budget) or packing == "evidence"


def test_every_kept_piece_is_verbatim_and_gaps_are_marked(hashed: Index) -> None:
    res = hashed.retrieve(QUESTION, budget=500)
    top = res.sections[0]
    line = hashed.reader.tree("manual.md").lines[top.end_line - 1]
    body = top.text.split("\n", 2)[2]  # after the heading and its blank line
    pieces = [p.strip() for p in body.replace("[…]", "\x00").split("\x00") if p.strip()]
    assert pieces and all(p in line for p in pieces)
    assert "[…]" in body  # the line was cut, and says so


def test_no_ranked_section_is_dropped_for_its_size(hashed: Index) -> None:
    res = hashed.retrieve(QUESTION, budget=2000, k=5)
    assert not res.omitted
    assert len(res.sections) == 5


@pytest.mark.parametrize("budget", [1, 20, 60, 150])
def test_tiny_budgets_hold_no_stubs_and_count_exactly(hashed: Index, budget: int) -> None:
    res = hashed.retrieve(QUESTION, budget=budget, k=5)
    assert res.tokens_used == sum(count_tokens(s.text) for s in res.sections) <= budget
    for s in res.sections:
        assert not s.trimmed or s.tokens >= 24  # a trimmed section is a useful window


@pytest.mark.slow
def test_the_issue_reproduction_with_the_real_model(tmp_path: Path) -> None:
    from proxy_pointer import SentenceTransformerEmbedder

    (tmp_path / "manual.md").write_text(manual(), encoding="utf-8")
    idx = Index.build([tmp_path], embedder=SentenceTransformerEmbedder())
    for budget in (1000, 2000):
        for packing in ("evidence", "sections"):
            res = idx.retrieve(QUESTION, budget=budget, packing=packing)
            assert res.sections[0].title == "Other Issues", (budget, packing)
            assert ANSWER in res.sections[0].text


def test_the_two_orders_differ_where_they_should(hashed: Index) -> None:
    # Rank order fills each section to its share before the next (the first stays within
    # it); evidence order takes the best units first, then grows sections past the share.
    ev = hashed.retrieve(QUESTION, budget=1000)
    sec = hashed.retrieve(QUESTION, budget=1000, packing="sections")
    assert ev.context != sec.context
    assert sec.sections[0].tokens <= 400 < ev.sections[0].tokens


# --- the handbook (handbook.py): budgets, evidence blocks, copies handed over once ----------
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
