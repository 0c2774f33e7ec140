"""Command-line front end: ``proxy-pointer tree | index | query | section | ask | serve | mcp``.

Nothing here but argument parsing and printing; every error the library raises becomes one
readable line on stderr and exit status 1 (2 for usage errors, 130 for Ctrl-C).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..embeddings import Embedder
    from ..search.retrieval import Retrieval
    from ..serve.service import Service

from .. import defaults
from ..access import EVERYONE, Access, read_metadata_file
from ..errors import ConfigError, DocumentError, NotFoundError, ProxyPointerError
from ..search.config import RetrievalConfig
from . import progress
from .options import (
    add_index_option,
    add_principal_option,
    add_retrieval_options,
)
from .servers import cmd_mcp, cmd_serve, mcp_options, serve_options

__all__ = ["main"]

def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="proxy-pointer",
        description="Structural RAG: skeleton trees, breadcrumb chunks, whole-section retrieval.",
    )
    sub = ap.add_subparsers(dest="command", required=True)
    for name, command in _COMMANDS.items():
        command.options(sub.add_parser(name, help=command.help))
    return ap


def _convert_options(c: argparse.ArgumentParser) -> None:
    c.add_argument("file")
    c.add_argument("--no-pages", action="store_true",
                   help="leave out the <!-- page N --> markers")


def _tree_options(t: argparse.ArgumentParser) -> None:
    t.add_argument("file")
    t.add_argument("--json", action="store_true", help="print our full JSON")
    t.add_argument("--format", choices=["text", "json", "pageindex"], default="text")
    t.add_argument("--noise", action="store_true",
                   help="mark the sections indexing skips, and why (noise, or too short)")
    t.add_argument("--min-section-chars", type=int, default=0,
                   help="with --noise: mark sections with less own text as skipped (default 0)")
    t.add_argument("--recover-headings", action="store_true",
                   help="promote bold-only and numbered lines to headings (converted PDFs)")
    t.add_argument("--encoding", default="utf-8",
                   help="encoding of a Markdown or text file (default %(default)s)")


def _index_options(i: argparse.ArgumentParser) -> None:
    i.add_argument("paths", nargs="+")
    add_index_option(i)
    i.add_argument("--root", default=None, help="doc ids are paths relative to this folder")
    i.add_argument("--include", action="append", default=None, metavar="GLOB")
    i.add_argument("--exclude", action="append", default=[], metavar="GLOB")
    i.add_argument("--prune", action="store_true", help="remove documents whose files are gone")
    from ..embeddings.factory import SPEC_HELP

    i.add_argument("--embedder", default=None, help=SPEC_HELP)
    i.add_argument("--chunking", choices=["tokens", "chars"], default="tokens",
                   help="token-sized chunks fitted to the embedder (default) or 2000/200 chars")
    i.add_argument("--approximate", action="store_true",
                   help="approximate search (memory-mapped IVF) at every size, not only past "
                   "200k chunks")
    i.add_argument("--recover-headings", action="store_true")
    i.add_argument("--encoding", default="utf-8",
                   help="encoding of Markdown and text files (default %(default)s)")
    i.add_argument("--no-noise-filter", action="store_true")
    i.add_argument("--cache-dir", default=None, help="embedding cache (default: user cache)")
    i.add_argument("--lock-timeout", type=float, default=0.0,
                   help="seconds to wait for another writer (default: fail at once)")
    i.add_argument("--workers", type=int, default=None,
                   help="processes parsing files while embedding runs (default: up to 4, "
                        "one per core; 0: parse in this process); with --executor ray: "
                        "Ray actors (default: one per cluster CPU)")
    i.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="parse and embed here (default) or on Ray actors (RAY_ADDRESS names "
                        "a cluster; else a local Ray; needs proxy-pointer[ray])")
    i.add_argument("--batch-mb", type=float, default=None,
                   help="megabytes of text read, parsed and embedded per batch (default 2)")
    i.add_argument("--metadata", default=None, metavar="META.jsonl",
                   help='per-document metadata, one JSON object per line: {"doc_id": ..., '
                        '"access": [groups allowed to read it], ...any other fields}; a '
                        "metadata-only change re-embeds nothing")
    i.add_argument("--quiet", action="store_true",
                   help="no progress (pages, files, chunks and time left on stderr: a "
                        "bar on a terminal, else a line every "
                        f"{progress.PROGRESS_EVERY:.0f}s)")


def _query_options(q: argparse.ArgumentParser) -> None:
    q.add_argument("question", nargs="?")
    add_retrieval_options(q)
    q.add_argument("--json", action="store_true", help="print JSON")
    q.add_argument("--questions", default=None, help="batch: JSONL with id, question[, doc_id]")
    q.add_argument("--output", default=None, help="batch: JSONL output file (default stdout)")
    q.add_argument("--per-doc", action="store_true",
                   help="batch: search only each question's doc_id")


def _section_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("ref", help="a ref as query prints it: doc_id#node_id (a whole section), "
                   "doc_id#L12-30 or doc_id#L12 (1-based lines), doc_id#p3-5 (pages)")
    add_index_option(r)
    add_principal_option(r)
    r.add_argument("--json", action="store_true",
                   help="print JSON: text, ref, title, path, start_line, end_line")


def _documents_options(d: argparse.ArgumentParser) -> None:
    add_index_option(d)
    add_principal_option(d, where=True)
    d.add_argument("--json", action="store_true",
                   help='print one JSON document, {"documents": [...]}, as GET /documents')


def _ask_options(a: argparse.ArgumentParser) -> None:
    a.add_argument("question")
    add_retrieval_options(a)
    a.add_argument("--llm", default=None,
                   help="gemini[:MODEL] | openai:MODEL (with --llm-base-url or OPENAI_BASE_URL)"
                        " | none; default $PROXY_POINTER_LLM or gemini")
    a.add_argument("--llm-base-url", default=None,
                   help="base URL of an OpenAI-compatible server (Ollama, vLLM, ...)")
    a.add_argument("--json", action="store_true")


# --- commands ---------------------------------------------------------------------------
def _read_source(path: str, encoding: str) -> tuple[str, tuple[int, ...]]:
    """A document's text as the index sees it, and its page map: a PDF, HTML or Word file
    converted to Markdown (its warnings to stderr), any other file read as text."""
    from ..convert import convert_file, converter_for
    from ..documents import read_document

    if converter_for(path) is None:
        return read_document(path, encoding=encoding), ()
    converted = convert_file(path)
    for w in converted.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return converted.markdown, converted.page_starts


def _cmd_convert(args: argparse.Namespace) -> int:
    from ..convert import converter_for
    from ..text.pages import with_page_markers

    if converter_for(args.file) is None:
        raise DocumentError(args.file, "is not a PDF, HTML or Word (.docx) file; Markdown and "
                            "text files are indexed as they are")
    markdown, page_starts = _read_source(args.file, "utf-8")
    sys.stdout.write(markdown if args.no_pages else with_page_markers(markdown, page_starts))
    return 0


def _cmd_tree(args: argparse.Namespace) -> int:
    from ..parse.tree import build_tree, format_tree

    text, pages = _read_source(args.file, args.encoding)
    tree = build_tree(text, doc_id=Path(args.file).name, recover_headings=args.recover_headings)
    for w in tree.warnings:
        print(f"warning: {w}", file=sys.stderr)
    fmt = "json" if args.json else args.format
    if fmt == "json":
        print(json.dumps(tree.to_dict(), ensure_ascii=False, indent=2))
    elif fmt == "pageindex":
        print(json.dumps(tree.to_pageindex(pages=pages), ensure_ascii=False, indent=2))
    else:
        labels: dict[str, str] = {}
        if args.noise:
            from ..parse.chunking import ChunkConfig, skip_reasons
            from ..parse.noise import classify_noise, noise_labels

            config = ChunkConfig(min_section_chars=args.min_section_chars)
            decisions = classify_noise(tree, config.noise)
            labels = dict(noise_labels(decisions))
            for nid, why in skip_reasons(tree, config, noise=decisions).items():
                labels.setdefault(nid, why)
        print(format_tree(tree, marks=labels, pages=pages))
    return 0


def _make_embedder(spec: str | None, cache_dir: str | None) -> Embedder:
    from ..embeddings import CachedEmbedder, make_embedder

    inner = make_embedder(spec or defaults.EMBEDDER)
    return CachedEmbedder(inner, cache_dir or defaults.cache_dir())


def _cmd_index(args: argparse.Namespace) -> int:
    from ..documents import DEFAULT_INCLUDE
    from ..index import update_directory
    from ..ingest import DEFAULT_BATCH_BYTES, make_executor
    from ..parse.chunking import ChunkConfig
    from ..parse.noise import NoiseConfig
    from ..stores import open_store
    from ..stores.vectors import VectorIndexConfig

    # A bad metadata file fails before anything is opened or parsed.
    metadata = read_metadata_file(args.metadata) if args.metadata else None
    store = open_store(args.index, token=args.milvus_token)
    existing = store.exists()
    spec = args.embedder
    if spec is None and existing:
        spec = store.read_manifest().embedder.model_id
    embedder = _make_embedder(spec, args.cache_dir)
    chunk_config = None
    if not existing or args.chunking != "tokens" or args.no_noise_filter:
        chunk_config = (ChunkConfig.chars(2000, 200) if args.chunking == "chars"
                        else ChunkConfig.for_window(embedder.max_tokens))
        if args.no_noise_filter:
            chunk_config = chunk_config.with_noise(NoiseConfig.off())
    bar = progress.display(quiet=args.quiet)
    if not args.quiet:  # a store's own progress (Milvus inserts a segment in batches)
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger("proxy_pointer.stores").addHandler(handler)
        logging.getLogger("proxy_pointer.stores").setLevel(logging.INFO)
    t0 = time.perf_counter()
    idx, report = update_directory(
        store, args.paths, embedder=embedder, chunk_config=chunk_config,
        vector_config=VectorIndexConfig(kind="ivf") if args.approximate else None,
        recover_headings=args.recover_headings, lock_timeout=args.lock_timeout,
        encoding=args.encoding, root=args.root, include=tuple(args.include or DEFAULT_INCLUDE),
        exclude=tuple(args.exclude), prune=args.prune, progress=bar,
        executor=make_executor(args.executor, workers=args.workers),
        batch_bytes=DEFAULT_BATCH_BYTES if args.batch_mb is None else int(args.batch_mb * 1e6),
        metadata=metadata,
    )
    if bar is not None:
        bar.close()
    for problem in report.skipped:
        print(f"warning: skipped {_cli_hint(problem)}", file=sys.stderr)
    for note in report.warnings:
        print(f"warning: {note}", file=sys.stderr)
    for doc_id, same in report.duplicates:
        print(f"note: {doc_id} is identical to {same}", file=sys.stderr)
    print(f"{args.index}: {report.summary()} "
          f"[{len(idx)} documents in index; {time.perf_counter() - t0:.1f}s total]")
    return 0


def _open_service(args: argparse.Namespace) -> Service:
    """The index at ``--index``, held by the :class:`~.serve.service.Service` the servers
    use; one command reads the generation it opened, however long a batch runs."""
    from ..serve.service import Service
    from ..stores import open_store

    given = {k: getattr(args, k) for k in ("synonyms", "vocabulary", "aliases") if k in args}
    store = open_store(args.index, token=args.milvus_token)
    return Service(store, refresh_seconds=float("inf"), **given)


def _retrieval_config(service: Service, args: argparse.Namespace) -> RetrievalConfig:
    """The retrieval options given (the CLI's user may set every one, unbounded by the
    servers' request limits), with ``--doc`` ids resolved among the documents the view
    sees; :class:`NotFoundError` naming ``--index`` for any other."""
    view = Access.of(args.principal, args.where)
    doc_ids: list[str] = []
    for given in args.doc or ():  # as HTTP and MCP resolve them: also without the suffix
        key = service.resolve_doc(given, access=view)
        if key is None:
            raise NotFoundError(f"no document {given!r} in {args.index}")
        doc_ids.append(key)
    return RetrievalConfig(budget=args.budget, k=args.k, k_search=args.k_search,
                           doc_ids=tuple(doc_ids) or None, path_prefix=args.path,
                           expand=args.expand, hybrid=args.hybrid, mode=args.mode,
                           packing=args.packing, refine=args.refine, access=view,
                           **service.query_options)


_WEIGHED = 3  # filings the document choice weighed, shown by query and ask


def _print_sections(retrieval: Retrieval) -> None:
    if retrieval.expansion:
        print(f"--- {retrieval.expansion.describe()}")
    if retrieval.periods:
        print(f"--- {retrieval.periods.describe()}")
    r = retrieval.routing
    if r:
        asked = ", ".join(x for x in (", ".join(r.names), r.period, r.kind) if x)
        print(f"--- routed by {asked or 'what the filings hold'} to {', '.join(r.documents)}"
              + f". {r.note}" * bool(r.note))
        if len(r.scores) > 1:  # the document choice: each filing weighed, best first
            print("--- filings weighed: " + "; ".join(
                f"{d} {x:.2f} ({why})" for d, x, why in r.scores[:_WEIGHED]))
    if not retrieval.sections:
        print("No sections found.")
        return
    for n, s in enumerate(retrieval.sections, 1):
        flag = " (trimmed)" if s.trimmed else ""
        print(f"=== [{n}] {s.ref}  {s.where}  score {s.score:.3f}"
              f"  {s.tokens} tokens{flag}")
        print(f"    [{s.breadcrumb}]")
        print(s.text.rstrip("\n"))
        print()
    print(f"--- {len(retrieval.sections)} sections, {retrieval.tokens_used}/{retrieval.budget} "
          "tokens")
    if retrieval.omitted:
        print(f"--- left out for lack of budget: {', '.join(retrieval.omitted)}")


def _cmd_query(args: argparse.Namespace) -> int:
    if args.questions:
        return _batch_query(args)
    if args.question is None:
        raise ConfigError("give a question, or --questions FILE for a batch")
    service = _open_service(args)
    res = service.retrieve(args.question, _retrieval_config(service, args))
    if args.json:
        print(json.dumps(res.to_dict(), ensure_ascii=False, indent=2))
    else:
        _print_sections(res)
    return 0


def _batch_query(args: argparse.Namespace) -> int:
    import dataclasses

    service = _open_service(args)
    cfg = _retrieval_config(service, args)
    src = Path(args.questions)
    try:
        lines = src.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise DocumentError(str(src), f"cannot read questions ({e})") from None
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            qid, question = item["id"], item["question"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise DocumentError(str(src), f"line {n}: need a JSON object with 'id' and "
                                f"'question' ({e})") from None
        rows.append((qid, question, item.get("doc_id")))
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for qid, question, doc_id in rows:
            qcfg = cfg
            if args.per_doc and doc_id is not None:
                # A dataset's id may omit the file suffix. Resolved among all documents (a
                # hidden one then finds nothing under the principal); an unknown id is kept
                # as given and finds nothing.
                doc_key = service.resolve_doc(doc_id, access=EVERYONE) or doc_id
                qcfg = dataclasses.replace(cfg, doc_ids=(doc_key,))
            # the one payload (query --json, HTTP /query, MCP search), with the question's id
            payload = {"id": qid, **service.retrieve(question, qcfg).to_dict()}
            out.write(json.dumps(payload, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    if args.output:
        print(f"{len(rows)} questions -> {args.output}", file=sys.stderr)
    return 0


def _cmd_section(args: argparse.Namespace) -> int:
    from ..refs import Ref

    Ref.parse(args.ref)  # a malformed ref fails before the index is opened
    section = _open_service(args).section_by_ref(args.ref, access=Access.of(args.principal))
    if args.json:
        print(json.dumps(section, ensure_ascii=False, indent=2))
    else:
        text = section["text"]
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _cmd_documents(args: argparse.Namespace) -> int:
    docs = _open_service(args).documents(access=Access.of(args.principal, args.where))
    if args.json:  # one JSON document, as GET /documents answers and query --json prints
        print(json.dumps({"documents": docs}, ensure_ascii=False, indent=2))
        return 0
    for d in docs:
        c = d["card"]
        print("\t".join((d["doc_id"], c.get("kind") or "-", c.get("entity") or "-",
                         c.get("period") or "-", c.get("title") or d["title"])))
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    from ..llm import make_llm
    from ..search.synthesis import ENABLE_SYNTHESIS_HINT

    service = _open_service(args)
    cfg = _retrieval_config(service, args)
    llm = make_llm(args.llm, base_url=args.llm_base_url)
    if llm is None:  # offline: the context an LLM would have been given
        _print_sections(service.retrieve(args.question, cfg))
        print(ENABLE_SYNTHESIS_HINT)
        return 0
    answer = service.answer(args.question, cfg, llm)
    if args.json:
        print(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
        return 0
    print(answer.text.strip())
    print()
    for s in answer.cited_sections:
        print(f"  [{s.ref}, {s.where}] {s.breadcrumb}")
    for w in answer.warnings:
        print(f"warning: {w}", file=sys.stderr)
    return 0


def _cli_hint(message: str) -> str:
    """A library message as the CLI says it: the API's ``encoding=`` argument is the
    ``--encoding`` option here."""
    return message.replace("pass encoding=", "pass --encoding")


@dataclass(frozen=True)
class _Command:
    """A subcommand: its help line, what declares its options, what runs it (exit status)."""

    help: str
    options: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


#: The subcommands, in the order ``--help`` lists them.
_COMMANDS = {
    "convert": _Command("print a PDF, HTML or Word file as the Markdown the index sees, with "
                        "page markers", _convert_options, _cmd_convert),
    "tree": _Command("print a document's skeleton tree (PDF, HTML and Word files as "
                     "converted)", _tree_options, _cmd_tree),
    "index": _Command("index files and folders (incremental)", _index_options, _cmd_index),
    "query": _Command("retrieve sections for a question (or a JSONL file)", _query_options,
                      _cmd_query),
    "documents": _Command("list the indexed documents with their cards (entity, kind, "
                          "period)", _documents_options, _cmd_documents),
    "section": _Command("print what a ref points at (a section, or lines)", _section_options,
                        _cmd_section),
    "serve": _Command("serve the index over HTTP (FastAPI; docs at /docs)", serve_options,
                      cmd_serve),
    "ask": _Command("retrieve sections and synthesize a cited answer", _ask_options, _cmd_ask),
    "mcp": _Command("serve the index to agents over the Model Context Protocol", mcp_options,
                    cmd_mcp),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.command].run(args)
    except ProxyPointerError as e:
        print(f"proxy-pointer: error: {_cli_hint(str(e))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("proxy-pointer: interrupted; the index on disk is unchanged", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0

