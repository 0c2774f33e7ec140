"""The fuzz targets of ``benchmarks/robustness/fuzz.py``: one function per input-facing part,
each taking
one input's bytes and raising only on a crash.

A crash is an exception the part does not document (anything but a
:class:`~proxy_pointer.errors.ProxyPointerError` where the part may refuse its input; anything
at all where it promises never to raise on content) or a broken invariant (an
:class:`Invariant`). The deliberate errors are swallowed here, so a target returns normally
on every input the library handles as documented.

This module imports ``proxy_pointer`` at import time: ``fuzz.py`` imports it inside atheris'
instrumentation, so the library's code is coverage-instrumented, and ``--minimize`` imports
it plainly. Each target's input layout is written next to it (a first byte choosing options
keeps seeds meaningful to mutations).
"""

from __future__ import annotations

import hashlib
import itertools
import shutil
from collections.abc import Callable
from pathlib import Path

from proxy_pointer.convert import Converted, converter_for
from proxy_pointer.errors import ProxyPointerError
from proxy_pointer.parse.chunking import Chunk, ChunkConfig, chunk_tree, skip_reasons
from proxy_pointer.parse.tree import PREAMBLE_ID, Tree, build_tree
from proxy_pointer.refs import Ref

__all__ = ["INDEX_DOCS", "TARGETS", "Invariant", "index_files", "setup_index"]

ROOT = Path(__file__).resolve().parents[2]
#: The documents of the index the ``index`` target damages (the tests' three fixtures).
INDEX_DOCS = ROOT / "tests" / "fixtures" / "index" / "docs"


class Invariant(AssertionError):
    """A documented property of a result does not hold (the message says which)."""


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise Invariant(what)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# --- tree ------------------------------------------------------------------------------------
def check_tree(tree: Tree, text: str) -> None:
    """What ``proxy_pointer.parse.tree`` documents of every tree: lines join to the text, node line
    bounds ordered and inside the document, own text up to the next node, pre-order ids,
    children nested inside their parents, and a JSON round trip to an equal tree."""
    n = len(tree.lines)
    _check("".join(tree.lines) == text, "lines do not join to the text")
    _check(all(line for line in tree.lines), "an empty line")
    heads = [x for x in tree.nodes if not x.is_preamble]
    _check([x.node_id for x in heads] == [f"{k:04d}" for k in range(len(heads))],
           "heading ids are not 0000, 0001, ... in order")
    _check(all(x.node_id != PREAMBLE_ID or k == 0 for k, x in enumerate(tree.nodes)),
           "the preamble is not the first node")
    _check(not tree.nodes or tree.nodes[0].start == 0, "the first node does not start at line 0")
    _check(bool(tree.nodes) == bool(n), "no nodes for a non-empty text (or nodes for none)")
    for k, x in enumerate(tree.nodes):
        _check(0 <= x.start <= x.body_start <= x.own_end <= x.end <= n,
               "node line bounds out of order or past the text")
        _check(x.is_preamble or x.start < x.body_start, "a heading without a heading line")
        nxt = tree.nodes[k + 1].start if k + 1 < len(tree.nodes) else n
        _check(x.own_end == nxt, "own text does not end at the next node")
        if x.parent_id is None:
            _check(x.path == ((x.title,) if not x.is_preamble else ()), "a root's path")
            continue
        p = tree.get(x.parent_id)
        _check(x.node_id in p.children, "a child missing from its parent's children")
        _check(p.level < x.level, "a child not deeper than its parent")
        _check(p.own_end <= x.start and x.end <= p.end, "a child outside its parent's subtree")
        _check(x.path == (*p.path, x.title), "a path that is not the parent's plus the title")
    for x in tree.nodes:
        _check(all(tree.get(c).parent_id == x.node_id for c in x.children),
               "a child id whose node names another parent")
    _check(Tree.from_json(tree.to_json()) == tree, "the JSON round trip changes the tree")


def fuzz_tree(data: bytes) -> None:
    """Byte 0's low bit: ``recover_headings``; the rest: the Markdown (UTF-8, bad bytes
    replaced). ``build_tree`` never raises on content, so any exception is a crash."""
    if not data:
        return
    text = _text(data[1:])
    check_tree(build_tree(text, "fuzz.md", recover_headings=bool(data[0] & 1)), text)


# --- chunking (blocks and chunks) ------------------------------------------------------------
class Words:
    """The tests' deterministic tokenizer: whitespace-separated words."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


_CONFIGS = (
    ChunkConfig.for_window(64),
    ChunkConfig(chunk_size=16, chunk_overlap=4, max_breadcrumb_tokens=8, window_tokens=64),
    ChunkConfig.chars(50, 10),
    ChunkConfig.chars(300, 40, html_tables="source"),
)


def check_chunks(tree: Tree, chunks: list[Chunk], config: ChunkConfig) -> None:
    """What ``proxy_pointer.parse.chunking`` documents of every chunk (the invariants
    ``tests/parse/test_chunking.py`` checks): text is the source slice, stripped and non-empty, line
    bounds match, never across a heading, sized to the window (in characters: the embedded
    body), and every non-blank character of a chunked node's own body lies in some chunk."""
    text = tree.text
    starts = [0]
    for line in tree.lines:
        starts.append(starts[-1] + len(line))
    for c in chunks:
        _check(c.text == text[c.start_char:c.end_char], "chunk text is not its source slice")
        _check(bool(c.text) and c.text == c.text.strip(), "chunk text empty or not stripped")
        _check(0 <= c.start_line < c.end_line <= len(tree.lines)
               and starts[c.start_line] <= c.start_char < c.end_char <= starts[c.end_line],
               "chunk line bounds do not hold its characters")
        head, _, body = c.embed_text.partition("\n")
        _check(head.startswith("[") and head.endswith("]") and bool(body),
               "embed text is not a bracketed breadcrumb and a body")
        if c.node_id is not None:
            node = tree.get(c.node_id)
            _check(starts[node.body_start] <= c.start_char and c.end_char <= starts[node.own_end],
                   "a chunk outside its node's own body")
        if config.unit == "tokens":
            _check(len(c.embed_text.split()) + 2 <= (config.window_tokens or 256),
                   "embed text exceeds the window")
        else:  # the size bounds what is embedded (a code block's blank lines are not)
            _check(len(body) <= config.chunk_size, "embedded body longer than the chunk size")
    if not chunks or any(c.node_id is None for c in chunks):
        return  # a sliding-window fallback: the coverage rule below is per node
    skipped = skip_reasons(tree, config)
    spans: dict[str | None, list[tuple[int, int]]] = {}
    for c in chunks:
        spans.setdefault(c.node_id, []).append((c.start_char, c.end_char))
    for node in tree.nodes:
        if node.node_id in skipped:
            continue
        a, b = starts[node.body_start], starts[node.own_end]
        covered = bytearray(b - a)
        for s, e in spans.get(node.node_id, []):
            covered[s - a:e - a] = b"\x01" * (e - s)
        _check(all(covered[i] or text[a + i].isspace() for i in range(b - a)),
               "a non-blank character of a chunked node's body is in no chunk")


def fuzz_chunking(data: bytes) -> None:
    """Byte 0: bits 0-1 pick the config (64-word window, 16-word chunks, 50 or 300
    characters), bit 2 ``recover_headings``, bit 3 plain-text bodies (``markdown=False``); the
    rest: the Markdown. Chunking never raises on content."""
    if not data:
        return
    flags, text = data[0], _text(data[1:])
    config = _CONFIGS[flags & 3]
    tree = build_tree(text, "fuzz.md", recover_headings=bool(flags & 4))
    chunks = chunk_tree(tree, config, markdown=not flags & 8, tokenizer=Words())
    check_chunks(tree, chunks, config)


# --- converters ------------------------------------------------------------------------------
def check_converted(conv: Converted) -> None:
    """``Converted``'s documented shape: lines end in a newline, pages start on line 1 and
    in order, within the text."""
    md = conv.markdown
    _check(isinstance(md, str) and (not md or md.endswith("\n")),
           "Markdown does not end in a newline")
    n = md.count("\n")
    ps = conv.page_starts
    _check(not ps or ps[0] == 1, "page 1 does not start on line 1")
    _check(all(1 <= a <= b <= n + 1 for a, b in itertools.pairwise(ps)),
           "page starts out of order or past the text")


def _converting(suffix: str) -> Callable[[bytes], None]:
    def fuzz_convert(data: bytes) -> None:
        conv = converter_for(f"fuzz{suffix}")
        assert conv is not None
        try:
            converted = conv.convert(data, f"fuzz{suffix}")
        except ProxyPointerError:  # ConversionError (a DocumentError), naming the file
            return
        check_converted(converted)
    fuzz_convert.__doc__ = (f"The bytes of a {suffix} file; only ConversionError may be "
                            "raised, and the result must have Converted's shape.")
    return fuzz_convert


# --- refs ------------------------------------------------------------------------------------
def fuzz_refs(data: bytes) -> None:
    """The text of a ref (UTF-8, bad bytes replaced). ``Ref.parse`` raises only ConfigError;
    a ref it reads has one spelling: ``str(r) == text.strip()`` and it parses back equal.
    A ``#`` splits the text once more into ``Ref.of(doc_id, fragment)``, which must agree."""
    text = _text(data)
    try:
        r = Ref.parse(text)
    except ProxyPointerError:
        r = None
    if r is not None:
        _check(str(r) == text.strip(), "a parsed ref is not spelled as its text")
        _check(Ref.parse(str(r)) == r, "a formatted ref parses to another ref")
    doc_id, sep, fragment = text.rpartition("#")
    if sep:
        try:
            o = Ref.of(doc_id, fragment)
        except ProxyPointerError:
            return
        _check(Ref.parse(str(o)) == o, "a ref made by Ref.of does not parse back")


# --- index files -----------------------------------------------------------------------------
_INDEX: dict[str, Path] = {}


def setup_index(work: Path) -> Path:
    """The pristine index the ``index`` target damages, built once under ``work``."""
    from proxy_pointer.embeddings import make_embedder
    from proxy_pointer.index import update_directory

    base = work / "pristine"
    if not (base / "CURRENT").exists():
        shutil.rmtree(base, ignore_errors=True)
        update_directory(base, [INDEX_DOCS], embedder=make_embedder("hash:64"))
    _INDEX["base"] = base
    # Copied once per input: in memory where there is /dev/shm. libFuzzer exits without
    # running atexit, so the folder is one per work folder, emptied here on each run.
    tag = hashlib.sha1(str(work.resolve()).encode()).hexdigest()[:10]
    shm = Path("/dev/shm")
    scratch = (shm / f"proxy-pointer-fuzz-{tag}") if shm.is_dir() else work / "scratch"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    _INDEX["scratch"] = scratch
    return base


def index_files(base: Path) -> list[str]:
    """The index's files (relative paths, sorted), the lock file aside."""
    return sorted(str(p.relative_to(base)) for p in base.rglob("*")
                  if p.is_file() and p.name != "lock")


def damage(original: bytes, mode: int, rest: bytes) -> bytes:
    """A damaged copy of ``original``: mode 0 replaces it by ``rest``; mode 1 XORs bytes
    (``rest`` read as ``(position: 2 bytes, mask: 1 byte)`` triples); mode 2 truncates it at
    ``rest``'s first two bytes (modulo its length + 1)."""
    if mode == 0:
        return rest
    if mode == 1:
        out = bytearray(original)
        for k in range(0, len(rest) - 2, 3):
            if out:
                out[int.from_bytes(rest[k:k + 2], "little") % len(out)] ^= rest[k + 2] or 1
        return bytes(out)
    cut = int.from_bytes(rest[:2].ljust(2, b"\0"), "little") % (len(original) + 1)
    return original[:cut]


def fuzz_index(data: bytes) -> None:
    """Byte 0: which file of the saved index to damage (modulo their number); byte 1: how
    (:func:`damage`'s mode, modulo 3); the rest: the damage. The damaged index is opened and
    searched once; only ProxyPointerError (IndexCorruptError and kin) may be raised."""
    from proxy_pointer.index import Index

    if len(data) < 2:
        return
    base, scratch = _INDEX["base"], _INDEX["scratch"]
    files = index_files(base)
    rel = files[data[0] % len(files)]
    work = scratch / "idx"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    target = work / rel
    target.write_bytes(damage(target.read_bytes(), data[1] % 3, data[2:]))
    try:
        idx = Index.load(work)
        idx.retrieve("harbor tides and the orchard")
    except ProxyPointerError:
        pass


#: Target name -> function of one input.
TARGETS: dict[str, Callable[[bytes], None]] = {
    "tree": fuzz_tree,
    "chunking": fuzz_chunking,
    "pdf": _converting(".pdf"),
    "html": _converting(".html"),
    "docx": _converting(".docx"),
    "refs": fuzz_refs,
    "index": fuzz_index,
}
