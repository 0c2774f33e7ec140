"""The methods under test, by name (see each module for what it does)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import proxy, windows
from .base import SCOPES, BuildStats, CountingEmbedder, Method, MethodUnavailable
from .oracle import OracleMethod
from .pageindex import PageIndexMethod
from .proxy import ProxyPointerMethod
from .windows import BM25Method, FlatMethod

__all__ = [
    "DEFAULT_METHODS",
    "METHODS",
    "SCOPES",
    "BuildStats",
    "CountingEmbedder",
    "Method",
    "MethodUnavailable",
    "fresh_caches",
    "make_method",
]

METHODS: dict[str, Callable[..., Any]] = {
    "proxy-pointer": lambda k: ProxyPointerMethod("proxy-pointer", k=k),
    # the search before query understanding: no concepts, statements or line items
    "proxy-pointer-no-vocabulary": lambda k: ProxyPointerMethod(
        "proxy-pointer-no-vocabulary", vocabulary=False, k=k),
    "proxy-pointer-own": lambda k: ProxyPointerMethod("proxy-pointer-own", expand="own", k=k),
    "proxy-pointer-dense": lambda k: ProxyPointerMethod("proxy-pointer-dense", hybrid=False,
                                                        k=k),
    "proxy-pointer-no-noise": lambda k: ProxyPointerMethod("proxy-pointer-no-noise",
                                                           noise=False, k=k),
    "proxy-pointer-chars2000": lambda k: ProxyPointerMethod(
        "proxy-pointer-chars2000", chunking="chars", k=k),
    "proxy-pointer-ivf": lambda k: ProxyPointerMethod("proxy-pointer-ivf", vector_kind="ivf",
                                                      k=k),
    "proxy-pointer-naive": lambda k: ProxyPointerMethod(
        "proxy-pointer-naive", k=k or 5, hybrid=False, max_section_share=1.0, section_floor=0,
        packing="sections"),
    "proxy-pointer-sections": lambda k: ProxyPointerMethod(
        "proxy-pointer-sections", packing="sections", k=k),
    "proxy-pointer-collapsed": lambda k: ProxyPointerMethod(
        "proxy-pointer-collapsed", mode="collapsed", k=k),
    "proxy-pointer-traverse": lambda k: ProxyPointerMethod(
        "proxy-pointer-traverse", mode="traverse", k=k),
    "proxy-pointer-windows": lambda k: ProxyPointerMethod(
        "proxy-pointer-windows", chunking="windows", k=k),
    # how many chunks an index's refiner rescores (fast mode's MiniLM; 0: the stored
    # vectors alone); the default is 100 (proxy_pointer.defaults.REFINE)
    "proxy-pointer-unrefined": lambda k: ProxyPointerMethod("proxy-pointer-unrefined",
                                                            refine=0, k=k),
    "proxy-pointer-refine-50": lambda k: ProxyPointerMethod("proxy-pointer-refine-50",
                                                            refine=50, k=k),
    "proxy-pointer-refine-200": lambda k: ProxyPointerMethod("proxy-pointer-refine-200",
                                                             refine=200, k=k),
    "proxy-pointer-milvus": lambda k: ProxyPointerMethod(
        "proxy-pointer-milvus", store="milvus", k=k),
    "flat": lambda k: FlatMethod("flat", 2000, 200),
    "flat-500": lambda k: FlatMethod("flat-500", 500, 50),
    "bm25": lambda k: BM25Method("bm25", 2000, 200),
    "oracle": lambda k: OracleMethod(),
    "pageindex": lambda k: PageIndexMethod(),
}

# PageIndex is opt-in: it needs its own virtualenv and, for quality numbers, an LLM. The
# refine variants differ from proxy-pointer only for an index with a refiner (fast mode).
DEFAULT_METHODS = tuple(m for m in METHODS if m != "pageindex" and "refine" not in m)


def make_method(name: str, *, k: int | None = None) -> Any:
    """A fresh method object by registry name; raises KeyError for an unknown name."""
    return METHODS[name](k)


@contextmanager
def fresh_caches() -> Iterator[None]:
    """Inside: no windows or indexes are shared, so a build starts from scratch. After: the
    shared ones are back, so later variants reuse the original build and its statistics."""
    saved = windows.save_cache(), proxy.save_cache()
    windows.restore_cache({})
    proxy.restore_cache({})
    try:
        yield
    finally:
        windows.restore_cache(saved[0])
        proxy.restore_cache(saved[1])
