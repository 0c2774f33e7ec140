"""The package's shape, as ARCHITECTURE.md states it: a stable public API, layers that only
import downwards, no reaching into another module's private names, modules of a readable size.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import proxy_pointer

PACKAGE = Path(proxy_pointer.__file__).parent

#: The public API. A name removed from (or added to) ``proxy_pointer.__all__`` must be
#: removed from (or added to) this list on purpose.
PUBLIC = {
    "LLM", "Answer", "CachedEmbedder", "Chunk", "ChunkConfig", "Citation", "ConfigError",
    "DocumentError", "DocumentRecord", "Embedder", "EmbeddingError", "GeminiEmbedder",
    "GeminiLLM", "HashEmbedder", "Index", "IngestProgress", "IndexCorruptError", "IndexLockedError",
    "IndexMismatchError", "LLMError", "LLMReply", "LexicalIndex", "LocalStore", "Manifest",
    "Node", "NoiseConfig", "OnnxEmbedder", "OpenAICompatibleLLM", "ProxyPointerError", "Retrieval",
    "RetrievalConfig", "Retriever", "Section", "SentenceTransformerEmbedder", "SourceFile",
    "Store", "StoreError", "MilvusStore", "Tree", "TreeConfig", "UpdateReport",
    "VectorIndexConfig", "__version__",
    "build_tree", "chunk_text", "chunk_tree", "classify_noise", "discover", "format_tree",
    "make_embedder", "make_llm", "read_document", "synthesize",
}

#: Layers from the bottom up: a module may import its own layer and the ones below.
LAYERS = [
    {"errors", "defaults", "tokens", "_retry"},
    {"documents", "tree", "headings", "refs"},
    {"noise", "blocks", "chunking", "segmentation", "summaries"},
    {"lexical", "vectors", "_gemini", "embeddings", "llm"},
    {"stores"},
    {"ingest", "distributed"},
    {"index"},
    {"derived", "ranking", "rerank"},
    {"packing"},
    {"retrieval"},
    {"synthesis"},
    {"service"},
    {"cli", "langchain", "llama_index", "serve", "mcp_server", "__init__"},
]
#: The deliberate exceptions: Index.retrieve / Index.ask are facades that import the
#: retrieval and synthesis layers when called, never at import time.
FACADES = {("index", "retrieval"), ("index", "synthesis")}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _top(path: Path) -> str:
    """The layer name of a module: its top-level module or subpackage under proxy_pointer."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def _layer(name: str) -> int:
    for i, layer in enumerate(LAYERS):
        if name in layer:
            return i
    raise AssertionError(f"module {name!r} is in no layer: add it to LAYERS and ARCHITECTURE.md")


def _imported(path: Path, node: ast.ImportFrom) -> str | None:
    """The top-level proxy_pointer module an ``ImportFrom`` names, if any."""
    if node.level == 0:
        parts = (node.module or "").split(".")
        return parts[1] if parts[0] == "proxy_pointer" and len(parts) > 1 else None
    depth = len(path.relative_to(PACKAGE).parts) - 1  # 0 for a module at the top
    if node.level - 1 < depth:  # relative import inside the same subpackage
        return _top(path)
    return (node.module or "").split(".")[0] or None


def _own_private_names(tree: ast.Module) -> set[str]:
    """Private attributes and methods that this module's own classes define."""
    names = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for node in ast.walk(cls):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
                  and isinstance(node.value, ast.Name) and node.value.id == "self"):
                names.add(node.attr)
            elif isinstance(node, ast.AnnAssign | ast.Assign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names.update(t.id for t in targets if isinstance(t, ast.Name))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_public_api_is_exactly_the_documented_names() -> None:
    assert set(proxy_pointer.__all__) == PUBLIC
    for name in proxy_pointer.__all__:
        assert getattr(proxy_pointer, name) is not None, name
    with pytest.raises(AttributeError):
        _ = proxy_pointer.no_such_name


def test_every_module_all_resolves_and_exports_no_private_name() -> None:
    for path in _modules():
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        if parts == ["langchain"]:
            pytest.importorskip("langchain_core")
        if parts == ["llama_index"]:
            pytest.importorskip("llama_index.core")
        if parts == ["mcp_server"]:
            pytest.importorskip("mcp")
        module = importlib.import_module(".".join(["proxy_pointer", *parts]))
        for name in getattr(module, "__all__", []):
            assert hasattr(module, name), f"{module.__name__}.__all__ names missing {name}"
            assert not name.startswith("_") or name == "__version__", (module.__name__, name)


def test_importing_the_package_and_cli_loads_no_heavy_dependency() -> None:
    code = ("import sys, proxy_pointer, proxy_pointer.cli; "
            "heavy = [m for m in ('numpy', 'torch', 'faiss', 'google.genai', 'httpx', "
            "'markdown_it', 'bm25s', 'tokenizers') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


def test_layers_only_import_downwards_and_no_private_names_cross_modules() -> None:
    problems = []
    for path in _modules():
        here = _top(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _imported(path, node)
            if target is None:
                continue
            if target != here and _layer(target) > _layer(here) and (here, target) not in FACADES:
                problems.append(f"{path.name}: imports higher layer {target}")
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and target != here:
                    problems.append(f"{path.name}: imports private {target}.{alias.name}")
        own = _own_private_names(tree)
        for node in ast.walk(tree):
            # obj._name where obj is not self/cls and _name is not a private name of this
            # module's own classes: reaching into another module's state.
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                    and not node.attr.startswith("__") and node.attr not in own
                    and not (isinstance(node.value, ast.Name)
                             and node.value.id in ("self", "cls"))):
                problems.append(f"{path.name}:{node.lineno}: accesses private .{node.attr}")
    assert problems == []


def test_no_module_is_a_grab_bag() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in _modules()}
    assert {name: n for name, n in sizes.items() if n > 600} == {}
