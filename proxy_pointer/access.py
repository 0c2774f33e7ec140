"""Who may read which documents: per-document metadata, principals and metadata filters.

Each document may carry a metadata object (``{"access": ["hr", "board"], "year": 2024}``).
``access`` lists the groups allowed to read it; a document without ``access`` is visible to
every principal, and ``access: []`` to none. A *principal* is the set of groups a caller
belongs to. :class:`Access` is one caller's view: its principal (``None``: a trusted caller
who sees everything, as the CLI's own user does) and metadata filters (``where``: every
``key=value`` must hold). Retrieval applies it inside search, before the top ``k``, so
hidden documents neither leak nor crowd visible ones out; the servers apply it to listings,
outlines and sections too, where a hidden document answers exactly like a missing one.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["ACCESS_KEY", "ANONYMOUS", "EVERYONE", "Access", "Where", "check_metadata",
           "check_metadata_of", "parse_where", "public_metadata", "read_metadata_file",
           "read_tokens"]

#: The metadata key that lists the groups allowed to read a document.
ACCESS_KEY = "access"
_MAX_METADATA_BYTES = 65_536  # one document's metadata as JSON


def check_metadata_of(metadata: Mapping[str, Mapping[str, Any]], known: set[str]
                      ) -> dict[str, dict[str, Any]]:
    """Validated metadata (:func:`check_metadata`) of ``doc_id -> object``, for ``known``
    doc ids only: a mistyped id must not leave the document it meant unrestricted, so any
    other raises :class:`ConfigError` before any work."""
    unknown = sorted(d for d in metadata if d not in known)
    if unknown:
        shown = ", ".join(repr(d) for d in unknown[:3])
        more = f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""
        raise ConfigError(f"metadata names documents that are neither indexed nor being "
                          f"indexed: {shown}{more}")
    return {d: check_metadata(m, where=f"metadata of {d!r}") for d, m in metadata.items()}


def check_metadata(metadata: Any, *, where: str) -> dict[str, Any]:
    """A validated copy of one document's metadata: a JSON object with non-empty string
    keys, at most 64 KiB as JSON, whose ``access``, when present, is a list of non-empty
    strings. :class:`ConfigError` naming ``where`` (a file and line) otherwise."""
    if not isinstance(metadata, Mapping):
        raise ConfigError(f"{where}: metadata must be a JSON object, got "
                          f"{type(metadata).__name__}")
    out = dict(metadata)
    for key in out:
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where}: metadata keys must be non-empty strings, got {key!r}")
    if ACCESS_KEY in out:
        groups = out[ACCESS_KEY]
        if (not isinstance(groups, list)
                or not all(isinstance(g, str) and g.strip() for g in groups)):
            raise ConfigError(f"{where}: {ACCESS_KEY!r} must be a list of group names "
                              f"(non-empty strings), got {groups!r}")
        out[ACCESS_KEY] = sorted(set(groups))
    try:
        size = len(json.dumps(out, allow_nan=False, ensure_ascii=False).encode())
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: metadata is not plain JSON ({e})") from None
    if size > _MAX_METADATA_BYTES:
        raise ConfigError(f"{where}: metadata is {size} bytes as JSON, over "
                          f"{_MAX_METADATA_BYTES}")
    return out


def public_metadata(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Metadata as results show it: without the access list (who else may read a document
    is not for its readers to learn)."""
    return {k: v for k, v in metadata.items() if k != ACCESS_KEY}


Where = Iterable[str] | Iterable[tuple[str, str]] | Mapping[str, Any] | None


def parse_where(items: Where) -> tuple[tuple[str, str], ...]:
    """Metadata filters from ``"key=value"`` strings (the CLI's ``--where``) or a mapping,
    as sorted ``(key, value)`` pairs; :class:`ConfigError` for a malformed one."""
    if items is None:
        return ()
    pairs: list[tuple[str, str]] = []
    if isinstance(items, Mapping):
        for k, v in items.items():
            pairs.append((k, v if isinstance(v, str) else json.dumps(v)))
    else:
        if isinstance(items, str):
            items = [items]
        for item in items:
            if isinstance(item, tuple | list) and len(item) == 2:
                k, v = item
            elif isinstance(item, str) and "=" in item:
                k, v = item.split("=", 1)
            else:
                raise ConfigError(f"a metadata filter is key=value, got {item!r}")
            pairs.append((k, v))
    for k, v in pairs:
        if not isinstance(k, str) or not k.strip() or not isinstance(v, str):
            raise ConfigError(f"a metadata filter is key=value, got {k!r}={v!r}")
    return tuple(sorted((k.strip(), v) for k, v in pairs))


def _matches(value: Any, want: str) -> bool:
    """A metadata value matches a filter's string: a string equals it, a list holds a
    match, anything else (numbers, booleans, null) matches its JSON text."""
    if isinstance(value, str):
        return value == want
    if isinstance(value, list):
        return any(_matches(v, want) for v in value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return want in (json.dumps(value), str(int(value)))
    return json.dumps(value) == want


@dataclass(frozen=True)
class Access:
    """One caller's view of an index: ``principal`` (the caller's groups; ``None``: a
    trusted caller who sees every document) and ``where`` (metadata filters, all of which
    must hold). Hashable, so that what it may see is cached per generation."""

    principal: frozenset[str] | None = None
    where: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # Who else may read a document is not for its readers to learn: a filter on the
        # access list would tell them (a document kept or dropped by "access=board").
        if self.principal is not None and any(k == ACCESS_KEY for k, _ in self.where):
            raise ConfigError(f"{ACCESS_KEY!r} cannot be filtered on: a reader never learns "
                              "a document's access list (filter on other metadata)")

    @classmethod
    def of(cls, principal: Iterable[str] | None = None,
           where: Where = None) -> Access:
        """From a group list (a single string is one group) and filters (:func:`parse_where`)."""
        if principal is None:
            groups = None
        else:
            if isinstance(principal, str):
                principal = [principal]
            groups = frozenset(principal)
            if not all(isinstance(g, str) and g.strip() for g in groups):
                raise ConfigError(f"a principal is a list of group names, got {sorted(groups)!r}")
        return cls(groups, parse_where(where))

    def narrowed(self, where: Where) -> Access:
        """This view with the filters ``where`` added (:func:`parse_where`): a request
        narrows its caller's view, never widens it."""
        if not where:
            return self
        return replace(self, where=tuple(sorted({*self.where, *parse_where(where)})))

    @property
    def unfiltered(self) -> Access:
        """The principal alone, without filters: the documents whose statistics weigh a
        search (a request's filters narrow what it finds, not how terms are weighed)."""
        return replace(self, where=()) if self.where else self

    @property
    def everything(self) -> bool:
        """Whether this view hides nothing (a trusted caller, no filters)."""
        return self.principal is None and not self.where

    def allows(self, metadata: Mapping[str, Any], *, skip: Collection[str] = ()) -> bool:
        """Whether a document with ``metadata`` is visible in this view; filters on the
        keys in ``skip`` are left to the caller (the reader matches card fields)."""
        if self.principal is not None:
            groups = metadata.get(ACCESS_KEY)
            if groups is not None and self.principal.isdisjoint(groups):
                return False
        return all(k in metadata and _matches(metadata[k], v) for k, v in self.where
                   if k not in skip)


#: A caller with no groups (a server request without a valid token): documents without
#: ``access`` only.
ANONYMOUS = Access(frozenset())
#: A trusted caller who sees every document, without filters (the CLI's own user, an admin
#: token).
EVERYONE = Access()


def read_metadata_file(path: str | Path) -> dict[str, dict[str, Any]]:
    """``doc_id -> metadata`` from a JSON Lines file (one object per line with a ``doc_id``
    and any other fields; blank lines skipped). :class:`ConfigError` naming the file and
    line for unreadable JSON, a missing or repeated ``doc_id`` or bad metadata."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read the metadata file ({e})") from None
    out: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            row = json.loads(line)
        except ValueError as e:
            raise ConfigError(f"{where}: not a JSON object ({e})") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{where}: not a JSON object")
        doc_id = row.pop("doc_id", None)
        if not isinstance(doc_id, str) or not doc_id:
            raise ConfigError(f"{where}: a line needs a \"doc_id\" string")
        if doc_id in out:
            raise ConfigError(f"{where}: {doc_id!r} appears twice")
        out[doc_id] = check_metadata(row, where=where)
    return out


def read_tokens(path: str | Path) -> dict[str, Access]:
    """Bearer tokens and whom they stand for, from a JSON object file (``serve --tokens``):
    ``{"TOKEN": ["group", ...], "ADMIN-TOKEN": "*"}``, ``"*"`` for a trusted caller who sees
    every document. :class:`ConfigError` naming the file for anything else."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read the tokens file ({e})") from None
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{path}: expected a JSON object of token -> list of groups (or \"*\")")
    out: dict[str, Access] = {}
    for token, groups in raw.items():
        if not token.strip():
            raise ConfigError(f"{path}: an empty token")
        if groups == "*":
            out[token] = EVERYONE
        elif isinstance(groups, list) and all(isinstance(g, str) and g.strip() for g in groups):
            out[token] = Access.of(groups)
        else:
            raise ConfigError(f"{path}: token ...{token[-4:]}: expected a list of group names "
                              f"or \"*\", got {groups!r}")
    return out
