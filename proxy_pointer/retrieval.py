"""Retrieval by proxy and pointer: search chunks, dedupe by node, slice whole sections.

Chunks are proxies and their metadata are pointers. A search ranks chunks; chunks that
point at the same ``(doc_id, node_id)`` are merged into one candidate node; each node's
section is then sliced from the *stored copy* of its document (never from a file that may
have changed since indexing) and packed, in rank order, into a token budget (tokens are
counted by :mod:`proxy_pointer.tokens`). Sliding-window chunks of documents without
headings have no node and are used as context directly.
"""

from __future__ import annotations

import itertools
import re
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from . import defaults
from .errors import ConfigError
from .tokens import count_tokens, truncate_to_tokens
from .tree import normalize_title

if TYPE_CHECKING:
    from .chunking import Chunk
    from .index import Index

__all__ = ["Retrieval", "RetrievalConfig", "Retriever", "Section"]

_MAX_QUESTION_CHARS = 20_000  # the embedder reads ~1,000 characters; BM25 needs no more
_ELLIPSIS = "[…]\n"
_MIN_WINDOW = 48  # tokens: below this a trimmed section is only its heading


@dataclass(frozen=True)
class Section:
    """One retrieved piece of context: a whole section (or a fallback window) of a document.

    ``start_line`` and ``end_line`` are 1-based and inclusive, as shown to people, and refer
    to the stored copy of the source. ``matched_spans`` are the (1-based, inclusive) line
    spans of the chunks that hit this section. ``trimmed`` is true when the section did not
    fit the token budget whole and only its heading and a window around its matched chunks
    are in ``text``.
    """

    doc_id: str
    node_id: str | None
    title: str
    path: tuple[str, ...]
    start_line: int
    end_line: int
    text: str
    score: float
    tokens: int = 0
    trimmed: bool = False
    matched_spans: tuple[tuple[int, int], ...] = ()

    @property
    def ref(self) -> str:
        """The citation key: ``doc_id#node_id``, or ``doc_id#L<line>`` for a fallback window."""
        if self.node_id is None:
            return f"{self.doc_id}#L{self.start_line}"
        return f"{self.doc_id}#{self.node_id}"

    @property
    def breadcrumb(self) -> str:
        return " > ".join(self.path)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the batch query output's ``contexts`` entries)."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["path"] = list(self.path)
        d["matched_spans"] = [list(s) for s in self.matched_spans]
        return d


@dataclass(frozen=True)
class Retrieval:
    """The sections for one question, in rank order, and the tokens they use."""

    question: str
    sections: tuple[Section, ...]
    budget: int
    tokens_used: int
    candidates: int = 0  # unique nodes found before the k / budget cut
    omitted: tuple[str, ...] = ()  # refs of selected sections the budget could not hold
    timings: dict[str, float] = field(default_factory=dict, compare=False)
    """Seconds per stage: ``embed`` (query vector), ``search`` (dense, BM25, fusion),
    ``dedupe`` (grouping chunks by node) and ``slice`` (sections, trimming, budget)."""

    @property
    def context(self) -> str:
        """The sections' texts joined, as a plain context string."""
        return "\n\n".join(s.text for s in self.sections)


@dataclass(frozen=True, kw_only=True)
class RetrievalConfig:
    """How a question becomes sections. Defaults were tuned on qasper-dev (see README).

    * ``k_search`` chunks are searched, merged into unique nodes, the best ``k`` kept.
    * ``expand="section"`` hands over a node with its subsections (the reference design);
      ``"own"`` only its own text up to its first child.
    * ``budget`` caps the total tokens of all section texts; a section that does not fit
      whole is trimmed to its heading and the lines around the chunks that matched.
    * A section may take at most ``max(section_floor, max_section_share * budget)`` tokens
      before it is trimmed the same way, so one long chapter cannot crowd out every other
      hit (at the default 2,000-token budget: 600 tokens).
    * ``promote_parent``: when this many (>= 2) selected nodes share a parent, the parent's
      section replaces them if it fits; 0 (default) turns it off.
    * ``hybrid`` (default on) fuses BM25 (bm25s, over the same chunks and breadcrumbs) with
      the dense ranking by reciprocal rank fusion (constant ``rrf_k``); no LLM either way.
    * ``title_boost`` is added to the score of chunks whose breadcrumb carries a label the
      question names ("Chapter 2", "Box 1.1", "Item 7", "Note 12", "Table 3"): the
      embedder barely sees such numbers, the breadcrumb states them exactly.
    * ``doc_ids`` and ``path_prefix`` restrict the search (``path_prefix`` matches the
      leading titles of a chunk's breadcrumb, case-insensitively).
    """

    budget: int = defaults.BUDGET
    k: int = defaults.K
    k_search: int = defaults.K_SEARCH
    expand: str = defaults.EXPAND
    max_section_share: float = 0.3
    section_floor: int = 400
    promote_parent: int = 0
    hybrid: bool = defaults.HYBRID
    rrf_k: int = 60
    title_boost: float = 0.15
    doc_ids: tuple[str, ...] | None = None
    path_prefix: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.doc_ids, str):
            object.__setattr__(self, "doc_ids", (self.doc_ids,))
        elif self.doc_ids is not None:
            object.__setattr__(self, "doc_ids", tuple(self.doc_ids))
        if isinstance(self.path_prefix, str):
            parts = tuple(p.strip() for p in self.path_prefix.split(">") if p.strip())
            object.__setattr__(self, "path_prefix", parts or None)
        elif self.path_prefix is not None:
            object.__setattr__(self, "path_prefix", tuple(self.path_prefix) or None)
        for name in ("budget", "k", "k_search"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {v!r}")
        if self.expand not in ("section", "own"):
            raise ConfigError(f"expand must be 'section' or 'own', got {self.expand!r}")
        if not 0 < self.max_section_share <= 1:
            raise ConfigError("max_section_share must be in (0, 1]")
        if self.promote_parent < 0 or self.promote_parent == 1:
            raise ConfigError("promote_parent must be 0 (off) or at least 2")
        if self.section_floor < 0:
            raise ConfigError("section_floor must be >= 0")
        if self.rrf_k < 1:
            raise ConfigError("rrf_k must be at least 1")


@dataclass
class _Candidate:
    """Chunks of one node (or one fallback window) that the search hit."""

    doc_id: str
    node_id: str | None
    key: tuple[str, str]
    score: float
    rows: list[int] = field(default_factory=list)
    row_scores: list[float] = field(default_factory=list)


class Retriever:
    """Answers questions from an :class:`~proxy_pointer.index.Index` (read-only)."""

    def __init__(self, index: Index, config: RetrievalConfig | None = None) -> None:
        self.index = index
        self.config = config or RetrievalConfig()

    # --- public ---------------------------------------------------------------------
    def retrieve(self, question: str, **options: Any) -> Retrieval:
        """Sections for ``question`` in rank order within the token budget.

        Raises :class:`ConfigError` for an empty question or an invalid option; an index
        with no documents, or filters that match nothing, give an empty result.
        """
        cfg = replace(self.config, **options) if options else self.config
        if not isinstance(question, str) or not question.strip():
            raise ConfigError("the question is empty")
        question = question.strip()
        rows = self._filter_rows(cfg)
        if (rows is not None and len(rows) == 0) or len(self.index.chunks) == 0:
            return Retrieval(question, (), cfg.budget, 0)
        timings: dict[str, float] = {}
        ranked = self._search(question[:_MAX_QUESTION_CHARS], cfg, rows, timings)
        t = time.perf_counter()
        candidates = self._group(ranked)
        timings["dedupe"] = time.perf_counter() - t
        t = time.perf_counter()
        sections, omitted = self._assemble(candidates, cfg)
        timings["slice"] = time.perf_counter() - t
        used = sum(s.tokens for s in sections)
        return Retrieval(question, tuple(sections), cfg.budget, used, len(candidates),
                         tuple(omitted), timings)

    # --- search ---------------------------------------------------------------------
    def _filter_rows(self, cfg: RetrievalConfig) -> np.ndarray | None:
        idx = self.index
        rows = None
        if cfg.doc_ids is not None:
            rows = idx.rows_for(cfg.doc_ids)
        if cfg.path_prefix:
            want = tuple(normalize_title(t) for t in cfg.path_prefix)
            cache = _caches(idx).prefixes
            if want not in cache:
                # The store finds the rows that mention the first title; only those are
                # checked here, never every chunk row.
                cand = idx.rows_mentioning(want[0])
                crumbs = idx.crumbs(cand)
                cache[want] = np.asarray(
                    [r for r, p in zip(cand.tolist(), crumbs, strict=True)
                     if _has_prefix([normalize_title(t) for t in p], want)], np.int64)
            found = cache[want]
            rows = found if rows is None else np.intersect1d(rows, found)
        return rows

    def _search(self, question: str, cfg: RetrievalConfig, rows: np.ndarray | None,
                timings: dict[str, float]) -> list[tuple[int, float]]:
        """Chunk rows with fused scores, best first."""
        t = time.perf_counter()
        q = np.asarray(self.index.embedder.embed_query(question), dtype=np.float32)
        timings["embed"] = time.perf_counter() - t
        t = time.perf_counter()
        try:
            return self._rank(question, q, cfg, rows)
        finally:
            timings["search"] = time.perf_counter() - t

    def _rank(self, question: str, q: np.ndarray, cfg: RetrievalConfig,
              rows: np.ndarray | None) -> list[tuple[int, float]]:
        scores, found = self.index.dense_search(q, cfg.k_search, rows=rows)
        dense = list(zip(found.tolist(), scores.tolist(), strict=True))
        labels = _labels(question) if cfg.title_boost else []
        if labels:
            dense = self._boost(dense, q, labels, cfg, rows)
        if not cfg.hybrid:
            return dense
        lexical = self.index.lexical_search(question, cfg.k_search, rows)
        fused: dict[int, float] = {}
        for ranking in (dense, lexical):
            for rank, (r, _) in enumerate(ranking):
                fused[r] = fused.get(r, 0.0) + 1.0 / (cfg.rrf_k + rank + 1)
        return sorted(fused.items(), key=lambda t: (-t[1], t[0]))

    def _boost(self, ranked: list[tuple[int, float]], query: np.ndarray,
               labels: list[tuple[str, str]], cfg: RetrievalConfig, rows: np.ndarray | None
               ) -> list[tuple[int, float]]:
        """Raise chunks under a heading the question names; such chunks join the ranking."""
        idx = self.index
        named = _labelled_rows(idx, labels)
        if rows is not None:
            named &= set(rows.tolist())
        if not named:
            return ranked
        scores = dict(ranked)
        missing = [r for r in named if r not in scores]
        if missing:
            sims = idx.vectors_of(missing) @ query
            scores.update(zip(missing, sims.tolist(), strict=True))
        for r in named:
            scores[r] += cfg.title_boost
        return sorted(scores.items(), key=lambda t: (-t[1], t[0]))

    def _group(self, ranked: list[tuple[int, float]]) -> list[_Candidate]:
        """Dedupe by ``(doc_id, node_id)``: best score per node, all its hit chunks kept."""
        by_key: dict[tuple[str, str], _Candidate] = {}
        order: list[_Candidate] = []
        pointers = self.index.pointers([r for r, _ in ranked])
        for (row, score), (doc_id, node_id, start) in zip(ranked, pointers, strict=True):
            key = (doc_id, node_id if node_id is not None else f"#{start}")
            cand = by_key.get(key)
            if cand is None:
                cand = by_key[key] = _Candidate(doc_id, node_id, key, score)
                order.append(cand)
            cand.rows.append(row)
            cand.row_scores.append(score)
        return order  # ranked is best first, so the first hit carries the best score

    # --- assembly -------------------------------------------------------------------
    def _assemble(self, candidates: list[_Candidate], cfg: RetrievalConfig
                  ) -> tuple[list[Section], list[str]]:
        """Sections in rank order within the budget, and the refs left out for lack of it.

        A section that does not fit is trimmed to a window; when what is left of the budget
        cannot hold a useful window (under ``_MIN_WINDOW`` tokens) it is left out and named
        in ``Retrieval.omitted`` instead, and smaller sections further down may still fit.
        """
        selected = self._select(candidates, cfg)
        sections: list[Section] = []
        omitted: list[str] = []
        left = cfg.budget
        cap = max(1, cfg.section_floor, int(cfg.budget * cfg.max_section_share))
        for cand, (start, end) in selected:
            sec = self._section(cand, start, end, min(left, cap)) if left > 0 else None
            if sec is None or (sec.trimmed and min(left, cap) < _MIN_WINDOW):
                omitted.append(_ref(cand, start))
                continue
            sections.append(sec)
            left -= sec.tokens
        return sections, omitted

    def _select(self, candidates: list[_Candidate], cfg: RetrievalConfig
                ) -> list[tuple[_Candidate, tuple[int, int]]]:
        """The best ``k`` nodes with their line ranges; ancestors absorb descendants."""
        chosen: list[tuple[_Candidate, tuple[int, int]]] = []

        def holder(doc_id: str, rng: tuple[int, int]) -> _Candidate | None:
            for other, orng in chosen:
                if other.doc_id == doc_id and orng[0] <= rng[0] and rng[1] <= orng[1]:
                    return other
            return None

        for cand in candidates:
            if len(chosen) >= cfg.k:
                break
            rng = self._range(cand, cfg.expand)
            if cand.node_id is not None and any(
                o.doc_id == cand.doc_id and rng[0] <= r[0] and r[1] <= rng[1] for o, r in chosen
            ):
                # An ancestor of a better-ranked section: hand over only its own text, so
                # nothing is repeated and the better hit keeps its place.
                rng = self._range(cand, "own")
            other = holder(cand.doc_id, rng)
            if other is not None:
                # Already inside a better-ranked section: its chunks count there.
                other.rows.extend(cand.rows)
                other.row_scores.extend(cand.row_scores)
            else:
                chosen.append((cand, rng))
        if cfg.promote_parent >= 2:
            chosen = self._promote(chosen, cfg)
        return chosen

    def _promote(self, chosen: list[tuple[_Candidate, tuple[int, int]]], cfg: RetrievalConfig
                 ) -> list[tuple[_Candidate, tuple[int, int]]]:
        """Replace ``promote_parent`` or more siblings by their parent section if it fits."""
        idx = self.index
        groups: dict[tuple[str, str], list[int]] = {}
        for i, (cand, _) in enumerate(chosen):
            if cand.node_id is None or cand.node_id not in idx.tree(cand.doc_id):
                continue
            node = idx.tree(cand.doc_id).get(cand.node_id)
            if node.parent_id is not None:
                groups.setdefault((cand.doc_id, node.parent_id), []).append(i)
        for (doc_id, parent_id), members in groups.items():
            if len(members) < cfg.promote_parent:
                continue
            tree = idx.tree(doc_id)
            parent = tree.get(parent_id)
            if sum(idx.line_tokens(doc_id)[parent.start:parent.end]) > cfg.budget:
                continue
            first = chosen[members[0]][0]
            promoted = _Candidate(doc_id, parent_id, (doc_id, parent_id), first.score)
            for i in members:
                promoted.rows.extend(chosen[i][0].rows)
                promoted.row_scores.extend(chosen[i][0].row_scores)
            rng = (parent.start, parent.end)
            keep = [(c, r) for j, (c, r) in enumerate(chosen) if j not in members[1:]]
            pos = keep.index(chosen[members[0]])
            keep[pos] = (promoted, rng)
            chosen = _drop_contained(keep, pos)
        return chosen

    def _range(self, cand: _Candidate, expand: str) -> tuple[int, int]:
        """0-based half-open line range that the candidate's section covers."""
        idx = self.index
        if cand.node_id is None:
            c = idx.chunks[cand.rows[0]]
            return c.start_line, c.end_line
        node = idx.tree(cand.doc_id).get(cand.node_id)
        return (node.start, node.end) if expand == "section" else (node.start, node.own_end)

    def _section(self, cand: _Candidate, start: int, end: int, allowance: int
                 ) -> Section | None:
        idx = self.index
        chunks = [idx.chunks[r] for r in cand.rows]
        spans = tuple(sorted({(c.start_line + 1, c.end_line) for c in chunks}))
        if cand.node_id is None:
            c = chunks[0]
            text, title, path = c.text, c.title, tuple(c.path)
        else:
            tree = idx.tree(cand.doc_id)
            node = tree.get(cand.node_id)
            text = tree.slice(start, end)
            title, path = node.title, node.path
        # A word piece never spans a line break, so a slice's count is the sum of its lines'.
        tokens = (count_tokens(text) if cand.node_id is None
                  else sum(idx.line_tokens(cand.doc_id)[start:end]))
        trimmed = False
        if tokens > allowance:
            text = self._trim(cand, chunks, start, end, allowance)
            if not text.strip():
                return None
            tokens = count_tokens(text)
            trimmed = True
        return Section(
            doc_id=cand.doc_id, node_id=cand.node_id, title=title, path=path,
            start_line=start + 1, end_line=end, text=text, score=float(cand.score),
            tokens=tokens, trimmed=trimmed, matched_spans=spans,
        )

    def _trim(self, cand: _Candidate, chunks: list[Chunk], start: int, end: int,
              allowance: int) -> str:
        """Heading plus the lines of the section around its best chunks, within allowance.

        Whole lines (in Markdown, usually whole paragraphs) are kept, never half of one,
        except when even the best chunk's lines do not fit: then that chunk's text is cut
        to the allowance. Lines holding the best-scoring chunks come first, in score order,
        then lines after and before them; the kept lines are shown in document order with
        ``[…]`` where text was left out.
        """
        idx = self.index
        if cand.node_id is None:
            return truncate_to_tokens(chunks[0].text, allowance)
        tree = idx.tree(cand.doc_id)
        node = tree.get(cand.node_id)
        heading = tree.slice(node.start, node.body_start)
        body_lo, body_hi = node.body_start, end
        room = allowance - count_tokens(heading) - 2 * count_tokens(_ELLIPSIS)
        if room <= 8 or body_hi <= body_lo:
            return truncate_to_tokens(heading, allowance)
        cost = idx.line_tokens(cand.doc_id)
        ranked = sorted(zip(cand.row_scores, cand.rows, strict=True), key=lambda t: -t[0])
        keep: set[int] = set()
        used = 0

        def take(lines: range) -> bool:
            nonlocal used
            new = [i for i in lines if body_lo <= i < body_hi and i not in keep]
            n = sum(cost[i] for i in new)
            if used + n > room:
                return False
            keep.update(new)
            used += n
            return True

        first = idx.chunks[ranked[0][1]]
        if not take(range(first.start_line, first.end_line)):
            # The best chunk's lines alone are too long: show the chunk itself, cut.
            lo = max(first.start_char, _line_starts(idx, cand.doc_id)[body_lo])
            return heading + truncate_to_tokens(idx.text(cand.doc_id)[lo:first.end_char],
                                                room) + "\n" + _ELLIPSIS
        for _, row in ranked[1:]:
            c = idx.chunks[row]
            if c.doc_id == cand.doc_id and body_lo <= c.start_line < body_hi:
                take(range(c.start_line, c.end_line))
            if used >= room:
                break
        # Grow around the best chunk: following lines first, then preceding ones.
        after, before = first.end_line, first.start_line - 1
        while used < room and (after < body_hi or before >= body_lo):
            if after < body_hi:
                after = after + 1 if take(range(after, after + 1)) else body_hi
            if before >= body_lo:
                before = before - 1 if take(range(before, before + 1)) else body_lo - 1
        parts, prev = [heading], body_lo - 1
        for i in sorted(keep):
            if i != prev + 1:
                parts.append(_ELLIPSIS)
            parts.append(tree.lines[i])
            prev = i
        if prev < body_hi - 1:
            if not parts[-1].endswith("\n"):
                parts.append("\n")
            parts.append(_ELLIPSIS)
        text = "".join(parts)
        return text if count_tokens(text) <= allowance else truncate_to_tokens(text, allowance)


# --- helpers ----------------------------------------------------------------------------
def _ref(cand: _Candidate, start: int) -> str:
    if cand.node_id is None:
        return f"{cand.doc_id}#L{start + 1}"
    return f"{cand.doc_id}#{cand.node_id}"


def _drop_contained(chosen: list[tuple[_Candidate, tuple[int, int]]], i: int
                    ) -> list[tuple[_Candidate, tuple[int, int]]]:
    """Remove entries other than ``i`` whose range lies inside entry ``i``'s range."""
    cand, rng = chosen[i]
    out = []
    for j, (c, r) in enumerate(chosen):
        if j != i and c.doc_id == cand.doc_id and rng[0] <= r[0] and r[1] <= rng[1]:
            for row, score in zip(c.rows, c.row_scores, strict=True):
                if row not in cand.rows:
                    cand.rows.append(row)
                    cand.row_scores.append(score)
            continue
        out.append((c, r))
    return out


@dataclass
class _IndexCaches:
    """What retrieval derives from one version of an index and reuses across queries."""

    version: int
    prefixes: dict[tuple[str, ...], np.ndarray] = field(default_factory=dict)  # -> rows
    labels: dict[tuple[str, str], set[int]] = field(default_factory=dict)  # label -> rows
    line_starts: dict[str, list[int]] = field(default_factory=dict)  # doc -> char offsets


# Keyed weakly by index, so a dropped index takes its caches with it.
_CACHES: weakref.WeakKeyDictionary[Index, _IndexCaches] = weakref.WeakKeyDictionary()


def _caches(index: Index) -> _IndexCaches:
    """The caches for ``index`` as it is now (fresh ones after any change of contents)."""
    caches = _CACHES.get(index)
    if caches is None or caches.version != index.version:
        caches = _CACHES[index] = _IndexCaches(index.version)
    return caches


def _line_starts(index: Index, doc_id: str) -> list[int]:
    """Character offset of each line of a stored document, and of its end."""
    cache = _caches(index).line_starts
    if doc_id not in cache:
        lengths = (len(line) for line in index.tree(doc_id).lines)
        cache[doc_id] = [0, *itertools.accumulate(lengths)]
    return cache[doc_id]


_LABEL_RE = re.compile(
    r"\b(chapter|section|part|item|box|table|figure|fig\.|appendix|annex|note|article|"
    r"schedule|exhibit|capítulo|sección|chapitre|kapitel|abschnitt)\s+"
    r"((?:\d+[a-z]?(?:\.\d+)*)|(?:[ivxlc]+)\b|(?:[a-z]\b(?:\.\d+)*))",
    re.IGNORECASE,
)
_STRUCTURAL = {"chapter", "section", "part", "item", "capítulo", "sección", "chapitre",
               "kapitel", "abschnitt"}


def _labels(question: str) -> list[tuple[str, str]]:
    """Heading labels a question names: ``[("chapter", "2"), ("box", "1.1")]``."""
    out = []
    for word, num in _LABEL_RE.findall(question):
        word, num = word.lower().rstrip("."), num.lower()
        if word == "fig":
            word = "figure"
        if (word, num) not in out:
            out.append((word, num))
    return out


def _labelled_rows(index: Index, labels: list[tuple[str, str]]) -> set[int]:
    """Chunk rows whose breadcrumb carries one of ``labels`` (cached per label)."""
    cache = _caches(index).labels
    found: set[int] = set()
    for word, num in labels:
        key = (word, num)
        if key not in cache:
            num_re = re.escape(num) + r"(?![\w.]*\d)"
            named = re.compile(rf"\b{re.escape(word)}\s+{num_re}", re.IGNORECASE)
            # "Section 2.1" also names a heading that starts with its number: "2.1 Results".
            bare = re.compile(rf"^\W*{num_re}\b") if word in _STRUCTURAL else None
            # Only rows whose breadcrumb mentions the number are read and checked.
            cand = index.rows_mentioning(num)
            rows = {r for r, crumbs in zip(cand.tolist(), index.crumbs(cand), strict=True)
                    if any(named.search(t) or (bare is not None and bare.match(t))
                           for t in crumbs)}
            cache[key] = rows
        found |= cache[key]
    return found


def _has_prefix(path: Sequence[str], want: Sequence[str]) -> bool:
    """True when some run of ``path`` starts with ``want`` (the doc title may lead it)."""
    for offset in range(0, min(2, len(path))):
        seg = path[offset:offset + len(want)]
        if len(seg) == len(want) and all(
            s == w or s.startswith(w + " ") or s.startswith(w + ":") or s.startswith(w + ".")
            for s, w in zip(seg, want, strict=True)
        ):
            return True
    return False
