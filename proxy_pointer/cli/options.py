"""The options several commands share: where the index is, retrieval settings, the
question vocabulary, who reads."""

from __future__ import annotations

import argparse

from .. import defaults
from ..search.config import EXPANDS, MODES, PACKINGS

__all__ = ["add_index_option", "add_principal_option", "add_retrieval_options",
           "add_vocabulary_options"]


def add_index_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--index", default=defaults.INDEX_DIR,
                   help="index directory, or milvus:URI[#NAME] for Milvus "
                   "(default: %(default)s)")
    p.add_argument("--milvus-token", default=None, metavar="TOKEN",
                   help="token of a Milvus server (default: $MILVUS_TOKEN)")


def add_retrieval_options(p: argparse.ArgumentParser) -> None:
    add_index_option(p)
    p.add_argument("--budget", type=int, default=defaults.BUDGET,
                   help="context token budget (default %(default)s)")
    p.add_argument("--k", type=int, default=defaults.K,
                   help="unique sections to keep (default %(default)s)")
    p.add_argument("--k-search", type=int, default=defaults.K_SEARCH,
                   help="chunks to search (default %(default)s)")
    p.add_argument("--doc", action="append", default=None, metavar="DOC_ID",
                   help="search only this document (repeatable)")
    p.add_argument("--path", default=None, metavar="PREFIX",
                   help='search only under this breadcrumb prefix, e.g. "Chapter 2"')
    p.add_argument("--expand", choices=EXPANDS, default=defaults.EXPAND,
                   help="hand over whole sections with subsections, or own text only")
    p.add_argument("--hybrid", action=argparse.BooleanOptionalAction, default=defaults.HYBRID,
                   help="fuse BM25 with dense search (default on; --no-hybrid: dense only)")
    p.add_argument("--refine", type=int, default=defaults.REFINE, metavar="N",
                   help="chunks a fast-mode index has MiniLM rescore per question, of the "
                        "static vectors' and of BM25's best each (default %(default)s; 0: "
                        "the static vectors alone, no model loaded)")
    p.add_argument("--mode", choices=MODES, default=defaults.MODE,
                   help="rank sections by their best chunk, over the collapsed tree, or "
                        "top-down (default %(default)s)")
    p.add_argument("--packing", choices=PACKINGS, default=defaults.PACKING,
                   help="fill the budget with the best blocks of the sections, or with whole "
                        "sections in rank order (default %(default)s)")
    add_principal_option(p, where=True)
    add_vocabulary_options(p)


def add_vocabulary_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--synonyms", metavar="FILE", help="Solr-format synonyms for questions")
    p.add_argument("--aliases", metavar="FILE", help="company names for routing ('Pepsi, PepsiCo')")
    p.add_argument("--vocabulary", action=argparse.BooleanOptionalAction, default=True, help=(
        "search a filing concept (working capital, capex) with its statements (default on)"))


def add_principal_option(p: argparse.ArgumentParser, *, where: bool = False) -> None:
    p.add_argument("--principal", action="append", default=None, metavar="GROUP",
                   help="read as a member of GROUP (repeatable): documents whose metadata "
                        "'access' names none of the groups are hidden (default: all documents)")
    if where:
        p.add_argument("--where", action="append", default=None, metavar="KEY=VALUE",
                       help="only documents whose metadata or card has KEY=VALUE (entity=3M, "
                            "period=FY2021, kind=10-K; repeatable: all must hold)")
