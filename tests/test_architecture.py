"""The package's shape, as ARCHITECTURE.md states it: a stable public API, layers that only
import downwards, no reaching into another module's private names, modules of a readable size.
"""

from __future__ import annotations

import ast
import importlib
import re
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
    "DocumentError", "DocumentRecord", "Embedder", "EmbeddingError", "ExecutorError",
    "GeminiEmbedder",
    "GeminiLLM", "HashEmbedder", "Index", "IngestProgress", "IndexCorruptError", "IndexLockedError",
    "IndexMismatchError", "IndexNotFoundError", "NotFoundError", "LLMError", "LLMReply",
    "LexicalIndex", "LocalStore", "Manifest",
    "Node", "NoiseConfig", "OnnxEmbedder", "OpenAICompatibleLLM", "ProxyPointerError",
    "RecordingEmbedder", "Retrieval",
    "RetrievalConfig", "Retriever", "ScriptedLLM", "Section", "SentenceTransformerEmbedder",
    "SourceFile", "Synonyms",
    "Store", "StoreError", "MilvusStore", "Tree", "TreeConfig", "Tuning", "UpdateReport",
    "VectorIndexConfig", "__version__",
    "build_tree", "chunk_text", "chunk_tree", "classify_noise", "discover", "format_tree",
    "make_embedder", "make_llm", "read_document", "synthesize",
}

#: Layers from the bottom up, one entry per module (``pkg.mod`` inside a subpackage; a
#: subpackage's ``__init__`` is named by the package). A module may import its own layer and
#: the ones below: never a higher one, whether at import time, under ``TYPE_CHECKING`` or
#: inside a function.
LAYERS = [
    # protocols and leaves: no dependency on anything but errors
    {"errors", "package", "defaults", "access", "tokens", "remote.retry", "remote", "bundled",
     "llm.base",
     "llm.scripted",
     "embeddings.base", "embeddings.cpu", "stores.analyzer", "stores.bm25",
     "convert.base", "convert.numbering", "convert.markdown",
     "convert.pdf.lines", "convert.pdf.tables", "parse.periods", "parse.cards",
     "vocab.phrases", "vocab.filings", "vocab.synonyms", "vocab.understanding", "vocab",
     "vocab.keys", "text.rows", "text.pages", "text", "parse.splitting"},
    {"convert.pdf.layout", "convert.pdf.contents", "convert.pdf.filing"},
    {"convert.pdf.converter", "convert.pdf", "convert.html", "convert.docx", "convert",
     "documents", "parse.tree", "parse.headings", "refs", "parse"},
    {"parse.noise", "parse.blocks", "parse.chunking", "parse.segmentation", "parse.summaries"},
    {"stores.lexical", "stores.vectors", "remote.gemini",
     "embeddings.folder", "embeddings.hashing", "embeddings.recording", "embeddings.onnx",
     "embeddings.bf16", "embeddings.sentence_transformers",
     "embeddings.static", "embeddings.gemini", "embeddings.cache", "embeddings.crumbs",
     "embeddings.factory",
     "embeddings", "llm.gemini", "llm.openai_compatible", "llm.factory", "llm"},
    {"stores.records", "stores.segments", "stores.base", "stores.writer", "stores.disk",
     "stores.staging", "stores.local",
     "stores.milvus.search", "stores.milvus.segment", "stores.milvus.schema",
     "stores.milvus.store", "stores.milvus",
     "stores"},
    # the request rules, and the reader retrieval is written against
    {"search.config", "search.derived", "search.corpus", "search.question", "search"},
    {"search.sections"},  # the result type, read by everything above
    {"search.ranking", "search.rerank", "search.routing", "search.statements",
     "search.refine", "search.coverage"},
    {"search.packing"},
    # ranking steps with one signature, run in order by the retriever; which filing answers
    {"search.steps", "search.choice"},
    {"search.retrieval"},
    {"search.synthesis"},
    {"ingest.parsing", "ingest.executor", "ingest.ray", "ingest.pipeline", "ingest.factory",
     "ingest", "cli.progress", "cli.options"},
    {"index"},  # the writer; its retrieve/ask call the layers below
    {"serve.service", "serve.adapters", "serve"},
    {"cli.commands", "cli.servers", "cli", "cli.__main__", "langchain", "llama_index",
     "serve.http.app", "serve.http", "serve.http.routes", "serve.http.models", "serve.http.auth",
     "serve.http.guard", "serve.mcp", "__init__"},
]


BENCHMARKS = PACKAGE.parent / "benchmarks"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def _benchmark_modules() -> list[Path]:
    """The benchmarks' own code (not the scratch copies they write under ``.work``)."""
    return sorted(p for p in BENCHMARKS.rglob("*.py")
                  if not {"__pycache__", ".work"} & set(p.relative_to(BENCHMARKS).parts))


def _name(path: Path) -> str:
    """A module's name under proxy_pointer: ``index``, ``stores.base``, ``stores`` (its
    ``__init__``), ``__init__`` (the package's)."""
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts)


def _layer(name: str) -> int:
    for i, layer in enumerate(LAYERS):
        if name in layer:
            return i
    raise AssertionError(f"module {name!r} is in no layer: add it to LAYERS and ARCHITECTURE.md")


def _imports(path: Path, tree: ast.Module, names: set[str]) -> set[str]:
    """Every proxy_pointer module that ``path`` imports, wherever the import statement is."""
    package = list(path.relative_to(PACKAGE).parent.parts)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name.removeprefix("proxy_pointer.") for a in node.names
                      if a.name.startswith("proxy_pointer.")}
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level == 0:
            parts = (node.module or "").split(".")
            if parts[0] != "proxy_pointer":
                continue
            base = parts[1:]
        else:
            base = package[:len(package) - (node.level - 1)] + (
                node.module.split(".") if node.module else [])
        for alias in node.names:  # `from . import defaults` names a module
            as_module = ".".join([*base, alias.name])
            found.add(as_module if as_module in names else ".".join(base) or "__init__")
    return {m for m in found if m in names}


def _graph() -> dict[str, set[str]]:
    paths = {_name(p): p for p in _modules()}
    return {name: _imports(p, ast.parse(p.read_text(encoding="utf-8")), set(paths)) - {name}
            for name, p in paths.items()}


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
        if parts[-1:] == ["__main__"]:  # importing it runs the program
            continue
        if parts == ["langchain"]:
            pytest.importorskip("langchain_core")
        if parts == ["llama_index"]:
            pytest.importorskip("llama_index.core")
        if parts == ["serve", "mcp"]:
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


def test_layers_only_import_downwards() -> None:
    problems = [f"{here} imports higher layer {target}"
                for here, targets in _graph().items() for target in sorted(targets)
                if _layer(target) > _layer(here)]
    assert problems == []


def test_no_import_circles() -> None:
    """No two modules import each other, directly or through others (Tarjan's SCCs)."""
    graph = _graph()
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(v: str) -> None:
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in graph:
        if v not in order:
            visit(v)
    assert circles == []


def test_no_private_names_cross_modules() -> None:
    problems = []
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.level == 0 or node.module):
                problems += [f"{path.name}: imports private {node.module}.{a.name}"
                             for a in node.names
                             if a.name.startswith("_") and not a.name.startswith("__")]
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


def _repository_modules() -> list[Path]:
    """Every Python module of the repository: the package, its tests and its benchmarks."""
    root = PACKAGE.parent
    return sorted(p for d in ("proxy_pointer", "tests", "benchmarks")
                  for p in (root / d).rglob("*.py")
                  if not {"__pycache__", ".work"} & set(p.relative_to(root).parts))


def test_no_module_is_a_grab_bag() -> None:
    """No module over 600 lines anywhere: package, tests, benchmarks."""
    root = PACKAGE.parent
    sizes = {str(p.relative_to(root)): len(p.read_text().splitlines())
             for p in _repository_modules()}
    assert {name: n for name, n in sizes.items() if n > 600} == {}


#: The benchmark scripts' folders, by what they measure.
BENCHMARK_KINDS = ("quality", "speed", "robustness")


def _benchmark_scripts() -> dict[str, Path]:
    """``module name -> path`` of every benchmark script (the kinds' modules and
    ``run_benchmark``), not the shared helpers (``common``, ``harness``)."""
    found = {f"benchmarks.{kind}.{p.stem}": p for kind in BENCHMARK_KINDS
             for p in (BENCHMARKS / kind).glob("*.py") if p.stem != "__init__"}
    found["benchmarks.run_benchmark"] = BENCHMARKS / "run_benchmark.py"
    return found


def test_benchmarks_are_sorted_by_kind_and_no_script_imports_another() -> None:
    """``benchmarks/`` keeps at most 12 top-level modules (the scripts live in
    ``quality/``, ``speed/`` and ``robustness/``); a script imports the shared helpers
    (``common``, ``harness``), never another script."""
    top = sorted(p.name for p in BENCHMARKS.glob("*.py"))
    assert len(top) <= 12, top
    scripts = _benchmark_scripts()
    crossing = []
    for name, path in scripts.items():
        package = name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            crossing += [f"{name} imports {t}" for t in targets if t in scripts and t != name]
    assert crossing == []


def test_benchmark_results_hold_one_folder_per_benchmark() -> None:
    """``benchmarks/results/`` holds folders only (one per benchmark, its latest result;
    ``notes/`` for the written analyses), and its README."""
    loose = sorted(p.name for p in (BENCHMARKS / "results").iterdir()
                   if p.is_file() and p.name != "README.md")
    assert loose == []


def test_no_module_binds_a_top_level_name_twice() -> None:
    """A second binding silently wins (ranking.py once had two ``_WORD`` patterns, and
    ``title_words`` read the later one), in the package and in the benchmarks alike."""
    twice = []
    for path in _modules() + _benchmark_modules():
        seen: set[str] = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign):
                names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                names = [node.target.id]
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names = [node.name]
            else:
                continue
            twice += [f"{path.relative_to(PACKAGE.parent)}:{n}" for n in names if n in seen]
            seen.update(names)
    assert twice == []


def test_no_function_is_a_grab_bag() -> None:
    """A function that does one thing reads in one screen: none over 80 lines, in the
    package or in the benchmarks."""
    long = {}
    for path in _modules() + _benchmark_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > 80:
                    long[f"{path.relative_to(PACKAGE.parent)}:{node.name}"] = lines
    assert long == {}


def test_the_root_holds_entry_points_and_shared_modules_only() -> None:
    """Stages live in their packages; the root keeps at most 12 modules (the public entry
    points and the few modules every layer uses)."""
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= 12, root


def test_benchmarks_do_not_edit_the_import_path() -> None:
    """The benchmarks are a package run with ``python -m benchmarks.X`` from the root; none
    reaches for another checkout by editing ``sys.path``."""
    edits = [f"{p.relative_to(BENCHMARKS)}:{node.lineno}"
             for p in _benchmark_modules()
             for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
             if isinstance(node, ast.Attribute) and node.attr == "path"
             and isinstance(node.value, ast.Name) and node.value.id == "sys"]
    assert edits == []


def _documented_layers() -> dict[str, int]:
    """``module -> layer`` as ARCHITECTURE.md's layer table states it: each row's layer
    number and the modules it names by path (``parse/noise.py``, ``stores/__init__.py``)."""
    text = (PACKAGE.parent / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("## Layers, bottom up, by stage", 1)[1].split("\n## ", 1)[0]
    found: dict[str, int] = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].isdigit():
            continue
        for path in re.findall(r"`([\w/]+\.py)`", cells[1]):
            name = _name(PACKAGE / path)
            assert name not in found, f"ARCHITECTURE.md names {path} twice"
            found[name] = int(cells[0])
    return found


def test_architecture_md_states_the_layers_this_test_enforces() -> None:
    """The layer table in ARCHITECTURE.md is checked against LAYERS: every module, at its
    layer, and nothing else."""
    enforced = {name: i for i, layer in enumerate(LAYERS) for name in layer}
    assert set(enforced) == {_name(p) for p in _modules()}, "LAYERS misses or invents modules"
    assert _documented_layers() == enforced
