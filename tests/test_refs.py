"""Refs (`proxy_pointer.refs`): one spelling per ref, and every ref that search or an outline
hands out opens through every interface: ``Index.section``, ``Service.section_by_ref``,
HTTP ``/sections?ref=``, MCP ``get_section`` and ``proxy-pointer section``.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from proxy_pointer.cli import main
from proxy_pointer.embeddings import HashEmbedder
from proxy_pointer.errors import ConfigError, NotFoundError
from proxy_pointer.index import Index, update_directory
from proxy_pointer.parse.chunking import ChunkConfig
from proxy_pointer.parse.tree import Node, Tree, build_tree, split_lines
from proxy_pointer.refs import Ref, SectionText, open_ref
from proxy_pointer.search.sections import Section
from proxy_pointer.serve.service import Service

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample" / "docs"
HAS_HTTP = all(importlib.util.find_spec(m) is not None for m in ("fastapi", "httpx"))
HAS_MCP = importlib.util.find_spec("mcp") is not None

#: A short document without headings: under ``min_section_chars`` of text, so it is cut into
#: sliding windows (node id None) whose refs are line ranges.
SHORT = ("Quokka rotations at the zanzibar lighthouse\n"
         "happen every fortnight, keepers say.\n")
_TOPICS = {
    "harbor": "The harbor pilots guide container ships past the breakwater at high tide, "
              "reading buoys, tugboats and channel depth soundings before each berth.",
    "orchard": "The orchard growers prune apple trees in late winter, graft new cultivars "
               "onto rootstock and thin blossoms so the fruit sizes evenly before harvest.",
    "observatory": "The observatory astronomers calibrate the telescope mirror at dusk, track "
                   "variable stars through the night and log spectra of distant galaxies.",
}
#: A longer document without headings: three topics, so three topical segments (nodes).
LONG = "\n\n".join(" ".join([s] * 3) + f" Note {name} {i}."
                   for name, s in _TOPICS.items() for i in range(4)) + "\n"
QUESTIONS = [
    "Which dataset is used for Nepali named entity recognition?",
    "How is the poem generated from an image?",
    "quokka rotations lighthouse keepers",
    "harbor pilots container ships breakwater tide",
    "orchard growers prune apple trees graft",
    "telescope mirror variable stars spectra",
]
FORM_HELP = ("doc_id#node_id", "L12-30", "p3-5")


# --- parsing and formatting ----------------------------------------------------------------
@pytest.mark.parametrize(("text", "doc_id", "node_id", "lines", "pages", "kind"), [
    ("paper.md#0003", "paper.md", "0003", None, None, "node"),
    ("paper.md#preamble", "paper.md", "preamble", None, None, "node"),
    ("papers/1908.05828.md#12345", "papers/1908.05828.md", "12345", None, None, "node"),
    ("notes/a.md#L12-30", "notes/a.md", None, (12, 30), None, "lines"),
    ("notes/a.md#L12", "notes/a.md", None, (12, 12), None, "lines"),
    ("scan.pdf#p3-5", "scan.pdf", None, None, (3, 5), "pages"),
    ("scan.pdf#p3", "scan.pdf", None, None, (3, 3), "pages"),
    ("my notes/C#/intro.md#0001", "my notes/C#/intro.md", "0001", None, None, "node"),
    ("a.md#L1-100000", "a.md", None, (1, 100000), None, "lines"),
])
def test_every_form_parses_and_formats_back(text: str, doc_id: str, node_id: str | None,
                                            lines: tuple[int, int] | None,
                                            pages: tuple[int, int] | None, kind: str) -> None:
    ref = Ref.parse(text)
    assert (ref.doc_id, ref.node_id, ref.lines, ref.pages, ref.kind) == (
        doc_id, node_id, lines, pages, kind)
    assert str(ref) == ref.format() == text
    assert Ref.parse(f"  {text}\n") == ref  # surrounding whitespace is not part of it
    assert Ref.of(doc_id, ref.fragment) == ref
    assert Ref(doc_id, node_id, lines, pages) == ref


@pytest.mark.parametrize("text", [
    "", "   ", "no-pointer", "#0003", "a.md#", "a.md#L0", "a.md#L012", "a.md#L30-12",
    "a.md#L12-12", "a.md#L12-", "a.md#L12 - 30", "a.md#L-3", "a.md#p0", "a.md#p3-3",
    "a.md #0003", "a.md#00 03", "a.md#L1a", "a.md#p2x",
])
def test_a_malformed_ref_is_a_config_error_naming_it_and_the_forms(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        Ref.parse(text)
    message = str(err.value)
    assert repr(text.strip()) in message or repr(text) in message
    assert all(form in message for form in FORM_HELP)


def test_a_ref_is_a_string() -> None:
    with pytest.raises(ConfigError, match="string"):
        Ref.parse(42)  # type: ignore[arg-type]


@pytest.mark.parametrize("parts", [
    {},  # none of node, lines, pages
    {"node_id": "0001", "lines": (1, 2)},
    {"lines": (0, 3)},
    {"lines": (5, 4)},
    {"pages": (1,)},
    {"lines": (1.0, 2.0)},
    {"node_id": "L12"},  # would read back as lines
    {"node_id": "p3"},
    {"node_id": "has space"},
    {"node_id": ""},
])
def test_refs_that_would_not_read_back_cannot_be_built(parts: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        Ref("a.md", **parts)
    with pytest.raises(ConfigError):
        Ref(" a.md", "0001")


_DOC_IDS = st.text(min_size=1, max_size=30).filter(lambda s: s == s.strip())
_NODE_IDS = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12).filter(
    lambda s: "#" not in s and not any(c.isspace() for c in s)
    and not (len(s) > 1 and s[0] in "Lp" and s[1] in "-0123456789"))
_SPANS = st.tuples(st.integers(1, 10**6), st.integers(0, 10**6)).map(lambda t: (t[0], t[0] + t[1]))
_REFS = st.one_of(
    st.builds(lambda d, n: Ref(d, n), _DOC_IDS, _NODE_IDS),
    st.builds(lambda d, s: Ref(d, lines=s), _DOC_IDS, _SPANS),
    st.builds(lambda d, s: Ref(d, pages=s), _DOC_IDS, _SPANS),
)


@given(_REFS)
def test_every_ref_reads_back_from_its_text(ref: Ref) -> None:
    assert Ref.parse(str(ref)) == ref
    assert Ref.of(ref.doc_id, ref.fragment) == ref


@given(st.text(alphabet="aLp0123456789٣#-. /", max_size=16))
def test_whatever_parses_has_exactly_the_spelling_it_was_read_from(text: str) -> None:
    try:
        ref = Ref.parse(text)
    except ConfigError:
        return
    assert str(ref) == text.strip()


def test_the_librarys_node_ids_never_read_as_lines_or_pages() -> None:
    trees = [build_tree(p.read_text(encoding="utf-8"), p.name) for p in SAMPLE.iterdir()]
    trees.append(build_tree("intro\n\n# A\n\ntext\n", "preamble.md"))
    ids = {n.node_id for t in trees for n in t.nodes}
    assert "preamble" in ids and "0000" in ids
    for node_id in ids:
        assert Ref.parse(f"d.md#{node_id}") == Ref("d.md", node_id)


# --- opening a ref in a tree ---------------------------------------------------------------
def test_open_a_node_lines_and_pages_in_a_tree() -> None:
    tree = build_tree("intro\n# Title\n\n## Part\none\ntwo\n", "doc.md")
    whole = open_ref(tree, Ref.parse("doc.md#0000"))
    assert whole == SectionText("doc.md", "0000", "Title", ("Title",), 2, 6,
                                "# Title\n\n## Part\none\ntwo\n", ref=Ref("doc.md", "0000"))
    part = open_ref(tree, Ref("doc.md", lines=(5, 6)))
    assert (part.node_id, part.title, part.path, part.text) == (
        None, "Part", ("Title", "Part"), "one\ntwo\n")
    assert part.to_dict()["ref"] == "doc.md#L5-6" and part.to_dict()["path"] == ["Title", "Part"]
    first = open_ref(tree, Ref.parse("doc.md#L1"))
    assert (first.text, first.title, first.path) == ("intro\n", "Title", ("Title",))
    with pytest.raises(NotFoundError, match="6 lines, so no line 7"):
        open_ref(tree, Ref("doc.md", lines=(6, 7)))
    with pytest.raises(NotFoundError, match="no section '0009'"):
        open_ref(tree, Ref("doc.md", "0009"))
    with pytest.raises(NotFoundError, match="has no pages"):
        open_ref(tree, Ref.parse("doc.md#p1"))


def test_open_pages_with_a_page_map() -> None:
    tree = build_tree("# Title\none\ntwo\n## Part\nthree\nfour\n", "r.pdf")
    starts = (1, 3, 5, 5)  # page 3 holds no line; page 4 starts at line 5
    p2 = open_ref(tree, Ref.parse("r.pdf#p2"), starts)
    assert (p2.start_line, p2.end_line, p2.text, p2.pages) == (3, 4, "two\n## Part\n", (2, 2))
    p4 = open_ref(tree, Ref.parse("r.pdf#p4"), starts)
    assert (p4.text, p4.title, p4.pages) == ("three\nfour\n", "Part", (4, 4))
    assert open_ref(tree, Ref.parse("r.pdf#p1-2"), starts).text.startswith("# Title")
    assert open_ref(tree, Ref.parse("r.pdf#0001"), starts).pages == (2, 4)
    assert open_ref(tree, Ref.parse("r.pdf#L5"), starts).to_dict()["pages"] == [4, 4]
    with pytest.raises(NotFoundError, match=r"page 3 of r\.pdf holds no text"):
        open_ref(tree, Ref.parse("r.pdf#p3"), starts)
    with pytest.raises(NotFoundError, match="has 4 pages, so no page 5"):
        open_ref(tree, Ref.parse("r.pdf#p4-5"), starts)


def test_a_node_that_exists_wins_over_the_range_its_id_spells() -> None:
    lines = split_lines("first\nsecond\nthird\n")
    odd = Node(node_id="L2", raw_title="odd", title="odd", level=1, path=("odd",), start=2,
               body_start=2, own_end=3, end=3)
    tree = Tree(doc_id="made-elsewhere.md", lines=lines, nodes=[odd], title="t")
    assert open_ref(tree, Ref.parse("made-elsewhere.md#L2")).text == "third\n"  # the node
    assert open_ref(tree, Ref.parse("made-elsewhere.md#L1-2")).text == "first\nsecond\n"


# --- every ref search hands out opens everywhere -------------------------------------------
@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample papers and two documents without headings, indexed (HashEmbedder(64));
    ``min_section_chars=100`` makes the short one fall back to sliding windows."""
    root = tmp_path_factory.mktemp("refs")
    docs = root / "docs"
    shutil.copytree(SAMPLE, docs)
    (docs / "notes").mkdir()
    (docs / "notes" / "short.md").write_text(SHORT, encoding="utf-8")
    (docs / "notes" / "long.md").write_text(LONG, encoding="utf-8")
    update_directory(root / "idx", [docs], embedder=HashEmbedder(64),
                     chunk_config=ChunkConfig(min_section_chars=100))
    return root


class Openers:
    """One ref opened through every interface, each answer as the HTTP payload."""

    def __init__(self, location: Path) -> None:
        self.location = location
        self.index = Index.load(location)
        self.service = Service(location, embedder=HashEmbedder(64))
        self.http: Any = None
        self.mcp: Any = None
        if HAS_HTTP:
            from fastapi.testclient import TestClient

            from proxy_pointer.serve.http import create_app

            self.http = TestClient(create_app(self.service), raise_server_exceptions=False)
        if HAS_MCP:
            from proxy_pointer.serve.mcp import build_server

            self.mcp = build_server(self.service)

    async def all(self, ref: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
        """The payload, after checking that every interface answers the same."""
        payload = self.index.section(ref).to_dict()
        assert self.service.section_by_ref(ref) == payload
        assert main(["section", "--index", str(self.location), ref, "--json"]) == 0
        assert json.loads(capsys.readouterr().out) == payload
        assert main(["section", "--index", str(self.location), ref]) == 0
        assert capsys.readouterr().out.rstrip("\n") == payload["text"].rstrip("\n")
        if self.http is not None:
            r = self.http.get("/sections", params={"ref": ref})
            assert r.status_code == 200, r.text
            assert r.json() == payload
            doc_id, _, fragment = ref.rpartition("#")
            assert self.http.get(f"/sections/{doc_id}/{fragment}").json() == payload
        if self.mcp is not None:
            result = await self.mcp.call_tool("get_section", {"ref": ref})
            assert json.loads(result.content[0].text) == payload
        return payload


@pytest.fixture(scope="module")
def openers(site: Path) -> Openers:
    return Openers(site / "idx")


async def test_every_outline_ref_opens_everywhere(openers: Openers,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    docs = [d["doc_id"] for d in openers.service.documents()]
    assert {"notes/short.md", "notes/long.md"} <= set(docs) and len(docs) == 6
    assert len(openers.index.reader.tree("notes/long.md").nodes) == 3  # topical segments
    seen = 0
    for doc_id in docs:
        tree = openers.index.reader.tree(doc_id)
        for node in openers.service.outline(doc_id)["nodes"]:
            got = await openers.all(node["ref"], capsys)
            assert got["text"] == tree.section_text(node["node_id"])
            assert (got["start_line"], got["end_line"]) == (node["start_line"], node["end_line"])
            assert (got["node_id"], got["title"]) == (node["node_id"], node["title"])
            seen += 1
    assert seen > 50


def _shown_in(section: Section, opened: str) -> bool:
    """Whether every line of ``section``'s text (its kept blocks, cut pieces and heading;
    ``[…]`` markers aside) is in ``opened``."""
    return all(line in opened for line in section.text.split("\n") if line != "[…]")


async def test_every_retrieved_ref_opens_everywhere_with_its_text(
        openers: Openers, capsys: pytest.CaptureFixture[str]) -> None:
    kinds = set()
    for question in QUESTIONS:
        for packing in ("evidence", "sections"):
            res = openers.index.retrieve(question, budget=600, k=6, packing=packing)
            assert res.sections, question
            for s in res.sections:
                got = await openers.all(s.ref, capsys)
                kinds.add((s.doc_id.startswith("notes/"), Ref.parse(s.ref).kind))
                assert got["doc_id"] == s.doc_id and got["start_line"] == s.start_line
                if s.node_id is None:  # a window: its ref is its lines
                    assert got["ref"] == s.ref == f"{s.doc_id}#L{s.start_line}-{s.end_line}"
                    assert got["end_line"] == s.end_line and s.text in got["text"]
                else:  # a node: its whole section (a section handed over as its own text
                    # ends earlier)
                    assert got["node_id"] == s.node_id and s.end_line <= got["end_line"]
                    if s.trimmed:
                        assert s.text.split("\n")[0] in got["text"]
                        assert _shown_in(s, got["text"])
                    else:
                        assert s.text in got["text"]
                for other in s.also_in:
                    assert (await openers.all(other, capsys))["text"]
    # windows of the short document and segments of the long one were both retrieved
    assert {(True, "lines"), (True, "node"), (False, "node")} <= kinds


async def test_unknown_or_malformed_refs_fail_alike_everywhere(
        openers: Openers, capsys: pytest.CaptureFixture[str]) -> None:
    n = len(openers.index.reader.tree("notes/short.md").lines)
    cases = [
        ("notes/short.md#L1-99", NotFoundError, 404, f"has {n} lines"),
        ("notes/short.md#0007", NotFoundError, 404, "no section '0007'"),
        ("notes/short.md#p1", NotFoundError, 404, "has no pages"),
        ("notes/missing.md#L1", NotFoundError, 404, "no document 'notes/missing.md'"),
        ("notes/short.md#L0", ConfigError, 400, "doc_id#node_id"),
        ("no-pointer", ConfigError, 400, "doc_id#node_id"),
    ]
    for ref, error, status, message in cases:
        with pytest.raises(error, match=message):
            openers.index.section(ref)
        with pytest.raises(error, match=message):
            openers.service.section_by_ref(ref)
        assert main(["section", "--index", str(openers.location), ref]) == 1
        out, err = capsys.readouterr()
        assert out == "" and err.startswith("proxy-pointer: error: ") and message in err
        assert len(err.strip().splitlines()) == 1
        if openers.http is not None:
            r = openers.http.get("/sections", params={"ref": ref})
            assert r.status_code == status and message in r.json()["error"]
        if openers.mcp is not None:
            from mcp.server.mcpserver.exceptions import ToolError

            with pytest.raises(ToolError, match=message):
                await openers.mcp.call_tool("get_section", {"ref": ref})


def test_doc_ids_resolve_without_their_suffix(openers: Openers) -> None:
    got = openers.index.section("notes/short#L1")
    assert got.ref == Ref("notes/short.md", lines=(1, 1)) and got.doc_id == "notes/short.md"
    assert openers.service.section_by_ref("notes/short#L1")["ref"] == "notes/short.md#L1"


# --- the reproduction --------------------------------------------------------------
@pytest.mark.skipif(not HAS_HTTP, reason="needs the serve extra")
@pytest.mark.parametrize("config", [ChunkConfig(), ChunkConfig(headerless="windows")],
                         ids=["default", "windows"])
def test_a_headerless_document_added_inline_opens_by_the_ref_query_gave(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: ChunkConfig) -> None:
    from fastapi.testclient import TestClient

    from proxy_pointer.serve.http import TOKEN_ENV, create_app

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    update_directory(tmp_path / "idx", [SAMPLE], embedder=HashEmbedder(64),
                     chunk_config=config)
    service = Service(tmp_path / "idx", embedder=HashEmbedder(64), refresh_seconds=0.0)
    client = TestClient(create_app(service, token="t0ken"), raise_server_exceptions=False)
    r = client.post("/index", headers={"Authorization": "Bearer t0ken"},
                    json={"documents": [{"doc_id": "notes/a.md", "text": SHORT}]})
    assert r.status_code == 200, r.text
    r = client.post("/query", json={"question": "quokka rotations zanzibar lighthouse",
                                    "doc_ids": ["notes/a.md"]})
    assert r.status_code == 200, r.text
    (hit,) = r.json()["contexts"]
    if config.headerless == "windows":
        assert hit["node_id"] is None and hit["ref"] == "notes/a.md#L1-2"
    r = client.get(f"/sections?ref={hit['ref'].replace('#', '%23')}")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"] == SHORT and body["ref"] == hit["ref"]
    assert (body["start_line"], body["end_line"]) == (hit["start_line"], hit["end_line"])
