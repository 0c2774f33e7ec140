"""The HTTP API (``pip install 'proxy-pointer[serve]'``): the app (:mod:`.app`), its routes
(:mod:`.routes`), request and response models (:mod:`.models`), bearer tokens (:mod:`.auth`)
and the request guard (:mod:`.guard`)."""

from __future__ import annotations

from .app import GENERATION_HEADER, INSPECTOR, TOKEN_ENV, create_app, run

__all__ = ["GENERATION_HEADER", "INSPECTOR", "TOKEN_ENV", "create_app", "run"]
