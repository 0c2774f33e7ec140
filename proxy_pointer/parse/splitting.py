"""Where the recursive character splitter cuts a span of text, as exact offsets.

LangChain's ``RecursiveCharacterTextSplitter`` returns chunk texts, not offsets; a chunk is
found back in the source after the previous one (:func:`split_offsets`). Where repetitive
text makes a chunk match an earlier copy of itself and the spans found leave text
uncovered, exact word windows of the same size replace them. Every function is linear in
the span (a window advances at least a quarter of its size).
"""

from __future__ import annotations

__all__ = ["hard_windows", "split_offsets"]

_SEPARATORS = ["\n\n", "\n", "。", ". ", "! ", "? ", "；", "; ", "，", ", ", " "]
_SEPARATOR_ENDS = frozenset(sep[-1] for sep in _SEPARATORS)


def split_offsets(text: str, a: int, b: int, size: int, overlap: int
                  ) -> list[tuple[int, int]]:
    """Spans of the splitter's chunks of ``text[a:b]``, found back in the source."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter(
        separators=_SEPARATORS, keep_separator="end", chunk_size=size,
        chunk_overlap=overlap, length_function=len, strip_whitespace=True,
    )
    seg = text[a:b]
    out: list[tuple[int, int]] = []
    prev_start, prev_end = -1, 0
    for piece in splitter.split_text(seg):
        # The splitter's chunks are verbatim and in order; each starts at a split boundary
        # at most ``overlap`` characters before the previous end (the longest suffix it
        # keeps: all of a short previous chunk, so not always after its start) and ends
        # beyond that end, with at most whitespace between the two.
        lo = max(prev_start, prev_end - overlap)
        at = _locate(seg, piece, max(lo, prev_end - len(piece) + 1))
        if at > prev_end and seg[prev_end:at].strip():
            # Found past text no chunk holds, so not there: the chunk is the previous one's
            # kept suffix alone (what followed it was whitespace) and ends where it ends.
            at = _locate(seg, piece, max(lo, prev_end - len(piece)))
        s, e = at, at + len(piece)
        prev_start, prev_end = s, max(prev_end, e)
        if e - s > size:  # a run without any separator (one giant "word"): hard windows
            out.extend(hard_windows(a + s, a + e, size))
        else:
            out.append((a + s, a + e))
    # In repetitive text a chunk can be found back at an earlier copy of itself; then the
    # spans leave text uncovered, and exact windows of our own replace them.
    return out if _covers(text, a, b, out) else _word_windows(text, a, b, size, overlap)


def _covers(text: str, a: int, b: int, spans: list[tuple[int, int]]) -> bool:
    """Whether ``spans`` (in order) leave no text of ``text[a:b]`` but whitespace uncovered."""
    reach = a
    for s, e in spans:
        if s > reach and text[reach:s].strip():
            return False
        reach = max(reach, e)
    return not text[reach:b].strip()


def _word_windows(text: str, a: int, b: int, size: int, overlap: int
                  ) -> list[tuple[int, int]]:
    """Windows of ``text[a:b]`` of at most ``size`` characters, each ending after the last
    space or line break of its last quarter (if any) and starting up to ``overlap``
    characters before the previous end: exact offsets, each window advancing at least a
    quarter of ``size``, so linear in the span."""
    out: list[tuple[int, int]] = []
    s = a
    while s < b:
        e = min(b, s + size)
        if e < b:
            cut = max(text.rfind(" ", s + 3 * size // 4, e), text.rfind("\n", s + 3 * size // 4, e))
            e = cut + 1 if cut > s else e
        out.append((s, e))
        if e >= b:
            break
        lo = max(s + size // 4, e - min(overlap, size // 2))
        space = text.find(" ", lo, e)
        s = space + 1 if space != -1 else e
    return out


def _locate(seg: str, piece: str, lo: int) -> int:
    """First occurrence of ``piece`` at or after ``lo`` that starts a split (after a space
    or a separator), so repetitive text cannot shift a chunk onto an earlier copy."""
    at = seg.find(piece, max(0, lo))
    first = at
    while at > 0 and not (seg[at - 1].isspace() or seg[at - 1] in _SEPARATOR_ENDS):
        at = seg.find(piece, at + 1)
    if at >= 0:
        return at
    if first >= 0:
        return first
    # only if the splitter repeated text it had already emitted
    return max(0, seg.find(piece))


def hard_windows(a: int, z: int, size: int) -> list[tuple[int, int]]:
    """Windows of ``size`` characters from ``a`` to ``z``, cut anywhere (a run without a
    separator)."""
    return [(k, min(z, k + size)) for k in range(a, z, size)]
