"""The analyzer: the terms BM25 reads from a text, the same at indexing and at query time.

bm25s' tokenizer: lower case, its token pattern (two or more word characters), English stop
words removed and, when PyStemmer is installed, stemmed, so "models" matches "model".
:func:`tokenize` goes through bm25s (building its vocabulary); :func:`terms` gives the same
terms for many short texts without one (the packer's lines). Linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["NO_TERM", "terms", "tokenize"]


def _stemmer() -> Callable[[list[str]], list[str]] | None:
    try:
        import Stemmer  # PyStemmer: optional, makes "models" match "model"
    except ImportError:
        return None
    stem: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords
    return stem


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed tokens of each text (bm25s' tokenizer)."""
    import bm25s

    tokens: list[list[str]] = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=_stemmer(), return_ids=False, show_progress=False
    )
    return tokens


_TOKEN = re.compile(r"(?u)\b\w\w+\b")  # bm25s' default token pattern
#: The one term of an index whose texts hold none: no text tokenizes to it.
NO_TERM = "\x00"


def terms(texts: Sequence[str]) -> list[list[str]]:
    """The same terms as :func:`tokenize`, without building a vocabulary: a fast path for
    many short texts (lines of a section) matched against a question's terms."""
    from bm25s.stopwords import STOPWORDS_EN

    stem = _stemmer()  # a new one per call: PyStemmer objects are not thread-safe
    stop = frozenset(STOPWORDS_EN)
    out = []
    for text in texts:
        words = [w for w in _TOKEN.findall(text.lower()) if w not in stop]
        out.append(stem(words) if stem is not None and words else words)
    return out
