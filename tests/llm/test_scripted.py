"""Tests for proxy_pointer.llm.scripted: the in-process ScriptedLLM that tests drive the
synthesis, rerank, noise and summary code with."""

from __future__ import annotations

import pytest

from proxy_pointer.errors import LLMError
from proxy_pointer.llm import LLM, LLMReply, ScriptedLLM


def test_a_fixed_reply_answers_every_call_and_records_it() -> None:
    llm = ScriptedLLM("Paris.")
    assert isinstance(llm, LLM) and llm.model_id == "scripted"
    assert llm.generate("Capital?", system="Be brief.") == LLMReply("Paris.", 10, 5, "scripted")
    assert llm.generate("Again?") == LLMReply("Paris.", 10, 5, "scripted")
    assert llm.calls == [("Capital?", "Be brief."), ("Again?", None)]
    assert llm.prompts == ["Capital?", "Again?"]


def test_model_and_usage_are_as_given() -> None:
    llm = ScriptedLLM("x", model_id="m", model="m-v2", input_tokens=None, output_tokens=7)
    assert llm.model_id == "m"
    assert llm.generate("p") == LLMReply("x", None, 7, "m-v2")


def test_a_function_of_the_prompt() -> None:
    llm = ScriptedLLM(lambda prompt: prompt[::-1])
    assert llm.generate("abc").text == "cba"
    assert llm.generate("xy").text == "yx"


def test_an_exception_is_raised_on_every_call_and_the_call_recorded() -> None:
    error = LLMError("quota exceeded")
    llm = ScriptedLLM(error)
    for _ in range(2):
        with pytest.raises(LLMError, match="quota") as raised:
            llm.generate("p")
        assert raised.value is error
    assert llm.prompts == ["p", "p"]


def test_a_sequence_answers_one_turn_per_call_then_runs_out() -> None:
    llm = ScriptedLLM(["one", RuntimeError("down"), str.upper])
    assert llm.generate("a").text == "one"
    with pytest.raises(RuntimeError, match="down"):
        llm.generate("b")
    assert llm.generate("three").text == "THREE"
    with pytest.raises(LLMError, match=r"3 replies.*call 4"):
        llm.generate("d")
    assert llm.prompts == ["a", "b", "three", "d"]
    with pytest.raises(LLMError, match=r"0 replies.*call 1"):
        ScriptedLLM([]).generate("p")


def test_the_default_is_an_empty_reply() -> None:
    assert ScriptedLLM().generate("p").text == ""
