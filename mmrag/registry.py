"""Name -> factory registries that read Python entry points, and dotted paths only when trusted.

Stages never dispatch on names with if/elif: a backend, retriever or benchmark registers itself
with a decorator (built-ins) or through an entry-point group (third-party packages).

Why dotted paths are gated: configs and run directories are *data* a user may receive from someone
else.  A name ``pkg.module:Attr`` in a config would import that module and call the attribute with
keyword arguments from the same file — ``{name: "os:system", command: "..."}`` would run a shell
command, and a run directory's ``manifest.json`` is read back on ``mmrag run --resume``.  So a
dotted path is honoured only inside :func:`allow_code` (the CLI's ``--allow-code`` flag, never
set from a manifest), and only when it names a *class* that has the registry's protocol methods.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar, cast

from mmrag.errors import InputError

T = TypeVar("T")

#: (group, sys.path) -> {name: entry point}; see Registry._entry_points
_ENTRY_POINTS: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}

_ALLOW_CODE: ContextVar[bool] = ContextVar("mmrag_allow_code", default=False)


@contextmanager
def allow_code(enabled: bool = True) -> Iterator[None]:
    """Within this block, registries may import classes named by dotted path (trusted configs only)."""
    token = _ALLOW_CODE.set(bool(enabled))
    try:
        yield
    finally:
        _ALLOW_CODE.reset(token)


def code_allowed() -> bool:
    return _ALLOW_CODE.get()


def is_dotted(name: str) -> bool:
    """``pkg.module:Attr`` — the only form a registry would import."""
    return isinstance(name, str) and ":" in name


def load_dotted(path: str) -> Any:
    """Import ``pkg.module:Attr`` (or ``pkg.module.Attr``).  Internal: mmrag's own lazy loaders use
    it with literal strings; names from files go through :meth:`Registry.get`."""
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
    group, then (only inside :func:`allow_code`) a dotted path to a class with the methods named in
    ``requires``.  Unknown names raise an InputError listing what exists."""

    def __init__(self, kind: str, group: str | None = None, requires: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.group = group
        self.requires = requires
        self._items: dict[str, Callable[..., T]] = {}

    def register(self, name: str, factory: Callable[..., T] | None = None):
        def deco(f: Callable[..., T]) -> Callable[..., T]:
            self._items[name] = f
            return f

        return deco(factory) if factory is not None else deco

    def _entry_points(self) -> dict[str, Any]:
        """The group's entry points, read once per ``sys.path``: reading them scans every installed
        distribution's metadata (milliseconds), and the judge asks ``source in ANSWER_RULES`` for
        every reply.  A path entry added later (a plug-in's site directory) is a new key."""
        if not self.group:
            return {}
        key = (self.group, tuple(sys.path))
        found = _ENTRY_POINTS.get(key)
        if found is None:
            found = _ENTRY_POINTS[key] = {ep.name: ep for ep in entry_points(group=self.group)}
        return found

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._entry_points()))

    def get(self, name: str) -> Callable[..., T]:
        if not isinstance(name, str):
            raise InputError(f"a {self.kind} name must be a string, got {type(name).__name__}", field=self.kind)
        if name in self._items:
            return self._items[name]
        eps = self._entry_points()
        if name in eps:
            return eps[name].load()
        if is_dotted(name):
            return self._trusted_class(name)
        raise InputError(f"unknown {self.kind} '{name}'; known: {', '.join(self.names()) or '(none)'}")

    def _trusted_class(self, name: str) -> Callable[..., T]:
        if not code_allowed():
            where = f" or install it as an entry point of group '{self.group}'" if self.group else ""
            raise InputError(
                f"'{name}' names Python code ({self.kind} by dotted path); configs and run "
                f"directories are data and mmrag does not import code they name. If you trust "
                f"this config, pass --allow-code{where}",
                field=self.kind,
            )
        obj = load_dotted(name)
        if not inspect.isclass(obj):
            raise InputError(
                f"'{name}' is a {type(obj).__name__}, not a class: a {self.kind} named by dotted path must be a class",
                field=self.kind,
            )
        missing = [m for m in self.requires if not callable(getattr(obj, m, None))]
        if missing:
            raise InputError(
                f"class '{name}' does not implement the {self.kind} protocol (missing {', '.join(missing)})",
                field=self.kind,
            )
        # the protocol check above is what makes the class a factory of T (duck-typed, as for entry points)
        return cast("Callable[..., T]", obj)

    def put(self, name: str, obj: T) -> T:
        """Register the object ``obj`` itself under ``name`` (an instance registry, such as the judge's
        answer rules): typed for what it holds, where ``register`` is typed for factories."""
        self._items[name] = cast("Callable[..., T]", obj)
        return obj

    def instance(self, name: str) -> T:
        """The object registered with :meth:`put` (or loaded from an entry point) under ``name``."""
        return cast(T, self.get(name))

    def create(self, name: str, *args: Any, **kwargs: Any) -> T:
        return self.get(name)(*args, **kwargs)

    def add(self, obj: Any) -> Any:
        """Register the object ``obj`` under its own ``id`` and return it (families and scenario
        kinds register instances, so the id is never restated beside the object)."""
        self.register(obj.id, obj)
        return obj

    def ids_where(
        self, pred: Callable[[Any], bool], get: Callable[[str], Any], ids: Iterable[str] | None = None
    ) -> list[str]:
        """The ids (of ``ids``, default every known name, in that order) whose object ``get(id)``
        satisfies ``pred``; an id that does not load (a broken plug-in) is skipped, not fatal, so
        one bad package cannot hide the built-ins from a report."""
        out = []
        for name in self.names() if ids is None else ids:
            try:
                if pred(get(name)):
                    out.append(name)
            except InputError:
                continue
        return out

    def get_instance(self, name: str, cls: type, field: str) -> Any:
        """The registered *object* ``name`` (families and scenario kinds register instances, not
        factories): an InputError on ``field`` when it is not a ``cls`` or carries another id (an
        entry point named ``a`` that loads the kind ``b`` would be stored under the wrong name)."""
        obj: Any = self.get(name)  # an instance registry holds objects, not the factories ``get`` is typed for
        if not isinstance(obj, cls):
            raise InputError(f"'{name}' does not name a {cls.__name__} (got {type(obj).__name__})", field=field)
        obj_id = getattr(obj, "id", name)
        if obj_id != name:
            raise InputError(f"entry point '{name}' names the {self.kind} '{obj_id}'", field=field)
        return obj

    def __contains__(self, name: str) -> bool:
        return name in self._items or name in self._entry_points()
