"""Fixtures shared by several test modules: indexes of the test documents, the LLM stand-in
servers (tests/gemini_server.py, tests/openai_server.py) and an environment without LLM keys.

A module that defines a fixture of the same name (``index``, ``gemini``) uses its own."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from gemini_server import FakeGemini
from handbook import FIXTURES
from openai_server import FakeOpenAIServer

from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.index import Index, update_directory

#: Three small Markdown documents (harbor, observatory, orchard) written for these tests.
INDEX_DOCS = Path(__file__).parent / "fixtures" / "index" / "docs"


@pytest.fixture
def no_token_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No HTTP update token from the environment (``$PROXY_POINTER_TOKEN``)."""
    from proxy_pointer.serve.http import TOKEN_ENV

    monkeypatch.delenv(TOKEN_ENV, raising=False)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """A writable copy of the three fixture documents."""
    out = tmp_path / "docs"
    shutil.copytree(INDEX_DOCS, out)
    return out


@pytest.fixture
def saved(docs: Path, tmp_path: Path) -> Path:
    """A committed index of the three fixture documents (HashEmbedder(64))."""
    target = tmp_path / "idx"
    update_directory(target, [docs], embedder=HashEmbedder(64))
    return target


@pytest.fixture(scope="module")
def index() -> Index:
    """The pump-station handbook (tests/fixtures/ranking, see handbook.py), HashEmbedder(256)."""
    return Index.build([FIXTURES], embedder=HashEmbedder(256))


# --- LLMs: the local stand-in servers, and no real keys -------------------------------------
@pytest.fixture
def no_ambient_keys(monkeypatch):
    """No LLM keys or endpoints from the environment; a module opts in with
    ``pytestmark = pytest.mark.usefixtures("no_ambient_keys")``."""
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


# --- what the README's test command leaves to CI ------------------------------------------
#: Modules whose every test is slow: fast mode's offline distillation, Milvus Lite (a
#: server per test), Ray (a cluster per module), killed-writer cycles. ``.ci/run`` runs the
#: slow tests after the README's command (``-m slow``); the README's command skips them.
SLOW_MODULES = frozenset({"test_static_embedder.py", "test_milvus.py", "test_ray.py",
                          "test_crash_consistency.py"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark slow: the tests of :data:`SLOW_MODULES` and every Milvus Lite test or variant
    (its name or parameters say ``milvus``); others carry ``@pytest.mark.slow`` themselves
    (the real model end to end, the shared dev data)."""
    for item in items:
        if item.path.name in SLOW_MODULES or "milvus" in item.name.lower():
            item.add_marker(pytest.mark.slow)
