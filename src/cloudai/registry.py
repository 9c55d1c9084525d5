"""One generic, lazy registry for workloads, agents, rewards and systems.

Built-ins are registered as ``"module:attribute"`` strings and imported only when asked
for, so ``import cloudai`` and ``cloudai --help`` import almost nothing. Plugins add
entries through the entry-point group named by the registry (``cloudai.workloads``,
``cloudai.agents``, ``cloudai.rewards``, ``cloudai.systems``); entry points are read
once, on the first lookup that misses or on ``names()``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Generic, TypeVar, cast

from cloudai.errors import ConfigError, did_you_mean

T = TypeVar("T")


def import_dotted(path: str) -> object:
    """Import ``"pkg.module:attr"`` (or ``"pkg.module.attr"``) and return the attribute."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    return getattr(importlib.import_module(module_name), attr)


class Registry(Generic[T]):
    """Names to objects of one kind. ``get`` raises a ``ConfigError`` with a did-you-mean hint."""

    def __init__(self, kind: str, group: str, builtins: dict[str, str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._lazy: dict[str, str | Callable[[], T]] = dict(builtins or {})
        self._loaded: dict[str, T] = {}
        self._plugins_read = False

    def register(self, name: str, obj: T | str) -> None:
        """Register an object, or a ``"module:attr"`` string imported on first use."""
        if isinstance(obj, str):
            self._lazy[name] = obj
            self._loaded.pop(name, None)
        else:
            self._loaded[name] = obj

    def names(self) -> list[str]:
        self._read_plugins()
        return sorted(set(self._lazy) | set(self._loaded))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def get(self, name: str, *, file: object | None = None, field: str | None = None) -> T:
        if name not in self._loaded and name not in self._lazy:
            self._read_plugins()
        if name in self._loaded:
            return self._loaded[name]
        target = self._lazy.get(name)
        if target is None:
            raise ConfigError(
                f"unknown {self.kind} '{name}'", file=file, field=field, hint=did_you_mean(name, self.names())
            )
        try:
            obj = cast(T, import_dotted(target) if isinstance(target, str) else target())
        except Exception as exc:  # a broken plugin must be reported, not crash the CLI
            raise ConfigError(
                f"{self.kind} '{name}' failed to load from {target!r}: {exc}", file=file, field=field
            ) from exc
        self._loaded[name] = obj
        return obj

    def _read_plugins(self) -> None:
        if self._plugins_read:
            return
        self._plugins_read = True
        for ep in entry_points(group=self.group):
            self._lazy.setdefault(ep.name, ep.value)
