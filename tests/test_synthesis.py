"""Tests for proxy_pointer.llm backends (against local stand-in servers) and synthesis."""

from __future__ import annotations

import json
import socket

import gemini_server
import pytest
from gemini_server import FakeGemini, error_reply
from hypothesis import given
from hypothesis import strategies as st
from openai_server import FakeOpenAIServer, Reply

from proxy_pointer.errors import ConfigError, LLMError
from proxy_pointer.llm import (
    LLM,
    GeminiLLM,
    LLMReply,
    OpenAICompatibleLLM,
    llm_from_env,
    make_llm,
)
from proxy_pointer.refs import Ref
from proxy_pointer.retrieval import Section
from proxy_pointer.synthesis import (
    ENABLE_SYNTHESIS_HINT,
    NOT_IN_SECTIONS,
    NOTHING_RETRIEVED,
    Citation,
    build_prompt,
    check_citation,
    parse_citations,
    synthesize,
)

# --------------------------------------------------------------------------- helpers


class Sleeps(list):
    """A ``sleep`` stand-in that records the delays instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class ScriptedLLM:
    """An in-process LLM returning a fixed text and recording its prompts."""

    model_id = "scripted"

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[tuple[str, str | None]] = []

    def generate(self, prompt: str, *, system: str | None = None) -> LLMReply:
        self.calls.append((prompt, system))
        return LLMReply(self.text, 100, 20, "scripted-v1")


def closed_port_url() -> str:
    """A localhost URL where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


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


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch):
    # A developer's real keys must never reach a fake server or change a test's outcome.
    for var in (
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "PROXY_POINTER_LLM",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
    ):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def openai_server():
    with FakeOpenAIServer() as server:
        yield server


def openai_llm(server: FakeOpenAIServer, sleeps=None, **kw) -> OpenAICompatibleLLM:
    kw.setdefault("sleep", sleeps if sleeps is not None else Sleeps())
    return OpenAICompatibleLLM(server.base_url + "/v1", "llama3.1", **kw)


# --------------------------------------------------------------------------- Gemini


@pytest.fixture(scope="module")
def _gemini_server():
    # One server for the module: stopping one waits out its 0.5 s poll interval.
    with FakeGemini(api_key="test-key") as server:
        yield server


@pytest.fixture
def gemini(_gemini_server):
    _gemini_server.reset()
    _gemini_server.text, _gemini_server.generate = "OK", None
    yield _gemini_server
    _gemini_server.reset()


def gemini_llm(server: FakeGemini, sleeps=None, **kw) -> GeminiLLM:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("sleep", sleeps if sleeps is not None else Sleeps())
    return GeminiLLM(base_url=server.base_url, **kw)


def test_gemini_request_and_reply(gemini):
    gemini.text = "Paris is the capital."
    reply = gemini_llm(gemini, temperature=0.3, max_output_tokens=50).generate(
        "Capital of France?", system="Be brief."
    )

    assert reply == LLMReply("Paris is the capital.", 5, 4, "gemini-2.5-flash")
    [req] = gemini.requests
    assert req.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert req.api_key == "test-key"
    assert req.body["contents"] == [{"role": "user", "parts": [{"text": "Capital of France?"}]}]
    assert req.system_text == "Be brief."
    assert req.body["generationConfig"] == {"temperature": 0.3, "maxOutputTokens": 50}


def test_gemini_skips_thoughts_and_counts_thinking_as_output(gemini):
    gemini.enqueue(
        gemini_server.Reply(
            body={
                "candidates": [
                    {
                        "content": {
                            "role": "model",
                            "parts": [
                                {"text": "Let me think...", "thought": True},
                                {"text": "Answer."},
                            ],
                        },
                        "finishReason": "STOP",
                    }
                ],
                "usageMetadata": {
                    "promptTokenCount": 30,
                    "candidatesTokenCount": 2,
                    "thoughtsTokenCount": 50,
                },
                "modelVersion": "gemini-2.5-flash-001",
            }
        )
    )
    reply = gemini_llm(gemini).generate("q")
    assert reply == LLMReply("Answer.", 30, 52, "gemini-2.5-flash-001")


def test_gemini_key_sources(gemini, monkeypatch):
    with pytest.raises(LLMError, match=r"GEMINI_API_KEY.*GOOGLE_API_KEY"):
        GeminiLLM()
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    GeminiLLM(base_url=gemini.base_url).generate("q")
    monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")  # preferred over GOOGLE_API_KEY
    with pytest.raises(LLMError, match="rejected the API key"):
        GeminiLLM(base_url=gemini.base_url, max_retries=0).generate("q")
    assert [r.api_key for r in gemini.requests] == ["test-key", "gemini-key"]


def test_gemini_retries_transient_errors_then_succeeds(gemini):
    gemini.enqueue(error_reply(429), error_reply(500), error_reply(503))
    sleeps = Sleeps()
    assert gemini_llm(gemini, sleeps).generate("q").text == "OK"
    # Exactly one HTTP request per attempt: the SDK's own retrying is off.
    assert len(gemini.requests) == 4
    assert len(sleeps) == 3
    for n, delay in enumerate(sleeps):
        assert 0.5 * 2**n <= delay <= 2**n


def test_gemini_honours_retry_info(gemini):
    gemini.enqueue(error_reply(429, "quota", retry_delay=17))
    sleeps = Sleeps()
    gemini_llm(gemini, sleeps).generate("q")
    assert sleeps == [17.0]


def test_gemini_gives_up_after_max_retries(gemini):
    gemini.enqueue(*[error_reply(503, "model overloaded")] * 10)
    sleeps = Sleeps()
    with pytest.raises(LLMError, match=r"gave up after 4 attempts.*503.*model overloaded"):
        gemini_llm(gemini, sleeps, max_retries=3).generate("q")
    assert len(gemini.requests) == 4
    assert len(sleeps) == 3


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (error_reply(403, "Permission denied"), "rejected the API key.*403"),
        (error_reply(401, "unauthenticated"), "rejected the API key.*401"),
        (error_reply(400, "Invalid JSON payload"), "request was invalid.*400.*Invalid JSON"),
        (error_reply(404, "models/x is not found"), "not found.*404"),
    ],
)
def test_gemini_fatal_errors_are_not_retried(gemini, reply, match):
    gemini.enqueue(reply)
    sleeps = Sleeps()
    with pytest.raises(LLMError, match=match):
        gemini_llm(gemini, sleeps).generate("q")
    assert len(gemini.requests) == 1
    assert sleeps == []


def test_gemini_bad_key(gemini):
    # The real service answers 400 API_KEY_INVALID, not 401/403, for a wrong key.
    sleeps = Sleeps()
    with pytest.raises(LLMError, match=r"rejected the API key.*400.*Check GEMINI_API_KEY"):
        gemini_llm(gemini, sleeps, api_key="wrong").generate("q")
    assert len(gemini.requests) == 1 and sleeps == []


def test_gemini_timeout(gemini):
    gemini.enqueue(*[gemini_server.Reply(delay=2.0)] * 2)
    with pytest.raises(LLMError, match=r"gave up after 2 attempts: no reply within 0.2 s"):
        gemini_llm(gemini, timeout=0.2, max_retries=1).generate("q")
    assert len(gemini.requests) == 2


def test_gemini_network_errors_are_retried(gemini):
    gemini.enqueue(gemini_server.Reply(drop=True))
    sleeps = Sleeps()
    assert gemini_llm(gemini, sleeps).generate("q").text == "OK"
    assert len(gemini.requests) == 2 and len(sleeps) == 1

    with pytest.raises(LLMError, match="cannot reach Gemini"):
        GeminiLLM(api_key="k", base_url=closed_port_url(), max_retries=1, sleep=Sleeps()).generate(
            "q"
        )


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"candidates": [{"finishReason": "SAFETY", "index": 0}]}, r"finish reason: SAFETY"),
        (
            {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}},
            "prompt blocked: PROHIBITED_CONTENT",
        ),
        (
            {
                "candidates": [
                    {
                        "content": {"role": "model", "parts": [{"text": "  "}]},
                        "finishReason": "MAX_TOKENS",
                    }
                ]
            },
            "finish reason: MAX_TOKENS",
        ),
    ],
)
def test_gemini_reply_without_text(gemini, body, match):
    gemini.enqueue(gemini_server.Reply(body=body))
    with pytest.raises(LLMError, match=f"no text.*{match}"):
        gemini_llm(gemini).generate("q")
    assert len(gemini.requests) == 1


def test_gemini_malformed_reply(gemini):
    gemini.enqueue(gemini_server.Reply(raw=b"<html>proxy error</html>"))
    with pytest.raises(LLMError, match="malformed"):
        gemini_llm(gemini).generate("q")


def test_synthesize_with_gemini(gemini):
    gemini.text = "Soft targets [papers/1503.00841.md#0003, lines 10-11]."
    answer = synthesize("q", [section()], gemini_llm(gemini))
    assert answer.grounded and answer.model == "gemini-2.5-flash"
    assert NOT_IN_SECTIONS in gemini.requests[0].system_text


# --------------------------------------------------------------------------- OpenAI-compatible


def test_openai_request_and_reply(openai_server):
    openai_server.script(
        Reply.completion("Paris.", model="llama3.1:8b", prompt_tokens=42, completion_tokens=3)
    )
    llm = openai_llm(openai_server, api_key="sk-test", temperature=0.2, max_output_tokens=64)
    reply = llm.generate("Capital of France?", system="Be brief.")

    assert reply == LLMReply("Paris.", 42, 3, "llama3.1:8b")
    [req] = openai_server.requests
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body == {
        "model": "llama3.1",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Capital of France?"},
        ],
        "temperature": 0.2,
        "max_tokens": 64,
    }


def test_openai_key_from_env_and_optional(openai_server, monkeypatch):
    openai_llm(openai_server).generate("hi")
    assert "authorization" not in openai_server.requests[-1].headers
    assert openai_server.requests[-1].body["messages"] == [{"role": "user", "content": "hi"}]

    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    openai_llm(openai_server).generate("hi")
    assert openai_server.requests[-1].headers["authorization"] == "Bearer sk-env"


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions"])
def test_openai_base_url_with_or_without_v1(openai_server, suffix):
    llm = OpenAICompatibleLLM(openai_server.base_url + suffix, "m")
    assert llm.generate("hi").text == "ok"
    assert openai_server.requests[-1].path == "/v1/chat/completions"


def test_openai_other_api_roots_are_kept():
    llm = OpenAICompatibleLLM("https://generativelanguage.googleapis.com/v1beta/openai/", "m")
    assert llm.url == "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"


@pytest.mark.parametrize("url", ["localhost:11434", "ftp://host/v1", ""])
def test_openai_bad_base_url(url):
    with pytest.raises(ConfigError, match="base_url"):
        OpenAICompatibleLLM(url, "m")


def test_openai_retries_transient_errors_then_succeeds(openai_server):
    openai_server.script(
        Reply.error(429, "slow down"), Reply.error(500), Reply.error(503), Reply.completion("done")
    )
    sleeps = Sleeps()
    assert openai_llm(openai_server, sleeps).generate("q").text == "done"
    assert len(openai_server.requests) == 4
    assert len(sleeps) == 3
    # Exponential backoff with jitter in [0.5, 1) of 1, 2, 4 seconds.
    for n, delay in enumerate(sleeps):
        assert 0.5 * 2**n <= delay <= 2**n


def test_openai_honours_retry_after(openai_server):
    openai_server.script(Reply.error(429, headers={"Retry-After": "7"}), Reply.completion())
    sleeps = Sleeps()
    openai_llm(openai_server, sleeps).generate("q")
    assert sleeps == [7.0]


def test_openai_gives_up_after_max_retries(openai_server):
    openai_server.script(*[Reply.error(503, "overloaded")] * 10)
    sleeps = Sleeps()
    with pytest.raises(LLMError, match=r"gave up after 3 attempts.*503.*overloaded"):
        openai_llm(openai_server, sleeps, max_retries=2).generate("q")
    assert len(openai_server.requests) == 3
    assert len(sleeps) == 2


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (Reply.error(401, "Incorrect API key provided"), "API key was rejected.*401"),
        (Reply.error(403, "forbidden"), "API key was rejected.*403"),
        (Reply.error(400, "messages: field required"), "request was invalid.*400.*field req"),
        (Reply.error(404, "model 'x' not found"), "not found.*404"),
        (Reply.error(429, "You exceeded your quota", code="insufficient_quota"), "quota"),
    ],
)
def test_openai_fatal_errors_are_not_retried(openai_server, reply, match):
    openai_server.script(reply)
    sleeps = Sleeps()
    with pytest.raises(LLMError, match=match):
        openai_llm(openai_server, sleeps).generate("q")
    assert len(openai_server.requests) == 1
    assert sleeps == []


def test_openai_timeout(openai_server):
    openai_server.script(*[Reply.completion(delay=2.0)] * 2)
    with pytest.raises(LLMError, match=r"gave up after 2 attempts: no reply within 0.2 s"):
        openai_llm(openai_server, timeout=0.2, max_retries=1).generate("q")
    assert len(openai_server.requests) == 2


def test_openai_connection_refused():
    sleeps = Sleeps()
    llm = OpenAICompatibleLLM(closed_port_url(), "m", max_retries=2, sleep=sleeps)
    with pytest.raises(LLMError, match="network error"):
        llm.generate("q")
    assert len(sleeps) == 2


def test_openai_reply_without_usage_or_text(openai_server):
    openai_server.script(Reply.completion("hi", prompt_tokens=None, completion_tokens=None))
    reply = openai_llm(openai_server).generate("q")
    assert (reply.input_tokens, reply.output_tokens) == (None, None)

    openai_server.script(Reply.completion(None, finish_reason="content_filter"))
    with pytest.raises(LLMError, match=r"no text.*content_filter"):
        openai_llm(openai_server).generate("q")

    openai_server.script(Reply(200, "<html>proxy error</html>"))
    with pytest.raises(LLMError, match="malformed reply"):
        openai_llm(openai_server).generate("q")


def test_constructor_arguments_are_validated():
    with pytest.raises(ConfigError, match="model"):
        OpenAICompatibleLLM("http://localhost:1/v1", "")
    with pytest.raises(ConfigError, match="max_retries"):
        OpenAICompatibleLLM("http://localhost:1/v1", "m", max_retries=-1)
    with pytest.raises(ConfigError, match="timeout"):
        OpenAICompatibleLLM("http://localhost:1/v1", "m", timeout=0)


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
    llm = ScriptedLLM("The student is trained at T=20 [papers/1503.00841.md#0003, lines 11-12].")
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


def test_synthesize_over_http(openai_server):
    openai_server.script(Reply.completion("Yes [papers/1503.00841.md#0003, line 10]."))
    answer = synthesize("q", [section()], openai_llm(openai_server))
    assert answer.grounded
    messages = openai_server.requests[0].body["messages"]
    assert messages[0]["role"] == "system" and NOT_IN_SECTIONS in messages[0]["content"]
    assert "papers/1503.00841.md#0003" in messages[1]["content"]


def test_backends_satisfy_the_protocol(openai_server):
    assert isinstance(openai_llm(openai_server), LLM)
    assert isinstance(GeminiLLM(api_key="k"), LLM)
    assert isinstance(ScriptedLLM("x"), LLM)


# --------------------------------------------------------------------------- factory


def test_make_llm_specs(monkeypatch):
    assert make_llm("none") is None
    assert make_llm("gemini") is None  # no key: the caller prints the context and the hint
    assert "GEMINI_API_KEY" in ENABLE_SYNTHESIS_HINT and "--llm openai" in ENABLE_SYNTHESIS_HINT

    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    default = make_llm("gemini")
    assert isinstance(default, GeminiLLM) and default.model_id == "gemini:gemini-2.5-flash"
    assert make_llm(" Gemini:gemini-2.5-pro ").model == "gemini-2.5-pro"

    local = make_llm("openai:qwen2.5:7b", base_url="http://localhost:11434", max_retries=1)
    assert isinstance(local, OpenAICompatibleLLM)
    assert (local.model, local.url, local.max_retries) == (
        "qwen2.5:7b",
        "http://localhost:11434/v1/chat/completions",
        1,
    )

    one_string = make_llm("openai:http://localhost:8000/v1|qwen2.5:7b")
    assert (one_string.model, one_string.url) == (
        "qwen2.5:7b",
        "http://localhost:8000/v1/chat/completions",
    )

    monkeypatch.setenv("PROXY_POINTER_LLM", "none")
    assert make_llm(None) is None  # None: the CLI gave no --llm, the environment decides


@pytest.mark.parametrize(
    ("spec", "match"),
    [
        ("openai", "needs a model"),
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("claude", "unknown LLM"),
    ],
)
def test_make_llm_bad_specs(spec, match):
    with pytest.raises(ConfigError, match=match):
        make_llm(spec)


def test_llm_from_env(monkeypatch):
    assert llm_from_env() is None
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert llm_from_env().model_id == "gemini:gemini-2.5-flash"

    monkeypatch.setenv("PROXY_POINTER_LLM", "openai:llama3.1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")
    assert llm_from_env().url == "http://127.0.0.1:8000/v1/chat/completions"

    monkeypatch.setenv("OPENAI_BASE_URL", "")
    monkeypatch.setenv("OPENAI_API_KEY", "sk")
    assert llm_from_env().url == "https://api.openai.com/v1/chat/completions"

    monkeypatch.setenv("PROXY_POINTER_LLM", "none")
    assert llm_from_env() is None
