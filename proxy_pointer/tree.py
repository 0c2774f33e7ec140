"""Skeleton tree: the heading structure of a Markdown document, built without an LLM.

Line numbers
------------
Inside the library every line number is **0-based and half-open**: a node whose ``start`` is
3 and ``end`` is 7 covers lines 3, 4, 5 and 6 of ``Tree.lines``. Whenever a line number is
shown to a person (CLI output, citations, ``Section.start_line``), it is **1-based and
inclusive**: the same node is "lines 4-7". Lines are split the way CommonMark splits them
(``\\n``, ``\\r\\n`` or ``\\r``) and keep their endings, so ``"".join(tree.lines)`` is the input.

Each node has three ranges:

* heading: ``[start, body_start)`` - the heading line (two lines for a setext heading);
* own text: ``[start, own_end)`` - up to the next heading of any level;
* subtree: ``[start, end)`` - up to the next heading of the same or a higher level.

Text before the first heading is a *preamble* node (``node_id`` ``"preamble"``, level 0),
so no line is ever dropped and the heading nodes keep PageIndex's ids ``"0000"``, ``"0001"``…
in pre-order.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

__all__ = ["PREAMBLE_ID", "Node", "Tree", "build_tree", "split_lines"]

PREAMBLE_ID = "preamble"

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines as CommonMark does, keeping each line's ending."""
    return _LINE_RE.findall(text)


@dataclass(frozen=True)
class Node:
    """One heading (or the preamble) of a document.

    ``start``, ``body_start``, ``own_end`` and ``end`` are 0-based half-open line numbers
    (see the module docstring). ``children`` holds the child node ids in document order.
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

    @property
    def is_preamble(self) -> bool:
        return self.node_id == PREAMBLE_ID

    @property
    def display_range(self) -> tuple[int, int]:
        """The subtree's lines as shown to people: 1-based, inclusive."""
        return self.start + 1, self.end


@dataclass
class Tree:
    """A document's skeleton: its lines and its nodes in pre-order (preamble first)."""

    doc_id: str
    lines: list[str]
    nodes: list[Node]
    title: str
    warnings: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._by_id = {n.node_id: n for n in self.nodes}

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

    def slice(self, start: int, end: int) -> str:
        """The source text of lines ``[start, end)`` (0-based, half-open)."""
        return "".join(self.lines[start:end])

    def own_text(self, node: Node | str) -> str:
        n = self.get(node) if isinstance(node, str) else node
        return self.slice(n.start, n.own_end)

    def section_text(self, node: Node | str) -> str:
        n = self.get(node) if isinstance(node, str) else node
        return self.slice(n.start, n.end)

    def breadcrumb(self, node: Node | str) -> tuple[str, ...]:
        """Document title followed by the node's path, without repeating the title."""
        n = self.get(node) if isinstance(node, str) else node
        if n.path and n.path[0] == self.title:
            return n.path
        return (self.title, *n.path)

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


# --- building ---------------------------------------------------------------------------
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table")
    md.use(front_matter_plugin)
    return md


_MD = _parser()


def plain_text(inline: Token) -> str:
    """Reduce an inline token to its plain text (markup, HTML tags and link targets dropped)."""
    parts: list[str] = []
    for child in inline.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


def build_tree(text: str, doc_id: str = "document") -> Tree:
    """Parse ``text`` (Markdown) into its skeleton :class:`Tree`.

    Only top-level ATX and setext headings count: ``#`` lines in code, HTML blocks, front
    matter, lists or block quotes do not. Never raises on Markdown content; problems such as
    an unclosed code fence are listed in ``Tree.warnings``.
    """
    lines = split_lines(text)
    parse_src = text[1:] if text.startswith("\ufeff") else text
    tokens = _MD.parse(parse_src)
    warnings: list[str] = []

    headings: list[tuple[int, int, int, str, str]] = []  # start, body_start, level, raw, plain
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.level == 0 and tok.map:
            inline = tokens[i + 1]
            raw = inline.content.strip()
            headings.append((tok.map[0], tok.map[1], int(tok.tag[1]), raw, plain_text(inline)))
        elif tok.type == "fence" and tok.map and tok.map[1] >= len(lines):
            if not _fence_closed(lines[tok.map[0] : tok.map[1]], tok.markup):
                warnings.append(
                    f"{doc_id}: line {tok.map[0] + 1}: code fence {tok.markup!r} is never closed; "
                    "the rest of the document is treated as code"
                )

    return _assemble(doc_id, lines, headings, warnings, _front_matter_title(tokens))


def _fence_closed(block: list[str], markup: str) -> bool:
    if len(block) < 2:
        return False
    last = block[-1].strip()
    return len(last) >= len(markup) and set(last) == {markup[0]}


def _front_matter_title(tokens: list[Token]) -> str | None:
    if tokens and tokens[0].type == "front_matter":
        m = re.search(r"^title:\s*(.+?)\s*$", tokens[0].content, re.M)
        if m:
            return m.group(1).strip("'\"")
    return None


def _assemble(
    doc_id: str,
    lines: list[str],
    headings: list[tuple[int, int, int, str, str]],
    warnings: list[str],
    fm_title: str | None,
) -> Tree:
    n_lines = len(lines)
    nodes: list[dict] = []
    first = headings[0][0] if headings else n_lines
    if first > 0:
        nodes.append(
            dict(node_id=PREAMBLE_ID, raw_title="", title="", level=0, path=(), start=0,
                 body_start=0, own_end=first, end=first, parent_id=None, children=[])
        )
    stack: list[dict] = []  # open heading nodes, shallowest first
    for k, (start, body_start, level, raw, plain) in enumerate(headings):
        own_end = headings[k + 1][0] if k + 1 < len(headings) else n_lines
        while stack and stack[-1]["level"] >= level:
            stack.pop()["end"] = start
        parent = stack[-1] if stack else None
        node = dict(
            node_id=f"{k:04d}", raw_title=raw, title=plain, level=level,
            path=(*(parent["path"] if parent else ()), plain), start=start,
            body_start=body_start, own_end=own_end, end=n_lines,
            parent_id=parent["node_id"] if parent else None, children=[],
        )
        if parent:
            parent["children"].append(node["node_id"])
        stack.append(node)
        nodes.append(node)
    frozen = [Node(**{**d, "children": tuple(d["children"])}) for d in nodes]
    return Tree(doc_id=doc_id, lines=lines, nodes=frozen,
                title=_doc_title(doc_id, frozen, fm_title), warnings=warnings)


def _doc_title(doc_id: str, nodes: list[Node], fm_title: str | None) -> str:
    """Front-matter title, else the single shallowest heading when it opens the text, else the id."""
    if fm_title:
        return fm_title
    heads = [n for n in nodes if not n.is_preamble]
    if heads:
        top = min(n.level for n in heads)
        tops = [n for n in heads if n.level == top]
        if len(tops) == 1 and tops[0] is heads[0] and tops[0].title:
            return tops[0].title
    return doc_id


def replace(node: Node, **changes) -> Node:
    """A copy of ``node`` with some fields changed (nodes are frozen)."""
    return dataclasses.replace(node, **changes)
