"""Tests for proxy_pointer.search.synthesis: the prompt, checked citations, ``Answer`` (over an
in-process LLM, and over the Gemini and OpenAI-compatible backends against local stand-ins).

The backends themselves are tested in test_llm.py."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from llm_doubles import gemini_llm, openai_llm
from openai_server import Reply

from proxy_pointer.errors import ConfigError
from proxy_pointer.llm import ScriptedLLM
from proxy_pointer.refs import Ref
from proxy_pointer.search.sections import Section
from proxy_pointer.search.synthesis import (
    NOT_IN_SECTIONS,
    NOTHING_RETRIEVED,
    Citation,
    build_prompt,
    check_citation,
    parse_citations,
    synthesize,
)

pytestmark = pytest.mark.usefixtures("no_ambient_keys")

# --------------------------------------------------------------------------- helpers


def section(doc="papers/1503.00841.md", node="0003", start=10, end=14, **kw) -> Section:
    lines = kw.pop("lines", None) or [f"line {n}\n" for n in range(start, end + 1)]
    return Section(
        doc_id=doc,
        node_id=node,
        title=kw.pop("title", "Training"),
        path=kw.pop("path", ("Distilling the Knowledge", "3 Method", "Training")),
        start_line=start,
        end_line=end,
        text="".join(lines),
        score=1.0,
        **kw,
    )


# --------------------------------------------------------------------------- prompt


def test_build_prompt_lays_out_sections():
    sections = [
        section(),
        section(doc="notes/plain.txt", node=None, start=1, end=2, path=(), title="plain.txt"),
    ]
    system, prompt = build_prompt("  How is the student trained? ", sections)

    assert "ONLY" in system and NOT_IN_SECTIONS in system
    assert "[doc_id#node_id, lines a-b]" in system
    assert '<section id="papers/1503.00841.md#0003" lines="10-14">' in prompt
    assert "Path: Distilling the Knowledge > 3 Method > Training" in prompt
    assert "10 | line 10\n11 | line 11" in prompt
    assert '<section id="notes/plain.txt#L1-2" lines="1-2">' in prompt
    assert "Path: plain.txt\n1 | line 1\n2 | line 2\n</section>" in prompt
    assert prompt.index("<section") < prompt.index("Question: How is the student trained?")


def test_build_prompt_does_not_number_trimmed_text():
    trimmed = section(
        start=10, end=90, lines=["## Training\n", "[…]\n", "We use Adam.\n"], trimmed=True
    )
    _, prompt = build_prompt("q", [trimmed])
    assert 'lines="10-90" trimmed="true"' in prompt
    assert "## Training\n[…]\nWe use Adam.\n</section>" in prompt


def test_build_prompt_rejects_empty_question():
    with pytest.raises(ConfigError, match="empty"):
        build_prompt("   ", [section()])


# --------------------------------------------------------------------------- citations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("KD uses T=20 [1503.00841#0003, lines 3-5].", [("1503.00841", "0003", 3, 5)]),
        ("[a.md#0003, line 3]", [("a.md", "0003", 3, 3)]),
        ("[a.md#0003]", [("a.md", "0003", None, None)]),
        (
            "[a.md#0003, lines 3–5; dir/b-c_d.v2.md#preamble, line 1]",
            [("a.md", "0003", 3, 5), ("dir/b-c_d.v2.md", "preamble", 1, 1)],
        ),
        (
            "[a.md#0001, b.md#0002, lines 4 to 9]",
            [("a.md", "0001", None, None), ("b.md", "0002", 4, 9)],
        ),
        ("fallback [notes/x.txt#L12, lines 12-30]", [("notes/x.txt", "L12", 12, 30)]),
        ("[`a.md#0003`, lines 7-7].", [("a.md", "0003", 7, 7)]),
        ("[a.md#0003 lines 9-2]", [("a.md", "0003", 2, 9)]),
        ("[my notes/q 3.md#0004, L3-L5]", [("my notes/q 3.md", "0004", 3, 5)]),
        ("[a.md#0003.]", [("a.md", "0003", None, None)]),
        ("two [a#0001] and [a#0001]", [("a", "0001", None, None)] * 2),
        ("not refs: [1], [C# language](https://x.org/#frag), [see below]", []),
    ],
)
def test_parse_citations(text, expected):
    got = [(c.doc_id, c.node_id, c.start_line, c.end_line) for c in parse_citations(text)]
    assert got == expected


def test_citation_raw_is_the_bracket():
    [a, b] = parse_citations("x [a#0001, lines 1-2; b#0002] y")
    assert a.raw == b.raw == "[a#0001, lines 1-2; b#0002]"
    assert str(a) == "[a#0001, lines 1-2]" and str(b) == "[b#0002]"
    assert a.ref == "a#0001"


_DOC = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_./-]{0,30}", fullmatch=True)
_NODE = st.from_regex(r"[0-9]{4}|preamble|L[1-9][0-9]{0,3}", fullmatch=True)


@given(_DOC, _NODE, st.none() | st.tuples(st.integers(1, 10**5), st.integers(0, 50)))
def test_citation_str_round_trips(doc, node, lines):
    start, end = (None, None) if lines is None else (lines[0], lines[0] + lines[1])
    citation = Citation(doc, node, start, end, "")
    [parsed] = parse_citations(f"Claim {citation}.")
    assert (parsed.doc_id, parsed.node_id, parsed.start_line, parsed.end_line) == (
        doc,
        node,
        start,
        end,
    )


def test_check_citation():
    given_sections = [section(), section(doc="x.txt", node=None, start=5, end=8)]
    [ok, whole, fallback, elsewhere, outside, straddle] = parse_citations(
        "[papers/1503.00841.md#0003, lines 11-14] [papers/1503.00841.md#0003] "
        "[x.txt#L5-8, line 8] [papers/1503.00841.md#0004, line 3] "
        "[papers/1503.00841.md#0003, lines 90-95] [x.txt#L5-8, lines 4-6]"
    )
    assert check_citation(ok, given_sections) is None
    assert check_citation(whole, given_sections) is None
    assert check_citation(fallback, given_sections) is None
    assert "not retrieved" in check_citation(elsewhere, given_sections)
    assert "outside the section (lines 10-14)" in check_citation(outside, given_sections)
    assert "outside the section (lines 5-8)" in check_citation(straddle, given_sections)


def test_line_range_refs_of_windows_are_cited_and_checked():
    window = section(doc="notes/x.txt", node=None, start=12, end=30)
    assert window.ref == "notes/x.txt#L12-30"
    text = ("[notes/x.txt#L12-30] [notes/x.txt#L12-30, lines 13-14] [notes/x.txt#L12 – L30] "
            "[notes/x.txt#L12-30, lines 29-31] [notes/x.txt#L12, line 12] [notes/x.txt#p3-5]")
    cited = parse_citations(text)
    assert [(c.ref, c.start_line, c.end_line) for c in cited] == [
        ("notes/x.txt#L12-30", None, None),
        ("notes/x.txt#L12-30", 13, 14),
        ("notes/x.txt#L12-30", None, None),  # spelled loosely, read in the one spelling
        ("notes/x.txt#L12-30", 29, 31),
        ("notes/x.txt#L12", 12, 12),
        ("notes/x.txt#p3-5", None, None),
    ]
    assert [c.target for c in cited[:2]] == [Ref("notes/x.txt", lines=(12, 30))] * 2
    assert cited[5].target == Ref("notes/x.txt", pages=(3, 5))
    problems = [check_citation(c, [window]) for c in cited]
    assert problems[:3] == [None, None, None]
    assert "outside the section (lines 12-30)" in problems[3]
    assert "not retrieved" in problems[4] and "not retrieved" in problems[5]
    answer = synthesize("q", [window], ScriptedLLM("Fine [notes/x.txt#L12-30, lines 13-14]."))
    assert answer.grounded and answer.cited_sections == (window,)


def test_citation_target_is_none_for_a_malformed_ref():
    [c] = parse_citations("[a.md#L012, line 3]")
    assert c.ref == "a.md#L012" and c.target is None


# --------------------------------------------------------------------------- synthesize


def test_synthesize_grounded_answer():
    llm = ScriptedLLM("The student is trained at T=20 [papers/1503.00841.md#0003, lines 11-12].",
                      input_tokens=100, output_tokens=20, model="scripted-v1")
    sections = [section(), section(node="0007", start=30, end=31)]
    answer = synthesize("How is the student trained?", sections, llm)

    [(prompt, system)] = llm.calls
    assert (system, prompt) == build_prompt("How is the student trained?", sections)
    assert answer.grounded and not answer.unanswerable
    assert [c.ref for c in answer.citations] == ["papers/1503.00841.md#0003"]
    assert answer.invalid_citations == () and answer.warnings == ()
    assert answer.cited_sections == (sections[0],)
    assert answer.sections == tuple(sections)
    assert (answer.input_tokens, answer.output_tokens, answer.model) == (100, 20, "scripted-v1")


def test_answer_to_dict_is_json():
    llm = ScriptedLLM("A [papers/1503.00841.md#0003, line 10]. B [other.md#0001].")
    d = json.loads(json.dumps(synthesize("q", [section()], llm).to_dict()))
    assert [c["valid"] for c in d["citations"]] == [True, False]
    assert d["citations"][0]["start_line"] == 10 and len(d["warnings"]) == 1
    assert d["sections"][0]["node_id"] == "0003" and d["grounded"] is False


def test_synthesize_flags_invalid_citations():
    llm = ScriptedLLM(
        "A [papers/1503.00841.md#0003, lines 11-12]. B [other.md#0001]. "
        "C [papers/1503.00841.md#0003, lines 40-41]."
    )
    answer = synthesize("q", [section()], llm)
    assert not answer.grounded
    assert len(answer.citations) == 3
    assert [c.ref for c in answer.invalid_citations] == [
        "other.md#0001",
        "papers/1503.00841.md#0003",
    ]
    assert answer.invalid_citations[1].start_line == 40
    assert "not retrieved" in answer.warnings[0]
    assert "outside the section" in answer.warnings[1]
    assert answer.cited_sections == (answer.sections[0],)


@pytest.mark.parametrize(
    ("text", "unanswerable"),
    [
        (NOT_IN_SECTIONS, True),
        ("the provided sections do NOT contain the answer", True),
        ("These sections don't contain an answer to the second part.", True),
        ("The section does not contain enough information to answer.", True),
        ("The answer is 4 [papers/1503.00841.md#0003].", False),
    ],
)
def test_synthesize_detects_unanswerable(text, unanswerable):
    answer = synthesize("q", [section()], ScriptedLLM(text))
    assert answer.unanswerable is unanswerable
    assert answer.grounded is (not unanswerable)


def test_synthesize_without_sections_does_not_call_llm():
    llm = ScriptedLLM("never")
    answer = synthesize("q", [], llm)
    assert llm.calls == []
    assert answer.text == NOTHING_RETRIEVED
    assert answer.unanswerable and not answer.grounded
    assert answer.input_tokens is None and answer.model == "scripted"


def test_synthesize_with_gemini(gemini):
    gemini.text = "Soft targets [papers/1503.00841.md#0003, lines 10-11]."
    answer = synthesize("q", [section()], gemini_llm(gemini))
    assert answer.grounded and answer.model == "gemini-2.5-flash"
    assert NOT_IN_SECTIONS in gemini.requests[0].system_text


def test_synthesize_over_http(openai_server):
    openai_server.script(Reply.completion("Yes [papers/1503.00841.md#0003, line 10]."))
    answer = synthesize("q", [section()], openai_llm(openai_server))
    assert answer.grounded
    messages = openai_server.requests[0].body["messages"]
    assert messages[0]["role"] == "system" and NOT_IN_SECTIONS in messages[0]["content"]
    assert "papers/1503.00841.md#0003" in messages[1]["content"]
