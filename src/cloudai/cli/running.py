"""The body of ``cloudai run`` once its results dir exists: run the plan, report whatever finished.

A ``How`` carries what the command line asked for; ``run_in`` runs the plan (single sbatch, DSE with its
hooks, or plain jobs), removes a results dir that bad input left empty, cancels everything on the way out
and writes the report and summary of what finished, whatever stopped the run. A resume first releases the
leased sandboxes the earlier run left recorded.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cloudai.cli.logs import say
from cloudai.errors import ConfigError
from cloudai.readfile import read_ends

if TYPE_CHECKING:
    from cloudai.plan.load import Plan
    from cloudai.run.dse import RunFiles
    from cloudai.systems.base import System


@dataclass(frozen=True)
class How:
    """How ``cloudai run`` was asked to run: the files, ``--single-sbatch``, ``--resume``, ``--warm-start``, and
    the output root this run created (removed again when bad input stops the run before any result)."""

    files: RunFiles
    single_sbatch: bool
    resume: Path | None
    warm_dirs: tuple[Path, ...]
    made_root: Path | None


def run_in(plan: Plan, system: System, run_dir: Path, how: How) -> int:
    """The run itself, once its results dir exists; a report of what finished whatever stopped it."""
    from cloudai.reports.background import inline_mode

    resume = how.resume
    if resume is not None:
        _release_left_leases(run_dir)
    warming = _warm_report() if plan.agent_driven and inline_mode() else None
    try:
        if how.single_sbatch:
            from cloudai.run.single_sbatch import run_single_sbatch

            code = run_single_sbatch(plan, run_dir, system, say)
        elif plan.agent_driven:
            from cloudai.run.dse import resume_command, run_agent_entries
            from cloudai.run.hooks import run_around_hooks

            again = resume_command(how.files, run_dir)
            code = run_around_hooks(plan, run_dir, system, say, lambda: run_agent_entries(
                plan, run_dir, system, say, resume is not None, resume_command=again, warm_dirs=how.warm_dirs
            ))  # fmt: skip
        else:
            from cloudai.run.plain import run_plain

            code = run_plain(plan, run_dir, system, say)
    except ConfigError:  # bad input only found once the run began (e.g. a live server's constructor)
        if resume is None and not _has_results(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)  # bad input leaves no output dir behind
            if how.made_root is not None:
                with contextlib.suppress(OSError):
                    how.made_root.rmdir()  # only when empty
        raise
    finally:
        system.cancel_all()  # nothing outlives the run, whatever stopped it
        if warming is not None:
            warming.join()
        if run_dir.is_dir():
            _report(run_dir)
    return code


# What the end of an agent-driven run imports for its report (when written inline: reports.background) and its
# summary, and takes long to import: rich's console (the summary's table; a terminal's progress bar has it
# already), optuna (the importance; an optuna agent has it already).
REPORT_MODULES = ("cloudai.reports.generate", "cloudai.reports.render", "cloudai.reports.summary", "rich.console",
                  "rich.table", "optuna")  # fmt: skip


def _warm_report() -> threading.Thread:
    """Import ``REPORT_MODULES`` in a thread while the trials run (the main thread mostly waits on jobs then), so
    the end of the run does not: ~0.2-0.6 s of imports off the path from the last trial to the exit. Only
    imports run there; one that fails is left for the report itself to import and handle. Joined before the
    report, so the two threads never import at once."""

    def imports() -> None:
        for name in REPORT_MODULES:
            with contextlib.suppress(Exception):
                importlib.import_module(name)

    thread = threading.Thread(target=imports, name="cloudai-report-imports", daemon=True)
    thread.start()
    return thread


def _release_left_leases(run_dir: Path) -> None:
    """Leased sandboxes a killed run left recorded in ``run_dir`` (``<trial>/leases/``): released before resuming."""
    from cloudai.gymserver.lease import release_recorded

    for line in release_recorded(run_dir):
        say(line, err=line.startswith("warning"))


def _has_results(run_dir: Path) -> bool:
    """Whether anything ran into ``run_dir``: a job record or a recorded step."""
    if any(run_dir.rglob("job.json")):
        return True
    return any(_has_rows(path) for path in run_dir.rglob("trajectory.csv"))


def _has_rows(path: Path) -> bool:
    """A line beyond the header in the file's first 64 KiB (a job may leave a trajectory.csv of its own: a device)."""
    try:
        return len(read_ends(path, 1 << 16, 0)[0].splitlines()) > 1
    except OSError:
        return False


def _report(run_dir: Path) -> None:
    """The terminal summary and the report of what finished, also after a failure or Ctrl-C.

    The report is written here, before the exit, so every documented output exists when ``cloudai run``
    returns; ``CLOUDAI_REPORT=background`` opts into a detached process (``cloudai.reports.background``)
    instead. A report that cannot be written must not mask the run's own outcome: it is a warning.
    """
    from cloudai.errors import CloudAIError
    from cloudai.reports import generate_report, print_summary
    from cloudai.reports.background import inline_mode, start_report

    try:
        if inline_mode():
            generate_report([run_dir])
            print_summary(run_dir)  # ends with where the report is
        else:
            pid = start_report(run_dir)
            print_summary(run_dir, rendering=pid)
    except (CloudAIError, OSError, ValueError) as exc:
        say(f"warning: no report for {run_dir}: {exc}", err=True)
