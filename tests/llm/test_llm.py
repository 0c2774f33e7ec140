"""Tests for proxy_pointer.llm: the Gemini and OpenAI-compatible backends (against the local
stand-in servers in gemini_server.py and openai_server.py), the LLM protocol and the factory."""

from __future__ import annotations

import socket

import gemini_server
import pytest
from gemini_server import error_reply
from llm_doubles import Sleeps, gemini_llm, openai_llm
from openai_server import Reply

from proxy_pointer.errors import ConfigError, LLMError
from proxy_pointer.llm import (
    LLM,
    GeminiLLM,
    LLMReply,
    OpenAICompatibleLLM,
    ScriptedLLM,
    llm_from_env,
    make_llm,
)
from proxy_pointer.search.synthesis import ENABLE_SYNTHESIS_HINT

pytestmark = pytest.mark.usefixtures("no_ambient_keys")


def closed_port_url() -> str:
    """A localhost URL where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"



# --------------------------------------------------------------------------- Gemini


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


def test_openai_connection_refused_fails_at_once():
    sleeps = Sleeps()
    url = closed_port_url()
    llm = OpenAICompatibleLLM(url, "m", max_retries=5, sleep=sleeps)
    with pytest.raises(LLMError, match=rf"{url}/v1/chat/completions: cannot connect .*"
                                       "is the server running"):
        llm.generate("q")
    assert sleeps == []  # no retries: five of them took 24 s


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



# --------------------------------------------------------------------------- the protocol


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
