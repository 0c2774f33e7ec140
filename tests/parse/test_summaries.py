"""Tests for proxy_pointer.parse.summaries: LLM section summaries as extra proxy chunks, cached by
content, on the handbook (handbook.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from handbook import DOC, FIXTURES

from proxy_pointer import Index
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.llm import ScriptedLLM


def _summary(prompt: str) -> str:
    """Summarizes a section as a fixed phrase per title, so a summary can be searched for."""
    section = prompt.splitlines()[1]
    word = "zanzibar" if "Seals" in section else "ordinary"
    return f"A {word} overview of {section}."


def test_llm_summaries_are_extra_proxies_cached_by_content(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from proxy_pointer.errors import ConfigError
    from proxy_pointer.parse.chunking import ChunkConfig

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "docs"
    root.mkdir()
    (root / DOC).write_text((FIXTURES / DOC).read_text())
    llm = ScriptedLLM(_summary, model_id="summarizer", input_tokens=50, output_tokens=10)
    config = ChunkConfig(summaries=True)
    idx = Index.build([root], embedder=HashEmbedder(256), chunk_config=config, index_llm=llm)
    plain = Index.build([root], embedder=HashEmbedder(256))
    sections = {c.node_id for c in plain.reader.chunks}
    assert len(llm.prompts) == len(sections)  # one call per section with text
    assert len(idx.reader.chunks) == len(plain.reader.chunks) + len(sections)
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
