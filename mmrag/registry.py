"""Name -> factory registries that also read Python entry points and dotted paths.

Stages never dispatch on names with if/elif: a backend, retriever or benchmark registers itself
with a decorator (built-ins) or through an entry-point group (third-party packages), or is named
in a config by dotted path ``pkg.module:Name``.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any, Callable, Generic, TypeVar

from mmrag.errors import InputError

T = TypeVar("T")


def load_dotted(path: str) -> Any:
    """Import ``pkg.module:Attr`` (or ``pkg.module.Attr``)."""
    if ":" in path:
        mod, _, attr = path.partition(":")
    else:
        mod, _, attr = path.rpartition(".")
    if not mod or not attr:
        raise InputError(f"'{path}' is not a dotted path of the form package.module:Name")
    try:
        module = importlib.import_module(mod)
    except ImportError as exc:
        raise InputError(f"cannot import module '{mod}' named by '{path}': {exc}") from None
    try:
        return getattr(module, attr)
    except AttributeError:
        raise InputError(f"module '{mod}' has no attribute '{attr}' (from '{path}')") from None


class Registry(Generic[T]):
    """A named collection of factories.  ``get`` looks in order: registered names, the entry-point
    group, then a dotted path.  Unknown names raise an InputError listing what exists."""

    def __init__(self, kind: str, group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._items: dict[str, Callable[..., T]] = {}

    def register(self, name: str, factory: Callable[..., T] | None = None):
        def deco(f: Callable[..., T]) -> Callable[..., T]:
            self._items[name] = f
            return f

        return deco(factory) if factory is not None else deco

    def _entry_points(self) -> dict[str, Any]:
        if not self.group:
            return {}
        return {ep.name: ep for ep in entry_points(group=self.group)}

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._entry_points()))

    def get(self, name: str) -> Callable[..., T]:
        if name in self._items:
            return self._items[name]
        eps = self._entry_points()
        if name in eps:
            return eps[name].load()
        if ":" in name:
            return load_dotted(name)
        raise InputError(f"unknown {self.kind} '{name}'; known: {', '.join(self.names()) or '(none)'}")

    def create(self, name: str, *args: Any, **kwargs: Any) -> T:
        return self.get(name)(*args, **kwargs)

    def __contains__(self, name: str) -> bool:
        return name in self._items or name in self._entry_points()
