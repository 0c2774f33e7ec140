"""Who may read what over HTTP, and who may update: the bearer tokens a server was started
with (:class:`Auth`). The FastAPI dependencies that apply it to a request are in
:mod:`.routes`; this module needs no FastAPI at import time.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...access import ANONYMOUS, EVERYONE, Access
from ...errors import ConfigError

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["TOKEN_ENV", "Auth", "optional_bearer"]

#: The environment variable holding the bearer token that enables ``POST /index``.
TOKEN_ENV = "PROXY_POINTER_TOKEN"


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


@dataclass(frozen=True)
class Auth:
    """The server's tokens: ``views`` (a token's SHA-256 -> what its bearer reads),
    ``secret`` (the update token; empty: updates are off) and ``require_token`` (a request
    without a valid token gets 401 instead of the anonymous view)."""

    views: Mapping[bytes, Access]
    secret: str
    require_token: bool

    @classmethod
    def of(cls, token: str | None, tokens: Mapping[str, Access] | None,
           require_token: bool) -> Auth:
        """The tokens of :func:`~.http.create_app`: ``token`` (``None``: ``$PROXY_POINTER_TOKEN``)
        reads everything, ``tokens`` map to views. :class:`ConfigError` when
        ``require_token`` has no tokens to require."""
        secret = os.environ.get(TOKEN_ENV, "") if token is None else token
        # Looked up by hash, so a lookup's timing says nothing about the tokens held.
        views = {_digest(t): v for t, v in (tokens or {}).items()}
        if secret:
            views[_digest(secret)] = EVERYONE
        if require_token and not views:
            raise ConfigError("--require-token needs tokens: pass --tokens FILE")
        return cls(views, secret, require_token)

    def view(self, token: str | None) -> Access:
        """What the bearer of ``token`` (None: no token) may read; a 401 HTTPException when
        the server requires a valid token and this is none."""
        view = self.views.get(_digest(token)) if token is not None else None
        if view is not None:
            return view
        if self.require_token:
            from starlette.exceptions import HTTPException

            raise HTTPException(401, "this server needs a valid 'Authorization: Bearer' token",
                                headers={"WWW-Authenticate": "Bearer"})
        return ANONYMOUS

    def check_update(self, token: str | None) -> None:
        """Nothing when ``token`` is the update token; a 403 HTTPException when updates are
        off, a 401 for a missing or wrong token."""
        from starlette.exceptions import HTTPException

        if not self.secret:
            raise HTTPException(403, f"updates are off: start the server with {TOKEN_ENV} "
                                "set to enable POST /index")
        if not hmac.compare_digest((token or "").encode(), self.secret.encode()):
            raise HTTPException(401, "POST /index needs a valid 'Authorization: Bearer' token",
                                headers={"WWW-Authenticate": "Bearer"})


def optional_bearer(app: FastAPI) -> None:
    """Declare the bearer token optional on the operations that read (OpenAPI's empty
    security requirement: a request without a token reads as an anonymous caller);
    ``POST /index`` keeps requiring it."""
    schema_of = app.openapi

    def openapi() -> dict[str, Any]:
        schema = schema_of()
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                security = operation.get("security")
                if security and (method, path) != ("post", "/index") and {} not in security:
                    security.append({})
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
