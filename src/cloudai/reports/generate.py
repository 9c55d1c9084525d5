"""``generate_report``: the files ``cloudai generate-report`` and the end of ``cloudai run`` write."""

from __future__ import annotations

import contextlib
from pathlib import Path

from cloudai.atomicfile import atomic_write
from cloudai.errors import ConfigError
from cloudai.recordfiles import TRAJECTORY_FILE
from cloudai.reports import aide
from cloudai.reports.collector import paused
from cloudai.reports.load import load_run
from cloudai.reports.render import run_page
from cloudai.reports.summary import REPORT_FILE, write_summary_csv

COMPARISON_FILE = "comparison.html"


def generate_report(
    run_dirs: list[Path], output: Path | None = None, compare_by: str = "test_name", keep: list[object] | None = None
) -> Path:
    """Write the report(s) for ``run_dirs`` and return the path a user should open.

    One dir: ``<dir>/report.html`` (or ``output``) and ``<dir>/summary.csv``; returns the report.
    Several dirs: each gets its own ``report.html`` and ``summary.csv``, and the comparison page goes to
    ``output`` or, by default, ``comparison.html`` beside the first dir (its parent: usually the shared
    ``output_path``); returns the comparison page, its agent runs matched by ``compare_by`` (``"test_name"`` or
    ``"test_id"``, see ``compare``). Every dir is read before anything is written, so a bad
    dir (``ConfigError``, exit code 2) leaves no partial set of reports behind. Files are replaced atomically.
    ``keep``: the records read are appended to it rather than freed on return (a process about to exit leaves
    them to the OS: freeing 10^5 steps one object at a time is ~0.05 s).
    """
    dirs = list(dict.fromkeys(Path(d) for d in run_dirs))
    if not dirs:
        raise ConfigError("no results directory given", hint="pass one or more dirs written by `cloudai run`")
    big = any(map(_big, dirs))
    if big:  # the page's numbers need it, in both processes ``forked`` builds a big page in: imported once, here
        import numpy  # noqa: F401
    with paused(), aide.started(big):  # see collector: ~15 % of the time otherwise
        return _write(dirs, output, compare_by, keep)


def _big(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a trajectory big enough for a report's aide to pay (``aide.AIDE_BYTES``)."""
    with contextlib.suppress(OSError):
        return any(p.stat().st_size >= aide.AIDE_BYTES for p in run_dir.glob(f"*/*/{TRAJECTORY_FILE}"))
    return False


def _write(dirs: list[Path], output: Path | None, compare_by: str, keep: list[object] | None) -> Path:
    runs = [load_run(d) for d in dirs]
    if keep is not None:
        keep.append(runs)
    reports = []
    for run in runs:
        target = output if output is not None and len(runs) == 1 else run.path / REPORT_FILE
        reports.append(atomic_write(target, run_page(run)))
        write_summary_csv(run)
    if len(runs) == 1:
        return reports[0]
    from cloudai.reports.compare import comparison_page  # only for several dirs

    return atomic_write(output or dirs[0].parent / COMPARISON_FILE, comparison_page(runs, compare_by))
