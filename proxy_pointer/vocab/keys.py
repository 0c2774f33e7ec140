"""The text keys every stage compares titles and words by, in one place.

Each key says what two texts must share to count as the same: :func:`heading_key` (a
heading as filters and the stores' breadcrumb column compare it), :func:`bare_title` (a
heading without its numbering, as the noise rules compare it), :func:`title_key` (letters
and digits of singular words, as the PDF contents placement compares a listed title with a
printed one), :func:`title_words` (the words a heading names something by, as a question
naming "the cash flow statement" is matched) and :func:`alnum` (letters and digits alone).
All run in time linear in their input.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["TITLE_FILLER", "alnum", "bare_title", "heading_key", "singular", "title_key",
           "title_words"]

_WORD = re.compile(r"\w+")
_ALNUM_WORD = re.compile(r"[a-z0-9]+")
#: Words a title may carry without naming anything in particular.
TITLE_FILLER = frozenset({
    "a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "our",
    "the", "to", "with", "consolidated", "condensed", "combined", "unaudited", "interim"})


def heading_key(title: str) -> str:
    """A heading title as filters compare it: inline markup dropped, spaces collapsed,
    case-folded (``"**Item 7.**  MD&A"`` -> ``"item 7. md&a"``)."""
    return " ".join(re.sub(r"[*_`#]", "", title).split()).casefold()


def singular(word: str) -> str:
    """A lower-case word without a plural ``s`` (words over three letters only)."""
    return word[:-1] if len(word) > 3 and word.endswith("s") else word


@lru_cache(maxsize=1 << 16)  # a PDF page's lines are compared with every entry naming it
def title_key(text: str) -> str:
    """A title's key for tolerant matching: lower-case letters and digits only, each word's
    plural ``s`` and a possessive ``'s`` dropped ("Statements of Cash Flows" and
    "STATEMENT OF CASH FLOW" share one key)."""
    words = (singular(w) for w in _ALNUM_WORD.findall(text.lower()))
    return "".join(w for w in words if w != "s")


@lru_cache(maxsize=1 << 14)
def title_words(title: str) -> frozenset[str]:
    """The words a heading names something by: lower-case, plural ``s`` dropped, without
    fillers ("Consolidated Statements of Cash Flows" -> statement, cash, flow)."""
    return frozenset(singular(w) for w in _WORD.findall(title.lower())) - TITLE_FILLER


def alnum(text: str) -> str:
    """Lower-case letters and digits alone (``"Item 7A."`` -> ``"item7a"``)."""
    return re.sub(r"[^0-9a-z]+", "", text.lower())


_MARKUP_RE = re.compile(r"[*_`~#\[\]<>|]")
_CONT_RE = re.compile(
    r"\s*(?:[\(\[]\s*(?:continued|continuation|cont'?d|cont\.?|suite|fortsetzung|forts\.?"
    r"|continuacion|continuacao|continua|segue|续|續|接上页)\s*[\)\]]"
    r"|[,:\-–—]?\s*(?:continued|cont'd|contd|cont\.))\s*$"
)
_NUM_RE = re.compile(
    r"^(?:"
    r"(?:chapter|section|part|appendix|annex|annexe|anexo|apendice|anhang|kapitel|chapitre"
    r"|capitulo|capitolo|allegato|item)\s+[0-9a-z]{1,6}(?:\.[0-9a-z]+)*\s*[.:)\-–—]?\s+"
    r"|[0-9]+(?:[.．][0-9]+)*(?:[.．):、\-–—]\s*|\s+)"
    r"|\(?[ivxlcdm]{1,7}[.):]\s*"
    r"|\(?[a-z][.)]\s*"
    r"|\([0-9a-z]{1,4}\)\s*"
    r"|第[一二三四五六七八九十百零〇0-9]+[章节節部分篇]\s*"
    r"|[一二三四五六七八九十]+[、.．]\s*"
    r"|(?:附录|附錄)\s*[a-z0-9一二三四五六七八九十]*\s*[:：.、]?\s*"
    r")"
)
_PUNCT_RE = re.compile(r"[^\w\s]+")



def bare_title(title: str) -> str:
    """A heading title as noise rules compare it: NFKC, case-folded, markup and accents
    dropped, numbering ("7.", "Item 1A.", "第三章") and "(continued)" peeled off,
    punctuation to spaces.

    >>> bare_title("**7. References (continued)**")
    'references'
    >>> bare_title("VII. Índice")
    'indice'
    """
    s = unicodedata.normalize("NFKC", title).casefold()
    s = _MARKUP_RE.sub(" ", s)
    s = "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))
    s = s.replace("’", "'").strip(" \t:.-–—;,")
    for _ in range(3):  # "Appendix A. 1. References": peel a few layers, never loop forever
        new = _CONT_RE.sub("", _NUM_RE.sub("", s, count=1)).strip(" \t:.-–—;,")
        if new == s or not new:
            break
        s = new
    return " ".join(_PUNCT_RE.sub(" ", s).replace("_", " ").split())
