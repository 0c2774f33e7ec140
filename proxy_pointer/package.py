"""What the package says of itself, in one place: its version, the optional extra a missing
library comes from, and the lazy exports of its packages.

Every "install the extra" message is :func:`needs` (or :func:`require`, which imports and
raises it), so all read ``"<what> needs <library>: pip install 'proxy-pointer[<extra>]'"``.
:func:`lazy_exports` gives a package's ``__getattr__`` and ``__dir__``: a public name is
imported from its module on first use, so ``import proxy_pointer`` and the CLI's start load
no heavy library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

from .errors import ConfigError, ProxyPointerError

__all__ = ["VERSION", "lazy_exports", "needs", "require"]

try:
    #: The installed distribution's version, as ``__version__`` and every manifest give it.
    VERSION = version("proxy-pointer")
except PackageNotFoundError:  # running from a source tree that was never installed
    VERSION = "0+unknown"


def needs(what: str, library: str, extra: str) -> str:
    """The one wording of a missing optional dependency and the extra that brings it."""
    return f"{what} needs {library}: pip install 'proxy-pointer[{extra}]'"


def require(module: str, *, what: str, library: str | None = None, extra: str,
            error: type[ProxyPointerError] = ConfigError) -> ModuleType:
    """``module`` imported, or ``error`` with :func:`needs`'s message (``library`` defaults to
    the module's name)."""
    try:
        return import_module(module)
    except ImportError:
        raise error(needs(what, library or module, extra)) from None


def lazy_exports(package: str, modules: Mapping[str, tuple[str, ...]],
                 namespace: MutableMapping[str, Any]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: each name of ``modules`` (module,
    relative to the package -> the public names it defines) is imported on first access and
    kept in ``namespace`` (the package's ``globals()``); ``__dir__`` lists the package's
    ``__all__``."""
    home = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f".{module}", package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace["__all__"])

    return __getattr__, __dir__
