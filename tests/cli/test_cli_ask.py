"""`proxy-pointer ask` end to end against a local Gemini stand-in and offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gemini_server import FakeGemini

from proxy_pointer import HashEmbedder, Index
from proxy_pointer.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "retrieval"
QUESTION = "How is reservoir storage measured with sonar and rating curves?"


@pytest.fixture()
def index_dir(tmp_path: Path) -> Path:
    Index.build([FIXTURES], embedder=HashEmbedder(256)).save(tmp_path / "idx")
    return tmp_path / "idx"


@pytest.fixture()
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PROXY_POINTER_LLM", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def test_ask_offline_prints_context_and_how_to_enable(index_dir: Path, no_keys: None,
                                                      capsys: pytest.CaptureFixture) -> None:
    assert main(["ask", "--index", str(index_dir), QUESTION]) == 0
    out = capsys.readouterr().out
    assert "Box 1.1: How storage is measured" in out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("To get a synthesized answer, set GEMINI_API_KEY")


def test_ask_with_gemini_cites_checked_sections(index_dir: Path, no_keys: None,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    idx = Index.load(index_dir)
    box = next(s for s in idx.retrieve(QUESTION).sections if s.title.startswith("Box 1.1"))
    with FakeGemini(api_key="test-key") as server:
        server.text = (f"Storage comes from level readings and rating curves "
                       f"[{box.ref}, lines {box.start_line}-{box.end_line}]; the curves are "
                       f"resurveyed by sonar [water_report.md#0099, lines 1-2].")
        rc = main(["ask", "--index", str(index_dir), QUESTION, "--llm", "gemini",
                   "--llm-base-url", server.base_url, "--json"])
        assert rc == 0
        (req,) = server.requests_for("generateContent")
    answer = json.loads(capsys.readouterr().out)
    prompt = json.dumps(req.body)
    assert box.ref in prompt and "rating curves" in prompt  # the sections went to the LLM
    assert req.api_key == "test-key" and req.system_text
    valid = {c["doc_id"] + "#" + c["node_id"]: c["valid"] for c in answer["citations"]}
    assert valid == {box.ref: True, "water_report.md#0099": False}  # not given: flagged
    assert answer["grounded"] is False and answer["warnings"]


def test_ask_with_a_rejected_key_exits_with_one_line(index_dir: Path, no_keys: None,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "wrong-key")
    with FakeGemini(api_key="test-key") as server:
        rc = main(["ask", "--index", str(index_dir), QUESTION, "--llm", "gemini",
                   "--llm-base-url", server.base_url])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 1
    assert len(err) == 1 and err[0].startswith("proxy-pointer: error:") and "key" in err[0]
