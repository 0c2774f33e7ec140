"""What the framework retrievers (:mod:`.langchain`, :mod:`.llama_index`) share.

One argument set: an open ``index`` or an ``index_dir`` (a saved index or a
``milvus:URI[#NAME]`` location), plus any :class:`~.search.config.RetrievalConfig` field
(``k``, ``budget``, ``doc_ids``, ``path_prefix``, ``mode``, ...) given as a keyword or in
``options``. Every name is checked and every value validated when the retriever is made
(and again for per-call settings), so a typo like ``budegt=10`` is a
:class:`~.errors.ConfigError` naming it, never a setting silently dropped.

One metadata shape: :func:`section_metadata`, the result payload's fields of a section
(:meth:`~proxy_pointer.search.sections.Section.to_dict`) without its text and with its
``breadcrumb``. Its ``relevance`` (0-1: cosine similarity of the question and the
section's best chunk) is the score frameworks compare with a cutoff; ``score`` is the raw
rank-fusion score.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any

from ..access import parse_where
from ..errors import ConfigError
from ..index import Index
from ..search.config import TUNING, RetrievalConfig
from ..search.sections import Section

__all__ = ["OPTIONS", "open_index", "retrieval_options", "section_metadata"]

#: The settings a framework retriever takes besides ``index``/``index_dir``: the request's
#: and every :class:`~proxy_pointer.search.config.Tuning` knob, by name.
OPTIONS: tuple[str, ...] = ("budget", "k", "doc_ids", "path_prefix", "principal", "where",
                            *TUNING)


def open_index(index: Index | None, index_dir: str | os.PathLike[str] | None) -> Index:
    """``index`` itself, or the index saved at ``index_dir``; :class:`ConfigError` when
    neither (or something else) is given."""
    if index is None:
        if index_dir is None:
            raise ConfigError("give index= (an Index) or index_dir= (a saved index)")
        return Index.load(index_dir)
    if not isinstance(index, Index):
        raise ConfigError(f"index must be a proxy_pointer Index, got {type(index).__name__}")
    return index


def retrieval_options(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """``layers`` of settings merged (later ones win), every name checked against
    :data:`OPTIONS` and the values validated; :class:`ConfigError` names an unknown
    setting (with the closest known one) or a bad value.

    A retriever's view is a ceiling: once a layer sets a ``principal``, a later one may
    only narrow it (a subset of its groups; ``None``, everything, is refused), and a later
    ``where`` adds its filters to the earlier ones instead of replacing them."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for name, value in layer.items():
            if name == "principal" and merged.get("principal") is not None:
                merged[name] = _narrowed(merged[name], value)
            elif name == "where" and merged.get("where") and value:
                merged[name] = (*parse_where(merged[name]), *parse_where(value))
            else:
                merged[name] = value
    for name in merged:
        if name not in OPTIONS:
            close = difflib.get_close_matches(name, OPTIONS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown retriever setting {name!r}{hint}; settings: "
                              f"index, index_dir, {', '.join(OPTIONS)}")
    config = RetrievalConfig(**merged)
    # a synonyms or aliases file is read once, here, and not again for every question
    for name in ("synonyms", "aliases"):
        if name in merged:
            merged[name] = getattr(config.tuning, name)
    return merged


def _narrowed(ceiling: Any, principal: Any) -> Any:
    """``principal`` when it is within ``ceiling``'s groups; :class:`ConfigError` when it
    would widen the view (``None`` or another group)."""
    if principal is None:
        raise ConfigError("this retriever reads as a principal; a call cannot drop it "
                          "(principal=None would widen its view)")
    have = {ceiling} if isinstance(ceiling, str) else set(ceiling)
    want = {principal} if isinstance(principal, str) else set(principal)
    if not want <= have:
        raise ConfigError(f"a call may only narrow this retriever's principal: "
                          f"{sorted(want - have)} not among {sorted(have)}")
    return principal


def section_metadata(section: Section) -> dict[str, Any]:
    """A retrieved section's pointers, for a framework document's metadata: ``ref``,
    ``doc_id``, ``node_id``, ``title``, ``path`` (list), ``breadcrumb`` (joined with
    `` > ``), 1-based inclusive ``start_line``/``end_line``, ``pages`` (first, last; None
    but for converted PDFs), ``score``, ``relevance`` (0-1), ``tokens``, ``trimmed``,
    ``also_in``, the line spans (``matched_spans``, ``packed_spans``) and the document's
    ``metadata`` (without its access list)."""
    meta = section.to_dict()
    del meta["text"]
    meta["breadcrumb"] = section.breadcrumb
    return meta
