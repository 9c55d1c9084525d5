"""Reports on results dirs: the HTML report, ``summary.csv``, run comparisons and the terminal summary.

Public API (everything else in this package is private)::

    generate_report(run_dirs: list[Path], output: Path | None = None, compare_by: str = "test_name") -> Path
    print_summary(run_dir: Path, console: rich.console.Console | None = None) -> None

Both raise ``cloudai.errors.ConfigError`` (exit code 2) for a dir that is not a cloudai results dir.
Importing this package imports nothing heavy: optuna and rich load on first call.

Reads files only: may import the shared leaves, never anything that plans or runs jobs.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["OUTPUTS", "generate_report", "print_summary"]

# What a run leaves in its results dir for people and tools to read (``cloudai list reports``).
OUTPUTS: dict[str, str] = {
    "report.html": "one self-contained page: status of every job, the search's progress, the best, the plots",
    "summary.csv": "one row per job or trial: test, status, reason, metrics",
    "trajectory.csv": "agent-driven tests: every step, its action, reward, observation and status",
    "trials.csv": "agent-driven tests: the same steps, one column per knob, metric and env_param",
    "env.csv": "tests with env_params: the sampled environment of every step",
    "best.toml": "agent-driven tests: the best configuration as a ready-to-run test file",
    "pareto.csv": "several objectives: the Pareto front (and pareto/<step>.toml per point)",
    "comparison.html": "generate-report with several results dirs: them side by side",
}


def generate_report(
    run_dirs: list[Path], output: Path | None = None, compare_by: str = "test_name", keep: list[object] | None = None
) -> Path:
    """One self-contained ``report.html`` + ``summary.csv`` per dir; a comparison page for several dirs.

    Returns the page to open: the report for one dir, the comparison (``output`` or ``comparison.html``
    beside the first dir) for several, matching agent runs by ``compare_by`` (``"test_name"``, ``"test_id"``);
    ``keep``: a list the records read are appended to, not freed. See ``cloudai.reports.generate.generate_report``.
    """
    from cloudai.reports.generate import generate_report as generate

    return generate(run_dirs, output, compare_by, keep)


def print_summary(run_dir: Path, console: Console | None = None, *, rendering: int | None = None) -> None:
    """A rich table: status counts per test, best trial of agent-driven tests, where the report is.

    ``rendering``: the pid of a background process writing the report (``cloudai.reports.background``).
    """
    from cloudai.reports.summary import print_summary as summary

    summary(run_dir, console, rendering=rendering)
