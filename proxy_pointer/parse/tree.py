"""Skeleton tree: the heading structure of a Markdown document, built without an LLM.

Line numbers
------------
Inside the library every line number is **0-based and half-open**: a node whose ``start`` is
3 and ``end`` is 7 covers lines 3, 4, 5 and 6 of ``Tree.lines``. Whenever a line number is
shown to a person (CLI output, citations, ``Section.start_line``), it is **1-based and
inclusive**: the same node is "lines 4-7". Lines are split the way CommonMark splits them
(``\\n``, ``\\r\\n`` or ``\\r``) and keep their endings, so ``"".join(tree.lines)`` is the input.

Each node has three ranges:

* heading: ``[start, body_start)`` - the heading line (two or more lines for a setext heading);
* own text: ``[start, own_end)`` - up to the next heading of any level;
* subtree: ``[start, end)`` - up to the next heading of the same or a higher level.

Text before the first heading is a *preamble* node (``node_id`` ``"preamble"``, level 0),
so no line is ever dropped and the heading nodes keep PageIndex's ids ``"0000"``, ``"0001"``…
in pre-order.

Headings are found by :mod:`proxy_pointer.parse.headings` with markdown-it-py's CommonMark block
parser, never with line regexes, so ``#`` lines inside code fences, HTML blocks, front
matter, lists and block quotes are not headings, while setext headings are. Regex parsers
(PageIndex's ``md_to_tree``, LangChain's ``MarkdownHeaderTextSplitter``) get these wrong;
``benchmarks/quality/pageindex_parity.py`` measures the difference on real documents.

Documents converted from PDF often mark headings only as a bold line or a numbered line, or
flatten every heading to one level. ``TreeConfig(recover_headings=True)`` promotes such lines
and re-levels flattened numbered headings; it is off by default because it guesses.

This module turns the headings into nodes and owns the tree's JSON and PageIndex exports.
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import posixpath
import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError, DocumentError, IndexCorruptError
from ..text.pages import page_label, page_span
from .headings import Heading, find_headings

__all__ = [
    "MAX_LINE_CHARS",
    "PREAMBLE_ID",
    "TREE_FORMAT",
    "Node",
    "Tree",
    "TreeConfig",
    "build_tree",
    "format_tree",
    "split_lines",
    "wrap_long_lines",
]

PREAMBLE_ID = "preamble"


#: ``format`` value of :meth:`Tree.to_dict` output; bumped when the layout changes.
TREE_FORMAT = "proxy-pointer-tree/1"

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines as CommonMark does, keeping each line's ending.

    ``"".join(split_lines(text)) == text``; an empty text has no lines.
    """
    return _LINE_RE.findall(text)


#: The most characters a line keeps; a longer one is wrapped when parsed
#: (:func:`wrap_long_lines`), so that every per-line step (token counts, the pieces a packer
#: cuts a line into, line terms) costs a bounded amount whatever the file.
MAX_LINE_CHARS = 20_000


def wrap_long_lines(text: str, most: int = MAX_LINE_CHARS) -> tuple[str, tuple[int, ...]]:
    """``text`` with each line longer than ``most`` characters wrapped into lines of at
    most ``most``, and the offsets (in ``text``) where a line break was inserted.

    A line is broken at the last space or tab of the second half of each window, which
    becomes the line break (offsets hold: a soft break in Markdown); a window without one
    gets a line break inserted at its end, whose offset is returned. Text without long lines
    comes back as it is.
    """
    if len(text) <= most:
        return text, ()
    lines = split_lines(text)
    if all(len(line) <= most for line in lines):
        return text, ()
    out: list[str] = []
    inserted: list[int] = []
    at = 0
    for line in lines:
        pos, n = 0, len(line)
        while n - pos > most:
            end = pos + most
            cut = max(line.rfind(" ", pos + most // 2, end), line.rfind("\t", pos + most // 2, end))
            if cut >= 0:
                out.append(line[pos:cut] + "\n")
                pos = cut + 1
            else:
                out.append(line[pos:end] + "\n")
                inserted.append(at + end)
                pos = end
        out.append(line[pos:])
        at += n
    return "".join(out), tuple(inserted)


@dataclass(frozen=True)
class Node:
    """One heading (or the preamble) of a document.

    ``start``, ``body_start``, ``own_end`` and ``end`` are 0-based half-open line numbers
    (see the module docstring). ``raw_title`` is the heading's inline source as written
    (``**Free Cash Flow**``; setext lines joined by one space), ``title`` its plain text.
    ``children`` holds the child node ids in document order. ``recovered`` is true for a
    bold or numbered line that ``TreeConfig(recover_headings=True)`` promoted to a heading.
    """

    node_id: str
    raw_title: str
    title: str
    level: int
    path: tuple[str, ...]
    start: int
    body_start: int
    own_end: int
    end: int
    parent_id: str | None = None
    children: tuple[str, ...] = ()
    recovered: bool = False

    @property
    def is_preamble(self) -> bool:
        return self.node_id == PREAMBLE_ID

    @property
    def display_range(self) -> tuple[int, int]:
        """The subtree's lines as shown to people: 1-based, inclusive."""
        return self.start + 1, self.end

    @property
    def display_own_range(self) -> tuple[int, int]:
        """The node's own lines (up to the next heading) as shown to people: 1-based, inclusive."""
        return self.start + 1, self.own_end


@dataclass(frozen=True, kw_only=True)
class TreeConfig:
    """How :func:`build_tree` finds headings.

    ``recover_headings`` (off by default) promotes lines that a PDF converter left as plain
    paragraphs: a one-line paragraph that is entirely bold (``**Company Overview**``) or that
    starts with section numbering (``2.1.3 Training``, ``Chapter 2``, ``ANNEX TABLE A2.1.1``,
    ``**Item 1A. Risk Factors.**``), at most ``max_recovered_title_chars`` characters of
    plain text and not ending in ``:`` (a label) or, unless bold, in sentence punctuation.
    It also re-levels numbered headings by their numbering depth when a converter gave
    ``1``, ``1.1`` and ``1.1.1`` the same ``#`` level. The trade-off: a bold one-line
    paragraph that is only emphasis becomes a (small) section of its own.

    Raises :class:`ConfigError` for a non-positive ``max_recovered_title_chars``.
    """

    recover_headings: bool = False
    max_recovered_title_chars: int = 120

    def __post_init__(self) -> None:
        if self.max_recovered_title_chars < 1:
            raise ConfigError(
                "max_recovered_title_chars must be a positive number of characters, "
                f"got {self.max_recovered_title_chars}"
            )

    def to_dict(self) -> dict[str, Any]:
        """The settings as a JSON-ready dict (for an index manifest)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TreeConfig:
        """Settings from :meth:`to_dict` output; raises :class:`ConfigError` on unknown keys."""
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ConfigError(f"unknown tree settings: {', '.join(sorted(unknown))}")
        return cls(**data)


@dataclass(eq=False)
class Tree:
    """A document's skeleton: its lines and its nodes in pre-order (preamble first).

    ``title`` is the document title: the front-matter ``title``, else the single shallowest
    heading when it is the first heading, else ``doc_id``. ``warnings`` lists problems found
    while parsing (an unclosed code fence); they never stop the build. Two trees are equal
    when their doc id, lines, nodes and title are equal.
    """

    doc_id: str
    lines: list[str]
    nodes: list[Node]
    title: str
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_id = {n.node_id: n for n in self.nodes}
        self._starts = [n.start for n in self.nodes]

    # --- access -------------------------------------------------------------------------
    def get(self, node_id: str) -> Node:
        """The node with this id; raises ``KeyError`` if there is none."""
        return self._by_id[node_id]

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._by_id

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    @property
    def text(self) -> str:
        return "".join(self.lines)

    @property
    def heading_nodes(self) -> list[Node]:
        return [n for n in self.nodes if not n.is_preamble]

    @property
    def has_headings(self) -> bool:
        return any(not n.is_preamble for n in self.nodes)

    @property
    def roots(self) -> list[Node]:
        return [n for n in self.nodes if n.parent_id is None]

    def node_at(self, line: int) -> Node:
        """The node whose own text holds 0-based ``line``.

        Raises ``IndexError`` for a line outside the text.
        """
        if not 0 <= line < len(self.lines):
            raise IndexError(f"line {line} is outside {self.doc_id} ({len(self.lines)} lines)")
        return self.nodes[bisect_right(self._starts, line) - 1]

    def slice(self, start: int, end: int) -> str:
        """The source text of lines ``[start, end)`` (0-based, half-open)."""
        return "".join(self.lines[start:end])

    def own_text(self, node: Node | str) -> str:
        """The node's own source text, heading line included, up to the next heading."""
        n = self.get(node) if isinstance(node, str) else node
        return self.slice(n.start, n.own_end)

    def section_text(self, node: Node | str) -> str:
        """The node's whole subtree as source text."""
        n = self.get(node) if isinstance(node, str) else node
        return self.slice(n.start, n.end)

    def breadcrumb(self, node: Node | str) -> tuple[str, ...]:
        """Document title followed by the node's path, without repeating the title."""
        n = self.get(node) if isinstance(node, str) else node
        if n.path and n.path[0] == self.title:
            return n.path
        return (self.title, *n.path)

    def subtree(self, node_id: str) -> list[str]:
        """``node_id`` and every node below it, depth first."""
        out, stack = [], [node_id]
        while stack:
            n = stack.pop()
            out.append(n)
            stack.extend(self.get(n).children)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Tree):
            return NotImplemented
        return (self.doc_id, self.lines, self.nodes, self.title) == (
            other.doc_id,
            other.lines,
            other.nodes,
            other.title,
        )

    __hash__ = None  # type: ignore[assignment]

    # --- export -------------------------------------------------------------------------
    def to_pageindex(self, doc_name: str | None = None,
                     pages: tuple[int, ...] = ()) -> dict[str, Any]:
        """The tree in the shape of PageIndex's ``md_to_tree`` (summaries and text off).

        Returns ``{"doc_name", "line_count", "structure"}`` where each structure node is
        ``{"title": raw title, "node_id", "line_num": 1-based heading line, "nodes": [...]}``
        (``nodes`` only when there are children); the preamble is left out, as PageIndex has
        no such node. ``doc_name`` defaults to the doc id's file name without extension and
        ``line_count`` counts lines as PageIndex does (line endings + 1). With ``pages``
        (a converted PDF's page map, ``Converted.page_starts``) each node also has PageIndex's
        PDF fields ``start_index`` and ``end_index``: the first and last 1-based page of its
        section with subsections.
        """
        if doc_name is None:
            doc_name = posixpath.splitext(posixpath.basename(self.doc_id.replace("\\", "/")))[0]
        built: dict[str, dict[str, Any]] = {}
        structure: list[dict[str, Any]] = []
        for n in self.nodes:
            if n.is_preamble:
                continue
            item: dict[str, Any] = {"title": n.raw_title, "node_id": n.node_id,
                                    "line_num": n.start + 1}
            span = page_span(pages, n.start + 1, n.end)
            if span is not None:
                item["start_index"], item["end_index"] = span
            built[n.node_id] = item
            if n.parent_id is None:
                structure.append(item)
            else:
                built[n.parent_id].setdefault("nodes", []).append(item)
        endings = sum(1 for line in self.lines if line.endswith(("\n", "\r")))
        return {"doc_name": doc_name, "line_count": endings + 1, "structure": structure}

    def to_dict(self, *, include_text: bool = True) -> dict[str, Any]:
        """The whole tree as a JSON-ready dict; :meth:`from_dict` reads it back.

        Nodes are a flat pre-order list with every field (0-based half-open lines). The text
        is stored under ``"text"`` unless ``include_text`` is false; ``text_sha256`` is always
        stored so that loading can check it was given the same text.
        """
        data: dict[str, Any] = {
            "format": TREE_FORMAT,
            "doc_id": self.doc_id,
            "title": self.title,
            "line_count": len(self.lines),
            "text_sha256": _sha256(self.text),
            "warnings": list(self.warnings),
            "nodes": [_node_to_dict(n) for n in self.nodes],
        }
        if include_text:
            data["text"] = self.text
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, text: str | None = None) -> Tree:
        """Load :meth:`to_dict` output; ``text`` is needed when it was saved without text.

        Raises :class:`IndexCorruptError` when ``data`` is not a tree in this format, and
        :class:`DocumentError` when the text is missing or is not the text the tree was
        built from (its SHA-256 differs).
        """
        try:
            if data.get("format") != TREE_FORMAT:
                raise ValueError(f"format is {data.get('format')!r}, expected {TREE_FORMAT!r}")
            doc_id = str(data["doc_id"])
            if text is None:
                text = data.get("text")
            if text is None:
                raise DocumentError(doc_id, "the tree was saved without its text; pass text=")
            if _sha256(text) != data["text_sha256"]:
                raise DocumentError(
                    doc_id, "text differs from the text the tree was built from (SHA-256 differs)"
                )
            lines = split_lines(text)
            nodes = [_node_from_dict(d, len(lines)) for d in data["nodes"]]
            _check_ids(nodes)
            tree = cls(doc_id=doc_id, lines=lines, nodes=nodes, title=str(data["title"]),
                       warnings=[str(w) for w in data["warnings"]])
        except DocumentError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise IndexCorruptError(f"not a proxy-pointer tree: {detail}") from exc
        return tree

    def to_json(self, *, include_text: bool = True, indent: int | None = None) -> str:
        """:meth:`to_dict` as a JSON string (UTF-8 characters kept as they are)."""
        return json.dumps(self.to_dict(include_text=include_text), ensure_ascii=False,
                          indent=indent)

    @classmethod
    def from_json(cls, source: str, *, text: str | None = None) -> Tree:
        """Load :meth:`to_json` output; raises as :meth:`from_dict`, and
        :class:`IndexCorruptError` for text that is not JSON."""
        try:
            data = json.loads(source)
        except json.JSONDecodeError as exc:
            raise IndexCorruptError(f"tree JSON does not parse: {exc}") from exc
        if not isinstance(data, dict):
            raise IndexCorruptError("tree JSON is not an object")
        return cls.from_dict(data, text=text)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _node_to_dict(n: Node) -> dict[str, Any]:
    # What dataclasses.asdict gives (fields in order), with lists for the tuples; written
    # out because asdict's deep copy is most of the cost of a tree's JSON.
    return {"node_id": n.node_id, "raw_title": n.raw_title, "title": n.title,
            "level": n.level, "path": list(n.path), "start": n.start,
            "body_start": n.body_start, "own_end": n.own_end, "end": n.end,
            "parent_id": n.parent_id, "children": list(n.children), "recovered": n.recovered}


_INT_FIELDS = ("level", "start", "body_start", "own_end", "end")


def _check_ids(nodes: list[Node]) -> None:
    """ValueError unless the ids are as built: an optional first preamble, then ``0000``,
    ``0001``... in order, every parent and child naming one of them (chunks and refs point
    at nodes by these ids)."""
    heads = nodes[1:] if nodes and nodes[0].is_preamble else nodes
    if [n.node_id for n in heads] != [f"{k:04d}" for k in range(len(heads))]:
        raise ValueError("node ids are not 'preamble', '0000', '0001', ... in order")
    ids = {n.node_id for n in nodes}
    if any((n.parent_id is not None and n.parent_id not in ids)
           or not ids.issuperset(n.children) for n in nodes):
        raise ValueError("a parent or child id names no node")


def _node_from_dict(d: Mapping[str, Any], n_lines: int) -> Node:
    for name in _INT_FIELDS:
        if type(d[name]) is not int:
            raise ValueError(f"node {d.get('node_id')!r}: {name} is not an integer")
    if not 0 <= d["start"] <= d["body_start"] <= d["own_end"] <= d["end"] <= n_lines:
        raise ValueError(f"node {d['node_id']!r}: line bounds out of order or past the text")
    return Node(
        node_id=str(d["node_id"]), raw_title=str(d["raw_title"]), title=str(d["title"]),
        level=d["level"], path=tuple(str(p) for p in d["path"]), start=d["start"],
        body_start=d["body_start"], own_end=d["own_end"], end=d["end"],
        parent_id=None if d["parent_id"] is None else str(d["parent_id"]),
        children=tuple(str(c) for c in d["children"]), recovered=bool(d.get("recovered", False)),
    )


# --- human-readable view -------------------------------------------------------------------
def format_tree(tree: Tree, noise: Mapping[str, str] | None = None, *,
                marks: Mapping[str, str] | None = None, pages: tuple[int, ...] = ()) -> str:
    """The tree as indented text for people, one node a line, with 1-based inclusive lines
    (and the pages of its own text, given a converted PDF's page map ``pages``).

    Each line shows the node id, its title and its own line range; a node with children also
    shows its subtree range. ``noise`` maps node ids to a label (``"contents"``) shown as
    ``[noise: contents]``; ``marks`` to a whole label shown as it is
    (``[short: 12 characters ...]``); recovered headings are marked ``[recovered]``.
    Warnings follow the tree. Returns the text without a final newline.
    """
    marks = {**{k: f"noise: {v}" for k, v in (noise or {}).items()}, **(marks or {})}
    n_heads = sum(1 for n in tree.nodes if not n.is_preamble)
    out = [f"{tree.doc_id}: {tree.title!r}, {len(tree.lines)} lines, {n_heads} headings"]
    if not tree.nodes:
        out.append("  (empty document)")
    depth: dict[str, int] = {}
    for n in tree.nodes:
        d = depth[n.parent_id] + 1 if n.parent_id is not None else 0
        depth[n.node_id] = d
        a, b = n.display_own_range
        title = "(preamble)" if n.is_preamble else (n.title or "(empty heading)")
        line = f"{'  ' * (d + 1)}{n.node_id}  {title}  lines {a}-{b}"
        if n.end > n.own_end:
            line += f" (subtree {n.start + 1}-{n.end})"
        span = page_span(pages, a, max(a, b))
        if span is not None:
            line += f"  {page_label(span)}"
        if n.recovered:
            line += "  [recovered]"
        if n.node_id in marks:
            line += f"  [{marks[n.node_id]}]"
        out.append(line)
    out.extend(f"warning: {w}" for w in tree.warnings)
    return "\n".join(out)


# --- building ----------------------------------------------------------------------------
def build_tree(
    text: str,
    doc_id: str = "document",
    *,
    recover_headings: bool | None = None,
    config: TreeConfig | None = None,
) -> Tree:
    """Parse ``text`` (Markdown) into its skeleton :class:`Tree`.

    Only top-level ATX and setext headings count: ``#`` lines in code, HTML blocks, front
    matter, lists or block quotes do not. A leading UTF-8 BOM is ignored for parsing and
    kept in ``Tree.lines``. ``recover_headings`` overrides ``config.recover_headings``
    (see :class:`TreeConfig`). Never raises on Markdown content; problems such as an
    unclosed code fence are listed in ``Tree.warnings``.

    >>> tree = build_tree("# Intro\\ntext\\n## Detail\\n", "a.md")
    >>> [(n.node_id, n.title, n.start, n.end) for n in tree]
    [('0000', 'Intro', 0, 3), ('0001', 'Detail', 2, 3)]
    """
    cfg = config or TreeConfig()
    if recover_headings is not None:
        cfg = dataclasses.replace(cfg, recover_headings=recover_headings)
    # markdown-it makes hundreds of thousands of small acyclic objects on a large file, and
    # each cyclic-GC pass re-scans the survivors: pausing it halves the time on a 20 MB file.
    # Reference counting still frees everything; collection resumes right after.
    paused = gc.isenabled()
    gc.disable()
    try:
        return _build(text, doc_id, cfg)
    finally:
        if paused:
            gc.enable()


def _build(text: str, doc_id: str, cfg: TreeConfig) -> Tree:
    lines = split_lines(text)
    outline = find_headings(text, lines, doc_id, recover=cfg.recover_headings,
                            max_recovered_title_chars=cfg.max_recovered_title_chars)
    return _assemble(doc_id, lines, outline.headings, outline.warnings,
                     outline.front_matter_title)


# --- assembling ----------------------------------------------------------------------------
def _assemble(
    doc_id: str,
    lines: list[str],
    headings: list[Heading],
    warnings: list[str],
    fm_title: str | None,
) -> Tree:
    n_lines = len(lines)
    nodes: list[dict[str, Any]] = []
    first = headings[0].start if headings else n_lines
    if first > 0:
        nodes.append(
            dict(node_id=PREAMBLE_ID, raw_title="", title="", level=0, path=(), start=0,
                 body_start=0, own_end=first, end=first, parent_id=None, children=[],
                 recovered=False)
        )
    stack: list[dict[str, Any]] = []  # open heading nodes, shallowest first
    for k, h in enumerate(headings):
        own_end = headings[k + 1].start if k + 1 < len(headings) else n_lines
        while stack and stack[-1]["level"] >= h.level:
            stack.pop()["end"] = h.start
        parent = stack[-1] if stack else None
        node: dict[str, Any] = dict(
            node_id=f"{k:04d}", raw_title=h.raw, title=h.plain, level=h.level,
            path=(*(parent["path"] if parent else ()), h.plain), start=h.start,
            body_start=h.body_start, own_end=own_end, end=n_lines,
            parent_id=parent["node_id"] if parent else None, children=[],
            recovered=h.recovered,
        )
        if parent:
            parent["children"].append(node["node_id"])
        stack.append(node)
        nodes.append(node)
    frozen = [Node(**{**d, "children": tuple(d["children"])}) for d in nodes]
    return Tree(doc_id=doc_id, lines=lines, nodes=frozen,
                title=_doc_title(doc_id, frozen, fm_title), warnings=warnings)


def _doc_title(doc_id: str, nodes: list[Node], fm_title: str | None) -> str:
    """Front-matter title, else the single shallowest heading if it opens the text, else the id."""
    if fm_title:
        return fm_title
    heads = [n for n in nodes if not n.is_preamble]
    if heads:
        top = min(n.level for n in heads)
        tops = [n for n in heads if n.level == top]
        if len(tops) == 1 and tops[0] is heads[0] and tops[0].title:
            return tops[0].title
    return doc_id
