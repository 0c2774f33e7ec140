"""Topical segments for documents without headings: sections where the author gave none.

A document with no heading is split into contiguous topical segments, rather than cut
into blind sliding windows, with TextTiling (Hearst, 1997), which needs no LLM and no
embedder, so it runs where documents are parsed: the text is tiled into blocks
(paragraphs: runs of non-blank lines with the blank lines after them); the gap between
two blocks scores the cosine of the word counts of the ``window`` blocks on either side;
a gap's *depth* is how far that similarity dips below the nearest peaks on both sides.
Gaps that are local peaks of depth and at least as deep as ``mean - std / 2`` of all
depths become boundaries, deepest first, as long as no segment falls under
``min_tokens``; a segment still over ``max_tokens`` is then split at its deepest remaining
gap.

Each segment becomes a level-1 node of the document's tree, titled with its opening
words and without a heading line (``start == body_start``), so it is chunked, pointed at
and sliced from the source exactly like a section.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..tokens import count_tokens_many
from .tree import Node, Tree

__all__ = ["SegmentConfig", "paragraphs", "segment_lines", "segmented_tree"]

_WORD = re.compile(r"[^\W\d_]{3,}")
_STOP = frozenset(
    "the and for that with this from are was were have has had not but its their they "
    "which these those been being into than then there also such can may will would "
    "our all any each other more most some only very about over under between".split()
)
_TITLE_WORDS = 8


@dataclass(frozen=True)
class SegmentConfig:
    """How headerless documents are segmented (sizes in MiniLM word pieces)."""

    min_tokens: int = 100
    max_tokens: int = 800
    window: int = 2

    def __post_init__(self) -> None:
        if self.min_tokens < 1 or self.window < 1:
            raise ConfigError("min_tokens and window must be positive")
        if self.max_tokens < 2 * self.min_tokens:
            raise ConfigError("max_tokens must be at least twice min_tokens")


def segment_lines(lines: Sequence[str], config: SegmentConfig | None = None,
                  *, tokens: Sequence[int] | None = None) -> list[tuple[int, int]]:
    """Contiguous ``[start, end)`` line ranges that cover ``lines`` in order.

    ``tokens`` may carry each line's word-piece count when the caller has it.
    """
    cfg = config or SegmentConfig()
    n = len(lines)
    if n == 0:
        return []
    cost = list(tokens) if tokens is not None else count_tokens_many(lines)
    blocks = paragraphs([not line.strip() for line in lines])
    sizes = [sum(cost[a:b]) for a, b in blocks]
    if len(blocks) < 3 or sum(sizes) <= cfg.max_tokens:
        return [(0, n)]
    words = [Counter(w for line in lines[a:b] for w in _words(line)) for a, b in blocks]
    sims = [_cosine(sum(words[max(0, g - cfg.window + 1):g + 1], Counter()),
                    sum(words[g + 1:g + 1 + cfg.window], Counter()))
            for g in range(len(blocks) - 1)]
    depth = _depths(sims)
    mean = sum(depth) / len(depth)
    std = math.sqrt(sum((d - mean) ** 2 for d in depth) / len(depth))
    cuts = _Cuts(sizes)
    order = sorted(range(len(depth)), key=lambda g: (-depth[g], g))
    for g in order:
        peak = all(depth[g] >= depth[h] for h in (g - 1, g + 1) if 0 <= h < len(depth))
        if (depth[g] > 0 and peak and depth[g] >= mean - std / 2
                and cuts.fits(g, cfg.min_tokens)):
            cuts.add(g)
    for g in order:  # segments still too long: their deepest gaps, whatever the depth
        if cuts.size(g) > cfg.max_tokens and cuts.fits(g, cfg.min_tokens):
            cuts.add(g)
    bounds = [0, *(blocks[g][1] for g in cuts.gaps), n]
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]


def segmented_tree(doc_id: str, lines: list[str], title: str,
                   config: SegmentConfig | None = None, *,
                   tokens: Sequence[int] | None = None) -> Tree:
    """A tree whose level-1 nodes are the topical segments of ``lines``."""
    nodes = []
    for k, (a, b) in enumerate(segment_lines(lines, config, tokens=tokens)):
        name = _title(lines[a:b]) or f"Part {k + 1}"
        nodes.append(Node(node_id=f"{k:04d}", raw_title=name, title=name, level=1,
                          path=(name,), start=a, body_start=a, own_end=b, end=b))
    return Tree(doc_id=doc_id, lines=lines, nodes=nodes, title=title)


def paragraphs(blank: Sequence[bool]) -> list[tuple[int, int]]:
    """Lines tiled into paragraphs, given which are blank: a run of non-blank lines with
    the blank lines after it (leading blank lines join the first). ``[start, end)`` each."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(blank)
    while i < n:
        j = i
        while j < n and blank[j]:
            j += 1
        while j < n and not blank[j]:
            j += 1
        while j < n and blank[j]:
            j += 1
        out.append((i, j))
        i = j
    return out


def _words(line: str) -> list[str]:
    return [w for w in _WORD.findall(line.casefold()) if w not in _STOP]


def _cosine(a: Counter[str], b: Counter[str]) -> float:
    if not a or not b:
        return 0.0
    dot = sum(v * b[w] for w, v in a.items() if w in b)
    return dot / math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))


def _depths(sims: list[float]) -> list[float]:
    """TextTiling depth: climb to the highest similarity on each side of every gap."""
    out = []
    for g, s in enumerate(sims):
        left = right = s
        for x in reversed(sims[:g]):
            if x < left:
                break
            left = x
        for x in sims[g + 1:]:
            if x < right:
                break
            right = x
        out.append((left - s) + (right - s))
    return out


class _Cuts:
    """Chosen gaps (gap ``g`` cuts between block ``g`` and ``g + 1``), kept sorted, with
    prefix sums of block sizes so each question costs a bisection."""

    def __init__(self, sizes: list[int]) -> None:
        self.gaps: list[int] = []
        self.n = len(sizes)
        self.prefix = [0, *itertools.accumulate(sizes)]

    def add(self, g: int) -> None:
        bisect.insort(self.gaps, g)

    def _around(self, g: int) -> tuple[int, int]:
        """First and last block of the current segment holding gap ``g``."""
        i = bisect.bisect_left(self.gaps, g)
        lo = self.gaps[i - 1] + 1 if i > 0 else 0
        hi = self.gaps[i] if i < len(self.gaps) else self.n - 1
        return lo, hi

    def size(self, g: int) -> int:
        lo, hi = self._around(g)
        return self.prefix[hi + 1] - self.prefix[lo]

    def fits(self, g: int, least: int) -> bool:
        """Would cutting at ``g`` leave both sides at least ``least`` tokens?"""
        lo, hi = self._around(g)
        return (self.prefix[g + 1] - self.prefix[lo] >= least
                and self.prefix[hi + 1] - self.prefix[g + 1] >= least)


def _title(lines: Sequence[str]) -> str:
    """The segment's first words, as a title for its breadcrumb."""
    first = next((line.strip() for line in lines if line.strip()), "")
    words = first.lstrip("#>*-+ ").split()
    if not words:
        return ""
    return " ".join(words[:_TITLE_WORDS]) + (" …" if len(words) > _TITLE_WORDS else "")
