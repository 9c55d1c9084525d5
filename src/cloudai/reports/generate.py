"""``generate_report``: the files ``cloudai generate-report`` and the end of ``cloudai run`` write."""

from __future__ import annotations

from pathlib import Path

from cloudai.atomicfile import atomic_write
from cloudai.errors import ConfigError
from cloudai.reports.collector import paused
from cloudai.reports.load import load_run
from cloudai.reports.render import run_page
from cloudai.reports.summary import REPORT_FILE, write_summary_csv

COMPARISON_FILE = "comparison.html"


def generate_report(run_dirs: list[Path], output: Path | None = None, compare_by: str = "test_name") -> Path:
    """Write the report(s) for ``run_dirs`` and return the path a user should open.

    One dir: ``<dir>/report.html`` (or ``output``) and ``<dir>/summary.csv``; returns the report.
    Several dirs: each gets its own ``report.html`` and ``summary.csv``, and the comparison page goes to
    ``output`` or, by default, ``comparison.html`` beside the first dir (its parent: usually the shared
    ``output_path``); returns the comparison page, its agent runs matched by ``compare_by`` (``"test_name"`` or
    ``"test_id"``, see ``compare``). Every dir is read before anything is written, so a bad
    dir (``ConfigError``, exit code 2) leaves no partial set of reports behind. Files are replaced atomically.
    """
    dirs = list(dict.fromkeys(Path(d) for d in run_dirs))
    if not dirs:
        raise ConfigError("no results directory given", hint="pass one or more dirs written by `cloudai run`")
    with paused():  # see collector: ~15 % of the time otherwise
        return _write(dirs, output, compare_by)


def _write(dirs: list[Path], output: Path | None, compare_by: str) -> Path:
    runs = [load_run(d) for d in dirs]
    reports = []
    for run in runs:
        target = output if output is not None and len(runs) == 1 else run.path / REPORT_FILE
        reports.append(atomic_write(target, run_page(run)))
        write_summary_csv(run)
    if len(runs) == 1:
        return reports[0]
    from cloudai.reports.compare import comparison_page  # only for several dirs

    return atomic_write(output or dirs[0].parent / COMPARISON_FILE, comparison_page(runs, compare_by))
