"""The one definition of what a retrieval request may ask: the choices (:data:`MODES`,
:data:`PACKINGS`, :data:`EXPANDS`), the bounds a served request must keep (:class:`Limits`),
one check per rule, and :class:`RetrievalConfig`.

Every interface reads these: :class:`RetrievalConfig` (the Python API, no upper bounds),
the service behind HTTP and MCP (:class:`Limits` applied), the HTTP request models and the
MCP tool schema (their bounds and enums), and the CLI's ``choices``. A check raises
:class:`~proxy_pointer.errors.ConfigError` worded ``"<name> must be <rule>, got <value>"``
(the question: ``"the question is empty"`` / ``"the question is over N characters"``).

Cheap to import (the CLI reads the choices before it loads anything heavy).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sized
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from .. import defaults
from ..access import EVERYONE, Access, Where, parse_where
from ..errors import ConfigError

if TYPE_CHECKING:
    from ..llm.base import LLM
    from ..vocab.synonyms import Synonyms

__all__ = ["EXPANDS", "MAX_QUESTION_CHARS", "MODES", "PACKINGS", "TUNING", "Expand", "Limits",
           "Mode", "Packing", "RetrievalConfig", "Tuning", "check_budget", "check_choice",
           "check_count", "check_doc_ids", "check_k", "check_question", "check_where"]

#: How nodes are ranked as sections (:mod:`.ranking`); the default first. The type serves
#: schemas (the HTTP request model); the tuple serves checks and the CLI's choices.
Mode = Literal["chunks", "collapsed", "traverse"]
MODES: tuple[str, ...] = get_args(Mode)
#: How sections fill the budget (:mod:`.packing`): best blocks, or whole sections in order.
Packing = Literal["evidence", "sections"]
PACKINGS: tuple[str, ...] = get_args(Packing)
#: What a node hands over: its section with subsections, or its own text only.
Expand = Literal["section", "own"]
EXPANDS: tuple[str, ...] = get_args(Expand)


#: The longest question searched: a served request over it is refused (``Limits``), the
#: Python API searches its first ``MAX_QUESTION_CHARS`` characters (the embedder reads about
#: 1,000; BM25 needs no more).
MAX_QUESTION_CHARS = 4_000


@dataclass(frozen=True)
class Limits:
    """Bounds on one served request (HTTP, MCP), checked before any work is done; the
    Python API has none."""

    max_question_chars: int = MAX_QUESTION_CHARS
    max_budget: int = 32_000
    max_k: int = 100
    max_doc_ids: int = 1_000
    max_where_pairs: int = 32  # metadata / card filters of one request
    max_where_chars: int = 200  # one filter's key or value (a period, an entity's name)
    max_path_prefix_chars: int = 1_000  # a breadcrumb prefix
    max_body_bytes: int = 1_000_000  # HTTP bodies (JSON); enforced by the HTTP layer


def check_question(question: Any, limits: Limits | None = None) -> str:
    """``question`` without surrounding whitespace; :class:`ConfigError` when it is no
    string, blank, or (with ``limits``) over ``limits.max_question_chars`` characters."""
    if not isinstance(question, str) or not question.strip():
        raise ConfigError("the question is empty")
    if limits is not None and len(question) > limits.max_question_chars:
        raise ConfigError(f"the question is over {limits.max_question_chars} characters")
    return question.strip()


def check_count(name: str, value: Any, most: int | None = None) -> int:
    """``value`` when it is an integer (not a bool) in ``1..most`` (no upper bound when
    ``most`` is None); :class:`ConfigError` naming ``name`` otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0 and (
            most is None or value <= most):
        return value
    rule = "a positive integer" if most is None else f"an integer in 1..{most}"
    raise ConfigError(f"{name} must be {rule}, got {value!r}")


def check_budget(value: Any, limits: Limits | None = None) -> int:
    """The context token budget: a positive integer, at most ``limits.max_budget``."""
    return check_count("budget", value, None if limits is None else limits.max_budget)


def check_k(value: Any, limits: Limits | None = None) -> int:
    """The sections to keep: a positive integer, at most ``limits.max_k``."""
    return check_count("k", value, None if limits is None else limits.max_k)


def check_doc_ids(value: Sized, limits: Limits) -> None:
    """At most ``limits.max_doc_ids`` doc ids; :class:`ConfigError` otherwise."""
    if len(value) > limits.max_doc_ids:
        raise ConfigError(f"doc_ids must be at most {limits.max_doc_ids} ids, "
                          f"got {len(value)}")


def check_where(where: Where, limits: Limits) -> tuple[tuple[str, str], ...]:
    """``where`` as its ``(key, value)`` pairs (:func:`~proxy_pointer.access.parse_where`)
    when it holds at most ``limits.max_where_pairs`` filters, each key and value at most
    ``limits.max_where_chars`` characters; :class:`ConfigError` naming the limit otherwise,
    before any filter is matched."""
    pairs = parse_where(where)
    if len(pairs) > limits.max_where_pairs:
        raise ConfigError(f"where must be at most {limits.max_where_pairs} filters, "
                          f"got {len(pairs)}")
    longest = max((len(part) for pair in pairs for part in pair), default=0)
    if longest > limits.max_where_chars:
        raise ConfigError(f"a where filter's key and value must be at most "
                          f"{limits.max_where_chars} characters each, got {longest}")
    return pairs


def check_choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; :class:`ConfigError` naming ``name``
    otherwise."""
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return str(value)


@dataclass(frozen=True, kw_only=True)
class Tuning:
    """How the engine turns a question into sections: every knob, with defaults tuned on
    qasper-dev (see README). A request (:class:`RetrievalConfig`) carries one.

    * ``k_search`` chunks are searched, merged into unique nodes, the best ``k`` kept.
    * ``mode`` ranks nodes as sections (:mod:`.ranking`): ``"chunks"`` (default: a node
      ranks by its best chunk), ``"collapsed"`` (every node of a hit document's tree
      competes, by its best chunk and its subtree's mean vector) or ``"traverse"``
      (top-down, ``beam`` children per level). How the three compare in evidence hit and
      latency: ``git show c08a0c5:benchmarks/results/qasper-dev-2026-12-04-ranking.md``.
    * ``expand="section"`` hands over a node with its subsections (the reference design);
      ``"own"`` only its own text up to its first child.
    * ``packing="evidence"`` (default, :func:`~.packing.pack_evidence`) fills the budget
      with the best lines of the ``k`` sections, whole sections where they fit;
      ``lexical_weight`` (default 0: higher weights lost evidence on qasper-dev,
      ``benchmarks/results/notes/ranking-experiments.md``) is how much a block's own BM25 match
      with the question raises its chunk's score. ``packing="sections"`` hands over whole
      sections in rank order, trimming one that does not fit to its heading and its best
      pieces. Both are one planner (:func:`~.packing.pack`): a block or line too long for a
      section's share is cut at sentences, so no ranked section is left out for its size.
      Either way a section may take at most ``max(section_floor, max_section_share *
      budget)`` tokens (the evidence packer lifts this cap only to fill what the other
      sections left; ``evidence_cap=False`` drops it), so one long chapter cannot crowd out
      every other hit.
    * ``documents`` > 0 keeps only the sections of that many best documents (two-stage
      search: a document ranks by its best chunk and by the mean vector of its opening
      chunks). Off by default: on qasper-dev's corpus search it lost 3-5 points.
    * ``rerank_llm`` (opt-in, off): an :class:`~.llm.base.LLM` that reorders the best
      ``rerank_top`` sections by their breadcrumbs, one call per query (:mod:`.rerank`).
    * ``promote_parent``: when this many (>= 2) selected nodes share a parent, the parent's
      section replaces them if it fits; 0 (default) turns it off.
    * ``hybrid`` (default on) fuses BM25 (bm25s, over the same chunks and breadcrumbs) with
      the dense ranking by reciprocal rank fusion (constant ``rrf_k``); no LLM either way.
    * ``title_boost`` is added to the score of chunks whose breadcrumb carries a label the
      question names ("Chapter 2", "Box 1.1", "Item 7", "Note 12", "Table 3"): the
      embedder barely sees such numbers, the breadcrumb states them exactly. With it on, a
      section the question names by all the words of its title ("the cash flow statement")
      comes first (:func:`~.ranking.boost_named`).
    * ``route`` (default on) sends a question that names an entity the documents' cards
      know ("3M", "FY2021", "10-Q") to those documents before ranking sections
      (:mod:`.routing`); the result's ``routing`` says what matched. A question naming
      none is searched over every document, as with ``route=False``.
    * ``vocabulary`` (default on): a question naming a concept of the filing vocabulary
      ("working capital", "inventory turnover", "capex": :mod:`proxy_pointer.vocab`) is
      searched with the line items it needs, and the statements that answer it are ranked
      first as if named; ``synonyms`` (a :class:`~proxy_pointer.vocab.synonyms.Synonyms`,
      e.g. ``Synonyms.load("synonyms.txt")`` in the Solr format) are applied to the
      question first (a path is read as a synonyms file). Both act at query time; the
      result's ``expansion`` says what they did.
    * ``refine`` (default 100; 0 turns it off): where the index has a refiner (fast
      mode's is the MiniLM it was distilled from: :mod:`.refine`), the stored vectors'
      best ``refine`` chunks and BM25's best ``refine`` are ranked by the refiner's vectors,
      made at query time, and every later step compares the question with those vectors
      (a question also has the chunks of the statement sections it needs and of a section
      it names embedded: linear in those sections). Ignored by an index without one, and
      in the modes ``"collapsed"`` and ``"traverse"``, which compare the question with
      every chunk of up to eight documents.
    * ``aliases``: names of companies no filing prints, for routing ("Pepsi, PepsiCo";
      the synonyms format, or its path): a rule one of whose terms is a name a card knows
      adds the others to that entity's names.
    """

    k_search: int = defaults.K_SEARCH
    expand: str = defaults.EXPAND
    mode: str = defaults.MODE
    beam: int = 3
    packing: str = defaults.PACKING
    lexical_weight: float = 0.0
    evidence_cap: bool = True
    documents: int = 0
    rerank_llm: LLM | None = None
    rerank_top: int = 50
    max_section_share: float = 0.3
    section_floor: int = 400
    promote_parent: int = 0
    hybrid: bool = defaults.HYBRID
    rrf_k: int = 60
    title_boost: float = 0.15
    route: bool = True
    vocabulary: bool = True
    synonyms: Synonyms | str | os.PathLike[str] | None = None
    aliases: Synonyms | str | os.PathLike[str] | None = None
    refine: int = defaults.REFINE

    def __post_init__(self) -> None:
        for name in ("synonyms", "aliases"):
            if isinstance(getattr(self, name), str | os.PathLike):
                from ..vocab.synonyms import Synonyms

                object.__setattr__(self, name, Synonyms.load(getattr(self, name)))
        check_count("k_search", self.k_search)
        check_choice("expand", self.expand, EXPANDS)
        check_choice("mode", self.mode, MODES)
        check_choice("packing", self.packing, PACKINGS)
        check_count("beam", self.beam)
        if not isinstance(self.documents, int) or self.documents < 0:
            raise ConfigError(
                f"documents must be 0 (off) or a positive integer, got {self.documents!r}")
        if not isinstance(self.rerank_top, int) or self.rerank_top < 2:
            raise ConfigError(f"rerank_top must be at least 2, got {self.rerank_top!r}")
        if self.lexical_weight < 0:
            raise ConfigError("lexical_weight must be >= 0")
        if not 0 < self.max_section_share <= 1:
            raise ConfigError("max_section_share must be in (0, 1]")
        if self.promote_parent < 0 or self.promote_parent == 1:
            raise ConfigError("promote_parent must be 0 (off) or at least 2")
        if self.section_floor < 0:
            raise ConfigError("section_floor must be >= 0")
        if not isinstance(self.refine, int) or isinstance(self.refine, bool) or self.refine < 0:
            raise ConfigError(f"refine must be 0 (off) or a positive integer, got {self.refine!r}")
        if self.rrf_k < 1:
            raise ConfigError("rrf_k must be at least 1")


#: The knobs of :class:`Tuning`, which a :class:`RetrievalConfig` also takes by name.
TUNING: tuple[str, ...] = tuple(f.name for f in fields(Tuning))


@dataclass(frozen=True, init=False)
class RetrievalConfig:
    """One retrieval request, apart from its question: what is asked (``budget``, ``k``,
    ``doc_ids``, ``path_prefix``), who asks (``access``) and how the engine is tuned
    (``tuning``, a :class:`Tuning`).

    * ``budget`` caps the total tokens of all section texts (its arithmetic is
      :mod:`.packing`'s alone); ``k`` sections are kept.
    * ``doc_ids`` and ``path_prefix`` restrict the search (``path_prefix`` matches the
      leading titles of a chunk's breadcrumb, case-insensitively).
    * ``access`` (an :class:`~proxy_pointer.access.Access`: the caller's groups and
      filters, built once per request) hides documents whose metadata's ``access`` names
      none of its groups and keeps those whose metadata holds every ``where`` pair. It
      acts inside search, before the top ``k``: hidden documents take no places. Default:
      a trusted caller, no filter. ``principal`` (the groups) and ``where``
      (``{"key": "value"}`` or ``["key=value"]``) are the same given apart: each replaces
      that part of ``access`` and is folded into it at construction (read ``access``).
      ``where`` on a card field (``entity``, ``period``, ``kind``, ``fiscal_year``, ...)
      matches the document's card (:func:`~proxy_pointer.parse.cards.card_matches`:
      ``entity=3M`` any name it goes by, ``period=FY2021`` its fiscal year).
    * ``tuning``: every other knob (:class:`Tuning`). Each may also be given by name
      (``RetrievalConfig(mode="traverse")`` is ``RetrievalConfig(tuning=Tuning(
      mode="traverse"))``, and ``dataclasses.replace(config, mode=...)`` works the same);
      reading one by name (``config.mode``) is deprecated: read ``config.tuning.mode``.
    """

    budget: int
    k: int
    doc_ids: tuple[str, ...] | None
    path_prefix: tuple[str, ...] | None
    access: Access
    tuning: Tuning

    def __init__(self, *, budget: int = defaults.BUDGET, k: int = defaults.K,
                 doc_ids: str | Iterable[str] | None = None,
                 path_prefix: str | Iterable[str] | None = None, access: Access = EVERYONE,
                 principal: Iterable[str] | None = None, where: Where = None,
                 tuning: Tuning | None = None, **tuned: Any) -> None:
        unknown = sorted(set(tuned) - set(TUNING))
        if unknown:
            raise TypeError(f"RetrievalConfig.__init__() got an unexpected keyword argument "
                            f"{unknown[0]!r}")
        tuning = tuning if tuning is not None else Tuning()
        if not isinstance(tuning, Tuning):
            raise ConfigError(f"tuning must be a Tuning, got {type(tuning).__name__}")
        if not isinstance(access, Access):
            raise ConfigError(f"access must be an Access, got {type(access).__name__}")
        if principal is not None or where is not None:
            asked = Access.of(principal, where)  # ConfigError for a malformed one
            access = replace(access,
                             principal=access.principal if principal is None else asked.principal,
                             where=access.where if where is None else asked.where)
        if isinstance(doc_ids, str):
            doc_ids = (doc_ids,)
        elif doc_ids is not None:
            doc_ids = tuple(doc_ids)
        if isinstance(path_prefix, str):
            path_prefix = tuple(p.strip() for p in path_prefix.split(">") if p.strip()) or None
        elif path_prefix is not None:
            path_prefix = tuple(path_prefix) or None
        for name, value in (("budget", check_budget(budget)), ("k", check_k(k)),
                            ("doc_ids", doc_ids), ("path_prefix", path_prefix),
                            ("access", access),
                            ("tuning", replace(tuning, **tuned) if tuned else tuning)):
            object.__setattr__(self, name, value)

    def tuned(self, **knobs: Any) -> RetrievalConfig:
        """This request with some of its tuning's knobs changed (typed, where
        ``dataclasses.replace(config, mode=...)`` is not to a type checker)."""
        return replace(self, tuning=replace(self.tuning, **knobs))

    def __getattr__(self, name: str) -> Any:
        """A knob read by name (deprecated): ``config.mode`` is ``config.tuning.mode``."""
        if name in TUNING:
            warnings.warn(f"RetrievalConfig.{name} is deprecated: read "
                          f"RetrievalConfig.tuning.{name}", DeprecationWarning, stacklevel=2)
            return getattr(self.tuning, name)
        raise AttributeError(f"'RetrievalConfig' object has no attribute {name!r}")
