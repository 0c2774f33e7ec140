"""Milvus as the index store (``pip install 'proxy-pointer[milvus]'``): the store
(:mod:`.store`), its collections (:mod:`.schema`), a generation's segment (:mod:`.segment`)
and its dense and BM25 search (:mod:`.search`)."""

from __future__ import annotations

from .store import GRACE_SECONDS, MilvusStore, parse_location

__all__ = ["GRACE_SECONDS", "MilvusStore", "parse_location"]
