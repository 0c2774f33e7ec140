"""Source documents: reading a file's text exactly, naming it, finding files to index.

The text is returned exactly as stored - no newline translation, no BOM stripping - because
every line number and character offset the library reports points into it.
:func:`~proxy_pointer.tree.build_tree` already ignores a leading UTF-8 BOM when parsing.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterable
from pathlib import Path, PurePath

from proxy_pointer.errors import ConfigError, DocumentError

__all__ = ["DOCUMENT_SUFFIXES", "doc_id_for", "find_documents", "read_document"]

#: File name endings :func:`find_documents` picks up by default.
DOCUMENT_SUFFIXES = (".md", ".markdown", ".txt")


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
    try:
        st = os.stat(name)
        if stat.S_ISDIR(st.st_mode):
            raise DocumentError(name, "is a directory, not a document")
        if not stat.S_ISREG(st.st_mode):
            raise DocumentError(name, "is not a regular file")
        with open(name, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise DocumentError(name, "no such file") from None
    except PermissionError:
        raise DocumentError(name, "permission denied") from None
    except IsADirectoryError:
        raise DocumentError(name, "is a directory, not a document") from None
    except OSError as exc:
        raise DocumentError(name, f"cannot be read: {exc.strerror or exc}") from None

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
        return p.name
    try:
        rel = p.relative_to(r)
    except ValueError:
        raise DocumentError(os.fspath(path), f"is not inside the indexed folder {root}") from None
    return PurePath(rel).as_posix()


def find_documents(
    root: str | os.PathLike[str], *, suffixes: Iterable[str] = DOCUMENT_SUFFIXES
) -> list[Path]:
    """The documents under ``root`` (or ``root`` itself when it is a file), sorted by doc id.

    Picks files whose name ends with one of ``suffixes`` (case-insensitive) and skips
    hidden files and folders (names starting with ``.``). Raises :class:`DocumentError`
    when ``root`` does not exist.
    """
    base = Path(root)
    ends = tuple(s.lower() for s in suffixes)
    if base.is_file():
        return [base]
    if not base.is_dir():
        raise DocumentError(os.fspath(root), "no such file or folder")
    found: list[Path] = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        found.extend(Path(folder, f) for f in files
                     if not f.startswith(".") and f.lower().endswith(ends))
    return sorted(found, key=lambda p: doc_id_for(p, base))
