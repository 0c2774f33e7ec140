"""Tests for proxy_pointer.search.rerank: the opt-in LLM rerank of candidates by their
breadcrumbs, on the handbook (handbook.py; conftest.py's ``index``)."""

from __future__ import annotations

from handbook import CHILD_Q

from proxy_pointer import Index
from proxy_pointer.llm import LLMReply


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
