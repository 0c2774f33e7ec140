"""Source documents: reading a file's text exactly, naming it, finding files to index.

The text is returned exactly as stored - no newline translation, no BOM stripping - because
every line number and character offset the library reports points into it.
:func:`~proxy_pointer.parse.tree.build_tree` already ignores a leading UTF-8 BOM when parsing.
"""

from __future__ import annotations

import codecs
import fnmatch
import os
import stat
import unicodedata
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from .errors import ConfigError, DocumentError

#: Unicode categories no doc id may show as they are: controls (C0, C1 such as U+0085),
#: formatting characters (bidirectional overrides such as U+202E, zero-width ones), line and
#: paragraph separators, and lone surrogates. They could hide or reorder what a listing shows.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: The longest doc id a client may send with inline text.
MAX_SENT_DOC_ID = 512
#: A doc id as a citation in an answer spells it (:mod:`~proxy_pointer.search.synthesis`
#: reads ``[doc_id#node_id, lines a-b]``): a relative path of letters, digits, ``/ . - _``
#: and even spaces, without ``#``, quotes, backticks or asterisks, not starting with a space.
CITED_DOC_ID = r"""[^\s#`'"*][^#`'"*]*?"""

__all__ = [
    "CITED_DOC_ID",
    "CONVERTED_FORMATS",
    "CONVERTED_SUFFIXES",
    "DEFAULT_INCLUDE",
    "DOCUMENT_SUFFIXES",
    "HIDDEN_CATEGORIES",
    "MAX_SENT_DOC_ID",
    "TEXT_SUFFIXES",
    "SourceFile",
    "check_doc_id",
    "check_sent_doc_id",
    "discover",
    "doc_id_for",
    "document_kind",
    "escape_doc_id",
    "read_bytes",
    "read_document",
    "resolve_doc_id",
]

#: Formats converted to Markdown before indexing, the one place each is named: the converter
#: (``module:Class`` in :mod:`proxy_pointer.convert`, imported when its first file is met) ->
#: the lower-case file endings it reads. :data:`CONVERTED_SUFFIXES`,
#: ``proxy_pointer.convert.CONVERTERS`` and each converter's ``suffixes`` derive from it; it
#: lives here, not in ``convert/``, so that finding documents imports no converter code.
CONVERTED_FORMATS: dict[str, tuple[str, ...]] = {
    "pdf:PdfConverter": (".pdf",),
    "html:HtmlConverter": (".html", ".htm"),
    "docx:DocxConverter": (".docx",),
}
#: Endings of files converted to Markdown before indexing (``convert/``: PDF, HTML, Word).
CONVERTED_SUFFIXES = tuple(s for suffixes in CONVERTED_FORMATS.values() for s in suffixes)
#: File name endings indexed by default; the one list every other default derives from.
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt", *CONVERTED_SUFFIXES)
#: Endings of plain-text files, chunked by sliding windows (no headings to follow).
TEXT_SUFFIXES = (".txt",)
#: The globs :func:`discover` picks up by default.
DEFAULT_INCLUDE = tuple(f"*{s}" for s in DOCUMENT_SUFFIXES)


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the file at ``path``; :class:`DocumentError` naming it when it is
    missing, a directory or not a regular file, or unreadable (permission denied)."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
        if stat.S_ISDIR(st.st_mode):
            raise DocumentError(name, "is a directory, not a document")
        if not stat.S_ISREG(st.st_mode):
            raise DocumentError(name, "is not a regular file")
        with open(name, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise DocumentError(name, "no such file") from None
    except PermissionError:
        raise DocumentError(name, "permission denied") from None
    except IsADirectoryError:
        raise DocumentError(name, "is a directory, not a document") from None
    except OSError as exc:
        raise DocumentError(name, f"cannot be read: {exc.strerror or exc}") from None


def read_document(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> str:
    """The text of the file at ``path``, decoded with ``encoding``, exactly as stored.

    Raises :class:`DocumentError` naming the file when it is missing, a directory or not a
    regular file, unreadable (permission denied), binary (holds NUL characters), or not
    valid in ``encoding`` (the message gives the offset of the first bad byte). Raises
    :class:`ConfigError` for an unknown encoding name.

    >>> read_document("README.md")[:2]  # doctest: +SKIP
    '# '
    """
    name = os.fspath(path)
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise ConfigError(f"unknown text encoding {encoding!r}") from None
    data = read_bytes(name)

    try:
        text = data.decode(codec)
    except UnicodeDecodeError as exc:
        nul = data.find(b"\0")
        # UTF-16 and UTF-32 text is full of NUL bytes; only a byte-oriented codec says binary.
        if nul >= 0 and _byte_codec(codec):
            raise DocumentError(name, _binary(nul)) from None
        bad = data[exc.start : exc.end].hex(" ")
        raise DocumentError(
            name,
            f"is not valid {encoding}: byte offset {exc.start} (0x{bad}): {exc.reason}; "
            "pass encoding= if the file uses another encoding",
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        offset = len(text[:nul].encode(codec, "surrogatepass")) if _byte_codec(codec) else nul
        raise DocumentError(name, _binary(offset))
    return text


def _byte_codec(codec: str) -> bool:
    """False for codecs whose ordinary text is full of NUL bytes."""
    return not codec.startswith(("utf-16", "utf-32"))


def _binary(offset: int) -> str:
    return f"looks binary: NUL byte at byte offset {offset}; only text documents can be indexed"


def doc_id_for(path: str | os.PathLike[str], root: str | os.PathLike[str]) -> str:
    """The document id of ``path``: its path relative to ``root`` with ``/`` separators.

    The id is the same on every machine and operating system for the same tree of files.
    When ``root`` is the file itself the id is the file name. Paths are compared after
    making them absolute, without resolving symbolic links. Raises :class:`DocumentError`
    when ``path`` is not inside ``root``.

    >>> doc_id_for("corpus/reports/2022.md", "corpus")
    'reports/2022.md'
    """
    p = Path(os.path.abspath(path))
    r = Path(os.path.abspath(root))
    if p == r:
        return escape_doc_id(p.name)
    try:
        rel = p.relative_to(r)
    except ValueError:
        raise DocumentError(os.fspath(path), f"is not inside the indexed folder {root}") from None
    return escape_doc_id(PurePath(rel).as_posix())


def _hidden(ch: str) -> bool:
    return unicodedata.category(ch) in HIDDEN_CATEGORIES


def _escaped(ch: str) -> str:
    """A character as ``%XX`` per byte of its UTF-8 (a lone surrogate's too)."""
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def escape_doc_id(name: str) -> str:
    """A file name as a doc id: every hidden character (:data:`HIDDEN_CATEGORIES`: a
    newline, U+0085, a bidirectional override) written as ``%XX`` per UTF-8 byte, so that
    the id prints on one line, shows what it is and every interface takes it; ids given
    directly must have none (:func:`check_doc_id`). Linear in the name.

    >>> escape_doc_id("new\\nline.md")
    'new%0Aline.md'
    >>> escape_doc_id("invoice\u202egpj.md")
    'invoice%E2%80%AEgpj.md'
    """
    return "".join(_escaped(ch) if _hidden(ch) else ch for ch in name)


def check_doc_id(doc_id: str) -> str:
    """``doc_id`` when it is a usable id given directly (``Index.add_text``): a non-empty
    string without hidden characters (:data:`HIDDEN_CATEGORIES`); :class:`ConfigError`
    naming it otherwise."""
    if not isinstance(doc_id, str) or not doc_id or any(map(_hidden, doc_id)):
        raise ConfigError(f"bad doc id {doc_id!r}: a doc id is a non-empty name without "
                          "control characters or other hidden ones (formatting characters such "
                          "as U+202E, line separators)")
    return doc_id


def check_sent_doc_id(doc_id: str) -> str:
    """``doc_id`` when a client may send it with inline text (HTTP ``POST /index``, MCP):
    :func:`check_doc_id`'s rule, and a relative ``/``-separated path without empty, ``.``
    or ``..`` parts and without ``#``, at most ``MAX_SENT_DOC_ID`` characters (the id is
    shown in refs, prompts and URLs)."""
    check_doc_id(doc_id)
    parts = doc_id.split("/")
    if (len(doc_id) > MAX_SENT_DOC_ID or any(p in ("", ".", "..") for p in parts)
            or "#" in doc_id):
        raise ConfigError(f"bad doc id {doc_id!r}: use a relative path like 'notes/a.md' "
                          f"(no '#', '.' or '..' parts, at most {MAX_SENT_DOC_ID} characters)")
    return doc_id


def resolve_doc_id(doc_id: str, known: Container[str]) -> str | None:
    """The id in ``known`` that ``doc_id`` names, also without its file suffix (a dataset's
    or a user's "1908.05828" for the indexed "1908.05828.md"); ``None`` when none does.

    >>> resolve_doc_id("reports/2022", {"reports/2022.md"})
    'reports/2022.md'
    """
    for key in (doc_id, *(doc_id + suffix for suffix in DOCUMENT_SUFFIXES)):
        if key in known:
            return key
    return None


@dataclass(frozen=True)
class SourceFile:
    """A file found to index: where it is and the doc id it gets."""

    path: Path
    doc_id: str


def document_kind(name: str) -> str:
    """``"text"`` for plain-text files (sliding-window chunks only), else ``"markdown"``
    (converted formats are indexed as the Markdown they convert to)."""
    return "text" if name.lower().endswith(TEXT_SUFFIXES) else "markdown"


def discover(paths: Iterable[str | os.PathLike[str]], *,
             root: str | os.PathLike[str] | None = None,
             include: Sequence[str] = DEFAULT_INCLUDE, exclude: Sequence[str] = ()
             ) -> list[SourceFile]:
    """Files to index under ``paths`` with their doc ids, sorted by id.

    A folder is searched recursively for file names matching an ``include`` glob
    (case-insensitively: ``*.md`` finds ``NOTES.MD``); hidden files and folders (names
    starting with ``.``) are skipped. Its files get ids relative to the folder (or to
    ``root``). A file named directly is taken as it is, with its name (or its path relative
    to ``root``) as id. ``exclude`` globs match the id or the file name. Raises
    :class:`DocumentError` for a path that does not exist or two files with one id.
    """
    found: dict[str, SourceFile] = {}
    root_path = Path(root) if root is not None else None
    inc = [g.lower() for g in include]

    def excluded(doc_id: str) -> bool:
        name = doc_id.rsplit("/", 1)[-1]
        return any(fnmatch.fnmatch(doc_id, g) or fnmatch.fnmatch(name, g) for g in exclude)

    def add(file: Path, base: Path) -> None:
        # Ids come from the path as given, not the resolved one: a symbolic link is indexed
        # under its own name, even when it points outside the folder.
        doc_id = doc_id_for(file, root_path or base)
        if excluded(doc_id):
            return
        if doc_id in found and found[doc_id].path.resolve() != file.resolve():
            raise DocumentError(
                str(file), f"duplicate doc id {doc_id!r} (also {found[doc_id].path}); "
                "index the folders under a common root"
            )
        found[doc_id] = SourceFile(file, doc_id)

    for p in map(Path, paths):
        if p.is_dir():
            for dirpath, dirnames, filenames in os.walk(p):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if not name.startswith(".") and any(
                        fnmatch.fnmatchcase(name.lower(), g) for g in inc
                    ):
                        add(Path(dirpath) / name, p)
        elif p.exists():
            add(p, p.parent)
        else:
            raise DocumentError(str(p), "no such file or directory")
    return [found[k] for k in sorted(found)]
