"""The commands that continue or redo a run: ``--resume`` and ``--warm-start``, with absolute paths."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunFiles:
    """The files ``cloudai run`` was given (None: not given), for the commands that continue or redo it."""

    system_config: Path | None
    tests_dir: Path | None
    test_scenario: Path
    hook_dir: Path | None = None


def resume_command(files: RunFiles, run_dir: Path) -> str:
    """The exact command that continues this run, with absolute paths (works from any directory).

    Started through ``uv run`` (which sets ``UV`` and ``UV_RUN_RECURSION_DEPTH``), it is ``uv run cloudai ...``.
    The system is named even when it came from ``$CLOUDAI_SYSTEM_CONFIG``: the resume must not depend on it.
    """
    through_uv = bool(os.environ.get("UV")) and "UV_RUN_RECURSION_DEPTH" in os.environ
    args = [*(["uv", "run"] if through_uv else []), "cloudai", "run"]
    for flag, path in (("--system-config", files.system_config), ("--tests-dir", files.tests_dir)):
        if path is not None:
            args += [flag, str(path.resolve())]
    args += ["--test-scenario", str(files.test_scenario.resolve())]
    if files.hook_dir is not None:
        args += ["--hook-dir", str(files.hook_dir.resolve())]
    return shlex.join([*args, "--resume", str(run_dir.resolve())])


def warm_start_command(files: RunFiles, run_dir: Path) -> str:
    """The new run that learns from ``run_dir`` (``--warm-start``), with absolute paths."""
    return resume_command(files, run_dir).replace(" --resume ", " --warm-start ", 1)
