"""``cloudai/Test-v0`` in Gymnasium's registry, without importing Gymnasium before it is needed.

``import cloudai.gym`` calls ``register_on_import()``: with Gymnasium already imported the id is
registered at once; otherwise a one-shot import hook registers it right after Gymnasium's own
first import. So ``gymnasium.make("cloudai/Test-v0", ...)`` works in any import order, and a
DSE run (which imports ``cloudai.gym`` but not Gymnasium) pays nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

ENV_ID = "cloudai/Test-v0"


def register_envs() -> None:
    """Register ``cloudai/Test-v0`` (entry point ``cloudai.gym.from_toml:make``); idempotent."""
    import gymnasium

    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point="cloudai.gym.from_toml:make", nondeterministic=True)


class _AfterGymnasiumImport(importlib.abc.MetaPathFinder):
    """Finds ``gymnasium`` through the other finders and runs ``register_envs`` after its module body."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname != "gymnasium":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        body = loader.exec_module

        def exec_module(module: ModuleType) -> None:
            body(module)
            register_envs()

        loader.exec_module = exec_module  # type: ignore[method-assign]  # this spec's own loader instance
        return spec


def register_on_import() -> None:
    if "gymnasium" in sys.modules:
        register_envs()
    elif not any(isinstance(finder, _AfterGymnasiumImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _AfterGymnasiumImport())
