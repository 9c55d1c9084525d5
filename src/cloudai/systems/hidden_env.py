"""Environment variables no job may inherit: the bearer tokens cloudai itself reads.

A job inherits cloudai's environment (standalone: the subprocess env; Slurm: ``sbatch``
exports the submitting environment and ``srun --export=ALL`` passes it on), so a token in it
would reach any workload that prints its environment. ``job_environ`` is that environment
without the hidden names. The defaults are the live-RL client token (``env_token_var``'s
default) and ``cloudai serve``'s; whoever reads a token from another variable hides it too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

DEFAULT_HIDDEN = frozenset({"CLOUDAI_GYM_TOKEN", "CLOUDAI_SERVE_TOKEN"})
_hidden: frozenset[str] = DEFAULT_HIDDEN  # replaced, never mutated: see ``hidden``


def hide_env_var(name: str) -> None:
    """Keep ``name`` out of every job started from now on (in this process)."""
    global _hidden
    _hidden = _hidden | {name}


def hidden() -> frozenset[str]:
    """The names hidden now; a new object after each ``hide_env_var``, so a caller may keep a ``job_environ``
    result for as long as ``hidden()`` returns the same object."""
    return _hidden


def job_environ(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this process's environment) without the hidden variables."""
    source = os.environ if base is None else base
    return {name: value for name, value in source.items() if name not in _hidden}
