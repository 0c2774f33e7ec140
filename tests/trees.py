"""Tree helpers shared by test_tree.py and test_headings.py: the Markdown fixtures in
tests/fixtures/tree and outline views of a tree to compare."""

from __future__ import annotations

from pathlib import Path

from proxy_pointer.documents import read_document
from proxy_pointer.parse.tree import Tree, build_tree

__all__ = ["FIXTURES", "fixture_tree", "heads", "outline"]

FIXTURES = Path(__file__).parent / "fixtures" / "tree"


def heads(tree: Tree) -> list[tuple[int, int, str]]:
    """(1-based line, level, raw title) of every heading."""
    return [(n.start + 1, n.level, n.raw_title) for n in tree.heading_nodes]


def outline(structure: list[dict], depth: int = 0) -> list[tuple[int, int, str]]:
    """A PageIndex-shaped structure flattened to (line_num, depth, title)."""
    out = []
    for node in structure:
        out.append((node["line_num"], depth, node["title"]))
        out.extend(outline(node.get("nodes", []), depth + 1))
    return out


def fixture_tree(name: str, **kwargs) -> Tree:
    return build_tree(read_document(FIXTURES / name), name, **kwargs)
