"""Packing sections into a token budget: whole sections, or the blocks that hold the evidence.

Two packers take the selected sections (in rank order) and return :class:`Section` s:

* :func:`pack_evidence` (the default) spends the budget where the evidence is. Every
  selected section's body is tiled into Markdown blocks (paragraphs, tables, lists; a
  block over half the budget into its lines); a block scores as the best hit chunk that
  covers it; blocks under the same chunk are ordered by their own BM25 match with the
  question (corpus IDF), which ``lexical_weight`` > 0 also adds to the score. Blocks are
  taken best first across all sections, each costing its word pieces plus, for the first
  block of a section, its heading and, for every new gap, an ``[…]`` marker, so the count
  is exact. Then what is left of the budget grows the opened sections around their
  blocks, in rank order, up to whole sections: a small section is handed over whole, a
  large one as its best blocks.
* :func:`pack_sections` (the reference design) takes sections whole in rank order; one
  longer than ``cap`` or than what is left is trimmed to its heading and the lines around
  its best chunks.

:func:`merge_duplicates` hands over identical or nearly identical sections of different
documents once, listing the other places in ``Section.also_in``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from .derived import line_starts, line_terms
from .lexical import terms as line_terms_of
from .ranking import Candidate
from .segmentation import paragraphs
from .tokens import count_tokens, truncate_to_tokens

if TYPE_CHECKING:
    from .chunking import Chunk
    from .index import Index

__all__ = ["Section", "merge_duplicates", "pack_evidence", "pack_sections"]

_ELLIPSIS = "[…]\n"
_MIN_WINDOW = 48  # tokens: below this a trimmed section is only its heading
_SHINGLE = 3  # words per shingle when comparing sections for near-duplicates
_NEAR_DUPLICATE = 0.8  # Jaccard similarity of shingles from which two sections are one
_SAME_VECTOR = 0.9  # cosine of two sections' best chunks below which they are not compared

Selected = list[tuple[Candidate, tuple[int, int]]]

_MIN_WINDOW = 48  # tokens: below this a trimmed section is only its heading


@dataclass(frozen=True)
class Section:
    """One retrieved piece of context: a whole section (or a fallback window) of a document.

    ``start_line`` and ``end_line`` are 1-based and inclusive, as shown to people, and refer
    to the stored copy of the source. ``matched_spans`` are the (1-based, inclusive) line
    spans of the chunks that hit this section. ``trimmed`` is true when the section did not
    fit the token budget whole and only its heading and a window around its matched chunks
    are in ``text``. ``also_in`` names the refs of the same (or a nearly identical) section in
    other documents, handed over once here.
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
    also_in: tuple[str, ...] = ()

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
        d["also_in"] = list(self.also_in)
        return d

def ref(cand: Candidate, start: int) -> str:
    """The citation key of a candidate whose section starts at 0-based line ``start``."""
    if cand.node_id is None:
        return f"{cand.doc_id}#L{start + 1}"
    return f"{cand.doc_id}#{cand.node_id}"


def pack_sections(index: Index, selected: Selected, budget: int, cap: int
                  ) -> tuple[list[Section], list[str]]:
    """Whole sections in rank order within ``budget``, each at most ``cap`` tokens.

    A section that does not fit is trimmed to a window; when what is left of the budget
    cannot hold a useful window (under ``_MIN_WINDOW`` tokens) it is left out and named
    in the second list instead, and smaller sections further down may still fit.
    """
    sections: list[Section] = []
    omitted: list[str] = []
    left = budget
    for cand, (start, end) in selected:
        sec = _section(index, cand, start, end, min(left, cap)) if left > 0 else None
        if sec is None or (sec.trimmed and min(left, cap) < _MIN_WINDOW):
            omitted.append(ref(cand, start))
            continue
        sections.append(sec)
        left -= sec.tokens
    return sections, omitted


@dataclass
class _Plan:
    """One selected section while the evidence packer fills the budget.

    Its body is tiled into blocks (a run of non-blank lines with the blank lines after
    it: in Markdown a paragraph, a table, a list); ``keep`` holds the indexes of the
    blocks taken, ``gaps`` the runs of blocks left out, each shown as one marker.
    """

    cand: Candidate
    start: int
    end: int
    lo: int = 0
    head: int = 0  # heading tokens
    blocks: list[tuple[int, int]] = field(default_factory=list)
    keep: set[int] = field(default_factory=set)
    gaps: int = 0
    window: str | None = None  # a fallback window's text (no node)
    cut: int | None = None  # tokens of the one kept block when it had to be cut to fit
    used: int = 0  # tokens taken so far: heading, kept blocks and one marker per gap

    def delta(self, b: int) -> int:
        """Change in the number of gaps if block ``b`` joins ``keep``."""
        left = b == 0 or b - 1 in self.keep
        right = b == len(self.blocks) - 1 or b + 1 in self.keep
        return -1 if left and right else (1 if not left and not right else 0)


def _blocks(cost: tuple[int, ...], lo: int, hi: int, most: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` tiled into paragraphs (a line without word pieces is blank); one over
    ``most`` tokens is split into its lines."""
    out: list[tuple[int, int]] = []
    for a, b in paragraphs([cost[i] == 0 for i in range(lo, hi)]):
        i, j = lo + a, lo + b
        if sum(cost[i:j]) > most and j - i > 1:
            out.extend((k, k + 1) for k in range(i, j))
        else:
            out.append((i, j))
    return out


def pack_evidence(index: Index, selected: Selected, budget: int, terms: dict[str, float],
                  *, lexical_weight: float = 0.0, cap: int | None = None
                  ) -> tuple[list[Section], list[str]]:
    """The best blocks of the selected sections within ``budget`` (module docstring).

    ``terms`` are the question's BM25 terms with their IDF (:meth:`Index.term_weights`).
    Returns the sections in rank order and the refs of selected sections that got no text.
    """
    ell = count_tokens(_ELLIPSIS)
    norm = sum(terms.values()) or 1.0
    plans: list[_Plan] = []
    # (-score, -lexical, plan, block, cost): within one chunk (equal scores) the block that
    # matches the question's words best goes first.
    units: list[tuple[float, float, int, int, int]] = []
    for cand, (start, end) in selected:
        p = _Plan(cand, start, end)
        plans.append(p)
        if cand.node_id is None:
            text = index.chunks[cand.rows[0]].text
            p.window = text
            lex = _lexical(line_terms_of([text])[0], terms) / norm
            units.append((-cand.best * (1 + lexical_weight * lex), -lex, len(plans) - 1, -1,
                          count_tokens(text)))
            continue
        node = index.tree(cand.doc_id).get(cand.node_id)
        cost = index.line_tokens(cand.doc_id)
        p.lo = node.body_start
        p.head = sum(cost[start:p.lo])
        p.blocks = _blocks(cost, p.lo, end, max(1, budget // 2))
        p.gaps = 1 if p.blocks else 0
        hit = [0.0] * (end - p.lo)
        for (a, b), score in zip(_spans(index, cand), cand.row_scores, strict=True):
            for i in range(max(a, p.lo), min(b, end)):
                hit[i - p.lo] = max(hit[i - p.lo], score)
        for b, (i, j) in enumerate(p.blocks):
            h = max(hit[i - p.lo:j - p.lo])
            c = sum(cost[i:j])
            if h > 0 and c > 0:  # only blocks under a hit are read for their terms
                lex = _lexical([t for ts in line_terms(index, cand.doc_id, i, j) for t in ts],
                               terms) / norm
                units.append((-h * (1 + lexical_weight * lex), -lex, len(plans) - 1, b, c))
    units.sort()
    left = budget
    most = budget if cap is None else cap
    for _, _, k, b, c in units:
        p = plans[k]
        if b < 0:  # a fallback window: all or nothing
            if c <= left:
                p.keep.add(-1)
                left -= c
            continue
        # Opening a section costs its heading and the one marker of its untouched body.
        extra = c + ell * p.delta(b) + (0 if p.keep else p.head + ell * p.gaps)
        if extra <= left and p.used + extra <= most:
            left -= extra
            p.used += extra
            p.gaps += p.delta(b)
            p.keep.add(b)
    if units and not any(p.keep for p in plans) and units[0][3] >= 0:
        # Not even the best block fits: hand over its start, cut to what is left.
        _, _, k, b, _ = units[0]
        p = plans[k]
        room = left - p.head - ell * (p.gaps + p.delta(b))
        if room >= _MIN_WINDOW // 2:
            p.gaps += p.delta(b)
            p.keep.add(b)
            p.cut = room
            left = 0
    # The rest of the budget grows opened sections, best first: up to the cap, then beyond.
    for limit in (most, budget):
        for p in plans:
            if p.keep and p.window is None:
                left = _grow(index, p, left, ell, limit)
    sections = [sec for p in plans if (sec := _emit(index, p)) is not None]
    omitted = [ref(p.cand, p.start) for p in plans if not p.keep]
    return sections, omitted


def _grow(index: Index, p: _Plan, left: int, ell: int, limit: int) -> int:
    """Add the blocks next to kept ones (after, then before) while they fit ``left`` and
    the section stays within ``limit``; returns what is left of the budget."""
    cost = index.line_tokens(p.cand.doc_id)
    grown = True
    while grown:
        grown = False
        for b in sorted(p.keep):
            for n in (b + 1, b - 1):
                if 0 <= n < len(p.blocks) and n not in p.keep:
                    i, j = p.blocks[n]
                    extra = sum(cost[i:j]) + ell * p.delta(n)
                    if extra <= left and p.used + extra <= limit:
                        left -= extra
                        p.used += extra
                        p.gaps += p.delta(n)
                        p.keep.add(n)
                        grown = True
    return left


def _spans(index: Index, cand: Candidate) -> list[tuple[int, int]]:
    """0-based half-open line span of each hit row, as the search's pointers gave them."""
    missing = [r for r in cand.rows if r not in cand.spans]
    if missing:  # rows a caller added by hand: read them
        cand.spans.update({r: (p[3], p[4]) for r, p in zip(missing, index.pointers(missing),
                                                             strict=True)})
    return [cand.spans[r] for r in cand.rows]


def _emit(index: Index, p: _Plan) -> Section | None:
    cand = p.cand
    if not p.keep:
        return None
    spans = tuple(sorted({(a + 1, b) for a, b in _spans(index, cand)}))
    if p.window is not None:
        c = index.chunks[cand.rows[0]]
        return Section(doc_id=cand.doc_id, node_id=None, title=c.title, path=tuple(c.path),
                       start_line=p.start + 1, end_line=p.end, text=p.window,
                       score=float(cand.score), tokens=count_tokens(p.window),
                       matched_spans=spans, also_in=tuple(cand.also_in))
    tree = index.tree(cand.doc_id)
    node = tree.get(cand.node_id)  # type: ignore[arg-type]
    parts = [tree.slice(p.start, p.lo)]
    for b in range(len(p.blocks)):
        if b in p.keep:
            block = tree.slice(*p.blocks[b])
            parts.append(block if p.cut is None else truncate_to_tokens(block, p.cut))
        elif b == 0 or b - 1 in p.keep:
            if not parts[-1].endswith("\n"):
                parts.append("\n")
            parts.append(_ELLIPSIS)
    text = "".join(parts)
    # Word pieces never span a line break, so what the plan counted is exact.
    tokens = count_tokens(text) if p.cut is not None else p.used
    return Section(doc_id=cand.doc_id, node_id=cand.node_id, title=node.title,
                   path=node.path, start_line=p.start + 1, end_line=p.end, text=text,
                   score=float(cand.score), tokens=tokens,
                   trimmed=p.gaps > 0 or p.cut is not None, matched_spans=spans,
                   also_in=tuple(cand.also_in))


def _lexical(line: list[str], terms: dict[str, float]) -> float:
    """BM25-style match of one line: IDF times a saturating term frequency (k1 = 1.2)."""
    tf: dict[str, int] = {}
    for t in line:
        if t in terms:
            tf[t] = tf.get(t, 0) + 1
    return sum(terms[t] * f * 2.2 / (f + 1.2) for t, f in tf.items())


def merge_duplicates(index: Index, selected: Selected) -> Selected:
    """Selected sections with later copies of an identical or nearly identical section (in
    another document) removed; each copy's ref is added to the kept one's ``also_in``.

    Only sections of other documents whose sizes are within the similarity threshold of
    each other and whose best chunks' vectors nearly agree (cosine >= ``_SAME_VECTOR``)
    are compared word by word, so most queries compare nothing.
    """
    if len({c.doc_id for c, _ in selected}) < 2:
        return selected
    best = index.vectors_of([c.rows[0] for c, _ in selected])
    close = best @ best.T
    kept: list[tuple[int, Candidate, tuple[int, int], int]] = []  # (position, ..., size)
    shingles: dict[int, frozenset[int]] = {}

    def of(i: int, cand: Candidate, rng: tuple[int, int]) -> frozenset[int]:
        if i not in shingles:
            text = (index.chunks[cand.rows[0]].text if cand.node_id is None
                    else index.tree(cand.doc_id).slice(*rng))
            shingles[i] = _shingles(text)
        return shingles[i]

    for i, (cand, rng) in enumerate(selected):
        size = sum(index.line_tokens(cand.doc_id)[rng[0]:rng[1]])
        for j, other, orng, osize in kept:
            if (other.doc_id != cand.doc_id and close[i, j] >= _SAME_VECTOR
                    and min(size, osize) >= _NEAR_DUPLICATE * max(size, osize)
                    and _similar(of(i, cand, rng), of(j, other, orng))):
                other.also_in.append(ref(cand, rng[0]))
                break
        else:
            kept.append((i, cand, rng, size))
    return [(c, r) for _, c, r, _ in kept]


_WORD = re.compile(r"\w+")


def _shingles(text: str) -> frozenset[int]:
    words = _WORD.findall(text.casefold())
    if len(words) < _SHINGLE:
        return frozenset([hash(" ".join(words))])
    return frozenset(hash(" ".join(words[i:i + _SHINGLE]))
                     for i in range(len(words) - _SHINGLE + 1))


def _similar(a: frozenset[int], b: frozenset[int]) -> bool:
    if not a or not b or min(len(a), len(b)) < _NEAR_DUPLICATE * max(len(a), len(b)):
        return False
    return len(a & b) >= _NEAR_DUPLICATE * len(a | b)

def _section(idx: Index, cand: Candidate, start: int, end: int, allowance: int
         ) -> Section | None:
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
        text = _trim(idx, cand, chunks, start, end, allowance)
        if not text.strip():
            return None
        tokens = count_tokens(text)
        trimmed = True
    return Section(
        doc_id=cand.doc_id, node_id=cand.node_id, title=title, path=path,
        start_line=start + 1, end_line=end, text=text, score=float(cand.score),
        tokens=tokens, trimmed=trimmed, matched_spans=spans, also_in=tuple(cand.also_in),
    )

def _trim(idx: Index, cand: Candidate, chunks: list[Chunk], start: int, end: int,
      allowance: int) -> str:
    """Heading plus the lines of the section around its best chunks, within allowance.

    Whole lines (in Markdown, usually whole paragraphs) are kept, never half of one,
    except when even the best chunk's lines do not fit: then that chunk's text is cut
    to the allowance. Lines holding the best-scoring chunks come first, in score order,
    then lines after and before them; the kept lines are shown in document order with
    ``[…]`` where text was left out.
    """
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
        lo = max(first.start_char, line_starts(idx, cand.doc_id)[body_lo])
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
