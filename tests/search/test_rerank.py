"""Tests for proxy_pointer.search.rerank: the opt-in LLM rerank of candidates by their
breadcrumbs, on the handbook (handbook.py; conftest.py's ``index``)."""

from __future__ import annotations

from handbook import CHILD_Q

from proxy_pointer import Index
from proxy_pointer.errors import LLMError
from proxy_pointer.llm import ScriptedLLM


def _picking(word: str) -> ScriptedLLM:
    """Answers a rerank prompt with the numbers of the breadcrumbs that mention ``word``."""

    def pick(prompt: str) -> str:
        picks = [line.split("]")[0].strip("[") for line in prompt.splitlines()
                 if line.startswith("[") and word in line]
        return ", ".join(picks) or "none of them"

    return ScriptedLLM(pick, model_id="picker", input_tokens=10, output_tokens=2)


def test_llm_rerank_reorders_by_breadcrumbs_with_one_call(index: Index) -> None:
    plain = index.retrieve(CHILD_Q, budget=2000)
    assert plain.sections[0].title == "1.1 Impellers"
    llm = _picking("Joints")
    res = index.retrieve(CHILD_Q, budget=2000, rerank_llm=llm, rerank_top=10)
    assert res.sections[0].title == "2.2 Joints"
    assert len(llm.prompts) == 1 and "rerank" in res.timings
    prompt = llm.prompts[0]
    assert "Pump Station Handbook > Chapter 2: Pipes > 2.2 Joints" in prompt
    assert "Bronze impellers erode" not in prompt  # breadcrumbs only, no section text
    # A failing call or a reply without numbers leaves the order alone.
    for broken in (ScriptedLLM(LLMError("server down")), _picking("no such title")):
        same = index.retrieve(CHILD_Q, budget=2000, rerank_llm=broken)
        assert [s.ref for s in same.sections] == [s.ref for s in plain.sections]
