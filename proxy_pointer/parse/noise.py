"""Noise sections: parts of a document that a chunk should not stand for.

A table of contents repeats every heading of the document, a reference list names every
topic in its titles, an abbreviation list matches any query with an acronym in it. Their
chunks win searches and then point the reader at a section that answers nothing. This
module finds them by their *title*, deterministically and without an LLM.

Categories and their defaults
-----------------------------
=================== ======= ======== =====================================================
category            default scope    why
=================== ======= ======== =====================================================
contents            on      own      lists headings (and "Index to ..." / list of figures);
                                     its children are usually real sections misleveled
index               on      subtree  back-of-book index; letter sub-headings go with it
references          on      subtree  bibliography; sub-lists ("Primary sources") too
acknowledgments     on      subtree  thanks and funding: never the answer to a question
abbreviations       on      own      acronym lists match every query that has an acronym
glossary            on      own      term lists; turn off if "what does X mean?" matters
foreword            on      own      a foreword/preface is a message, not findings; its
                                     children may be real content, so they are kept
executive_summary   off     own      dense, real content that answers many questions
                                     (often better than the body); kept by default
=================== ======= ======== =====================================================

``own`` drops only the node's own text (its children are judged by their own titles);
``subtree`` drops the node and everything below it. A subtree match that would cover more
than ``max_subtree_fraction`` of the document's lines (heading levels from PDF converters
are often wrong, so a "References" level-1 heading may seem to hold the rest of the file)
is downgraded to ``own``.

Matching
--------
The *whole* normalized title must match, never a substring: "References" and "7. References
(continued)" are noise, "References to prior work" is not; "Index" is, "Index funds" is not.
Normalization: Unicode NFKC, case-folded, accents removed, markup (``**``, ``_``, `` ` ``)
and surrounding punctuation dropped, leading numbering ("7.", "7.1", "VII.", "A.", "(a)",
"Chapter 3:", "Appendix B:", "第七章", "七、") and trailing "(continued)" / "(cont.)" /
"(suite)" / "（续）" removed. Titles are listed in English, Spanish, French, German,
Portuguese, Italian and Chinese. Users add titles and regular expressions (matched against
the normalized title with ``re.fullmatch``) through :class:`NoiseConfig`.

An optional LLM pass (:class:`NoiseConfig` ``use_llm=True`` plus an LLM: the ``llm`` argument
of :func:`classify_noise`, or ``noise_llm`` of :func:`proxy_pointer.parse.chunking.chunk_tree` when
indexing) labels noise in one call per document; its labels are added to the rule matches,
and a reply that cannot be parsed is ignored (the rules still apply).
"""

from __future__ import annotations

import json
import logging
import re
import tomllib
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..errors import ConfigError
from ..llm.base import LLM
from ..vocab.filings import FILINGS
from .tree import Node, Tree

__all__ = [
    "CATEGORIES",
    "DEFAULT_CATEGORIES",
    "NoiseConfig",
    "NoiseDecision",
    "bare_title",
    "classify_noise",
    "classify_with_llm",
    "match_title",
    "noise_labels",
]


_MARKUP_RE = re.compile(r"[*_`~#\[\]<>|]")
_CONT_RE = re.compile(
    r"\s*(?:[\(\[]\s*(?:continued|continuation|cont'?d|cont\.?|suite|fortsetzung|forts\.?"
    r"|continuacion|continuacao|continua|segue|续|續|接上页)\s*[\)\]]"
    r"|[,:\-–—]?\s*(?:continued|cont'd|contd|cont\.))\s*$"
)
def _plain(text: str) -> str:
    """NFKC, case-folded, accents dropped: how :func:`bare_title` reads a title."""
    s = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in unicodedata.normalize("NFKD", s) if not unicodedata.combining(ch))


# the numbering a title may start with: a label word and its number, a decimal, a roman
# numeral, a letter, a parenthesised mark, a CJK chapter or appendix mark
_NUM_RE = re.compile(
    r"^(?:"
    rf"(?:{'|'.join(_plain(lab.word) for lab in FILINGS.labels_read('bare'))})"
    r"\s+[0-9a-z]{1,6}(?:\.[0-9a-z]+)*\s*[.:)\-–—]?\s+"
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
    s = _MARKUP_RE.sub(" ", _plain(title))
    s = s.replace("’", "'").strip(" \t:.-–—;,")
    for _ in range(3):  # "Appendix A. 1. References": peel a few layers, never loop forever
        new = _CONT_RE.sub("", _NUM_RE.sub("", s, count=1)).strip(" \t:.-–—;,")
        if new == s or not new:
            break
        s = new
    return " ".join(_PUNCT_RE.sub(" ", s).replace("_", " ").split())

log = logging.getLogger(__name__)

Scope = Literal["own", "subtree"]

def _read_rules(path: Path) -> dict[str, tuple[Scope, frozenset[str], tuple[str, ...]]]:
    """category -> (scope, normalized titles, regexes over the normalized title), from the
    data file beside this module (``noise.toml``), in its order."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    return {name: (row["scope"], frozenset(row["titles"]), tuple(row.get("patterns", ())))
            for name, row in data.items()}


_RULES = _read_rules(Path(__file__).with_name("noise.toml"))

CATEGORIES: tuple[str, ...] = tuple(_RULES)
DEFAULT_CATEGORIES: frozenset[str] = frozenset(CATEGORIES) - {"executive_summary"}
CUSTOM = "custom"


@dataclass(frozen=True, kw_only=True)
class NoiseConfig:
    """Which noise categories are dropped, plus the user's own titles and patterns.

    ``categories``: enabled category names (see :data:`CATEGORIES`). ``extra_titles`` are
    matched after the same normalization as the built-in ones; ``extra_patterns`` are regular
    expressions ``re.fullmatch``-ed against the normalized title (lower case, no accents,
    numbering and punctuation removed). Both report category ``"custom"`` with
    ``extra_scope``. ``keep_titles`` are never noise, whatever matches them.
    ``max_subtree_fraction``: a subtree match larger than this share of the document's lines
    only drops the node's own text. ``use_llm``: also ask an LLM, once per document (the
    ``llm`` argument of :func:`classify_noise`; :func:`~proxy_pointer.parse.chunking.chunk_tree`
    refuses to run without its ``noise_llm``). Raises
    :class:`~proxy_pointer.errors.ConfigError` on an unknown category, a bad scope or a
    pattern that does not compile.

    >>> NoiseConfig(categories=DEFAULT_CATEGORIES | {"executive_summary"})  # doctest: +SKIP
    """

    categories: frozenset[str] = DEFAULT_CATEGORIES
    extra_titles: tuple[str, ...] = ()
    extra_patterns: tuple[str, ...] = ()
    extra_scope: Scope = "own"
    keep_titles: tuple[str, ...] = ()
    max_subtree_fraction: float = 0.5
    use_llm: bool = False
    _compiled: tuple[tuple[str, Scope, frozenset[str], tuple[re.Pattern[str], ...]], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        cats = frozenset(self.categories)
        unknown = sorted(cats - set(CATEGORIES))
        if unknown:
            raise ConfigError(
                f"unknown noise categories {unknown}; choose from {', '.join(CATEGORIES)}"
            )
        if self.extra_scope not in ("own", "subtree"):
            raise ConfigError(f"extra_scope must be 'own' or 'subtree', got {self.extra_scope!r}")
        if not 0.0 < self.max_subtree_fraction <= 1.0:
            raise ConfigError(
                f"max_subtree_fraction must be in (0, 1], got {self.max_subtree_fraction}"
            )
        object.__setattr__(self, "categories", cats)
        for name in ("extra_titles", "extra_patterns", "keep_titles"):
            value = getattr(self, name)
            if isinstance(value, str):
                raise ConfigError(f"{name} must be a sequence of strings, not one string")
            object.__setattr__(self, name, tuple(value))
        compiled = []
        for cat in CATEGORIES:
            if cat in cats:
                scope, titles, patterns = _RULES[cat]
                compiled.append((cat, scope, titles, tuple(re.compile(p) for p in patterns)))
        if self.extra_titles or self.extra_patterns:
            try:
                extra = tuple(re.compile(p) for p in self.extra_patterns)
            except re.error as e:
                raise ConfigError(f"noise pattern does not compile: {e}") from e
            titles = frozenset(bare_title(t) for t in self.extra_titles)
            compiled.insert(0, (CUSTOM, self.extra_scope, titles, extra))
        object.__setattr__(self, "_compiled", tuple(compiled))

    def match_normalized(self, norm: str) -> tuple[str, Scope] | None:
        """``(category, scope)`` of the first enabled rule that an already normalized title
        matches (custom titles and patterns first), else None. ``keep_titles`` is not
        consulted here; :func:`match_title` does that."""
        for cat, scope, titles, patterns in self._compiled:
            if norm in titles:
                return cat, scope
            for p in patterns:
                if p.fullmatch(norm):
                    return cat, scope
        return None

    @classmethod
    def off(cls) -> NoiseConfig:
        """A config that marks nothing as noise."""
        return cls(categories=frozenset())

    def with_categories(self, *add: str, remove: Iterable[str] = ()) -> NoiseConfig:
        """A copy with categories ``add`` enabled and ``remove`` disabled."""
        return replace(self, categories=(self.categories | set(add)) - set(remove))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (for an index manifest); inverse of :meth:`from_dict`."""
        return {
            "categories": sorted(self.categories),
            "extra_titles": list(self.extra_titles),
            "extra_patterns": list(self.extra_patterns),
            "extra_scope": self.extra_scope,
            "keep_titles": list(self.keep_titles),
            "max_subtree_fraction": self.max_subtree_fraction,
            "use_llm": self.use_llm,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NoiseConfig:
        """Rebuild from :meth:`to_dict` output; raises ``ConfigError`` on unknown keys."""
        known = {"categories", "extra_titles", "extra_patterns", "extra_scope", "keep_titles",
                 "max_subtree_fraction", "use_llm"}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown noise settings {unknown}")
        kw = dict(data)
        for key in ("extra_titles", "extra_patterns", "keep_titles"):
            if key in kw:
                kw[key] = tuple(kw[key])
        if "categories" in kw:
            kw["categories"] = frozenset(kw["categories"])
        return cls(**kw)


@dataclass(frozen=True)
class NoiseDecision:
    """Why one node is skipped.

    ``scope`` is ``"own"`` (only the node's own text is dropped) or ``"subtree"`` (the node
    and all its descendants). For a node that lies inside a noise subtree, ``inherited_from``
    names the matching ancestor and ``category``/``scope`` are the ancestor's.
    """

    node_id: str
    category: str
    scope: Scope
    reason: str
    inherited_from: str | None = None


def match_title(title: str, config: NoiseConfig | None = None) -> tuple[str, Scope, str] | None:
    """``(category, scope, matched form)`` if ``title`` names a noise section, else None."""
    config = config or NoiseConfig()
    norm = bare_title(title)
    if not norm or norm in {bare_title(t) for t in config.keep_titles}:
        return None
    m = config.match_normalized(norm)
    return (m[0], m[1], norm) if m else None


# --- classification -------------------------------------------------------------------
def classify_noise(
    tree: Tree, config: NoiseConfig | None = None, *, llm: LLM | None = None
) -> dict[str, NoiseDecision]:
    """Noise decisions for the heading nodes of ``tree``, keyed by node id.

    Nodes inside a noise subtree get their own decision (``inherited_from`` set), so the
    result lists every node whose own text is skipped. The preamble is never noise. With
    ``config.use_llm`` and an ``llm``, one LLM call adds its labels (see
    :func:`classify_with_llm`); LLM trouble only logs a warning. Never raises on content.
    """
    config = config or NoiseConfig()
    direct: dict[str, tuple[str, Scope, str]] = {}
    for node in tree.heading_nodes:
        m = match_title(node.title or node.raw_title, config)
        if m:
            direct[node.node_id] = (m[0], m[1], f"title {node.title!r} matches {m[0]}")
    if config.use_llm and llm is not None:
        for nid, cat in classify_with_llm(tree, llm, config).items():
            if nid not in direct:
                scope = _RULES[cat][0] if cat in _RULES else config.extra_scope
                direct[nid] = (cat, scope, f"LLM labeled {tree.get(nid).title!r} as {cat}")
    return _expand(tree, direct, config)


def _expand(
    tree: Tree, direct: Mapping[str, tuple[str, Scope, str]], config: NoiseConfig
) -> dict[str, NoiseDecision]:
    n_lines = max(1, len(tree.lines))
    out: dict[str, NoiseDecision] = {}
    for node in tree.heading_nodes:  # pre-order: an ancestor is decided before its children
        if node.node_id in out:
            continue
        if node.node_id not in direct:
            continue
        cat, scope, reason = direct[node.node_id]
        if (scope == "subtree" and node.children
                and (node.end - node.start) / n_lines > config.max_subtree_fraction):
            scope = "own"
            reason += (f"; its subtree holds {node.end - node.start} of {n_lines} lines, "
                       "more than looks plausible, so only its own text is dropped")
        out[node.node_id] = NoiseDecision(node.node_id, cat, scope, reason)
        if scope == "subtree":
            for d in _descendants(tree, node):
                out[d.node_id] = NoiseDecision(
                    d.node_id, cat, "subtree",
                    f"inside {node.title!r} ({node.node_id}), {cat}", node.node_id,
                )
    return {n.node_id: out[n.node_id] for n in tree.heading_nodes if n.node_id in out}


def _descendants(tree: Tree, node: Node) -> list[Node]:
    out, stack = [], list(reversed(node.children))
    while stack:
        d = tree.get(stack.pop())
        out.append(d)
        stack.extend(reversed(d.children))
    return out


def noise_labels(decisions: Mapping[str, NoiseDecision]) -> dict[str, str]:
    """Short labels for display (``format_tree(tree, noise=...)``): node id -> label."""
    return {
        nid: (f"noise: {d.category} (in {d.inherited_from})" if d.inherited_from
              else f"noise: {d.category} ({d.scope})")
        for nid, d in decisions.items()
    }


_SYSTEM = (
    "You label the sections of one document that are not content: navigation or apparatus "
    "whose text should not be searched. Answer with JSON only."
)
_CATEGORY_HELP = {
    "contents": "table of contents, list of figures/tables",
    "index": "alphabetical index at the end of a book",
    "references": "references, bibliography, works cited",
    "acknowledgments": "acknowledgments, thanks, funding notes",
    "abbreviations": "lists of abbreviations, acronyms or symbols",
    "glossary": "glossary, list of defined terms",
    "foreword": "foreword or preface",
    "executive_summary": "executive summary",
}
_MAX_LLM_NODES = 2000  # a prompt line per node; beyond this the rules alone must do


def classify_with_llm(tree: Tree, llm: LLM, config: NoiseConfig | None = None
                      ) -> dict[str, str]:
    """Ask ``llm`` once which nodes are noise: node id -> enabled category.

    The prompt lists node ids, levels and titles (no section text). The reply must hold a
    JSON object ``{"noise": [{"id": "0003", "category": "contents"}, ...]}`` (a bare list or
    an ``{id: category}`` object are accepted too). Unknown ids, disabled categories and
    unparsable replies are dropped; a failing call logs a warning and returns ``{}``.
    """
    config = config or NoiseConfig()
    cats = [c for c in CATEGORIES if c in config.categories]
    nodes = tree.heading_nodes
    if not cats or not nodes or len(nodes) > _MAX_LLM_NODES:
        return {}
    listing = "\n".join(f"{n.node_id}\t{'  ' * (n.level - 1)}{n.title}" for n in nodes)
    prompt = (
        f"Document: {tree.title}\nCategories:\n"
        + "\n".join(f"- {c}: {_CATEGORY_HELP[c]}" for c in cats)
        + "\n\nSections (id, tab, indented title):\n" + listing
        + '\n\nReply {"noise": [{"id": "<id>", "category": "<category>"}]} listing only the '
        "sections that belong to a category; an empty list if none."
    )
    try:
        reply = llm.generate(prompt, system=_SYSTEM)
        text = reply.text
    except Exception as e:  # an optional helper: any backend failure falls back to the rules
        log.warning("%s: LLM noise classification failed (%s); using title rules only",
                    tree.doc_id, e)
        return {}
    labels = _parse_labels(text if isinstance(text, str) else "")
    valid = {n.node_id for n in nodes}
    out = {nid: cat for nid, cat in labels.items() if nid in valid and cat in config.categories}
    if labels and not out:
        log.warning("%s: LLM noise reply named no known node/category; ignored", tree.doc_id)
    return out


_JSON_RE = re.compile(r"[\{\[]")


def _parse_labels(text: str) -> dict[str, str]:
    """Parse the first JSON value in ``text`` into node id -> category; {} on garbage."""
    decoder = json.JSONDecoder()
    data: Any = None
    for m in _JSON_RE.finditer(text):
        try:
            data, _ = decoder.raw_decode(text, m.start())
            break
        except ValueError:
            continue
    if isinstance(data, dict) and "noise" in data:
        data = data["noise"]
    out: dict[str, str] = {}
    if isinstance(data, dict):
        items = [{"id": k, "category": v} for k, v in data.items()]
    elif isinstance(data, list):
        items = data
    else:
        return out
    for item in items:
        if isinstance(item, dict):
            nid = item.get("id", item.get("node_id"))
            cat = item.get("category", item.get("label"))
            if isinstance(nid, str | int) and isinstance(cat, str):
                out[str(nid).zfill(4) if str(nid).isdigit() else str(nid)] = (
                    cat.strip().lower().replace(" ", "_").replace("-", "_"))
    return out
