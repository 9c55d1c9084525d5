"""``cloudai generate-report``: the report and summary of results dirs, and a comparison page for several."""

from __future__ import annotations

import atexit
import gc
from pathlib import Path

import click

from cloudai.cli.logs import setup_logging
from cloudai.cli.options import common_options

# The records of the last report made in this process, held until it exits and then left to the OS with the rest of
# the heap (freeing 10^5 steps one object at a time costs ~0.05 s). A cycle: the teardown of this module drops the
# name, the collector frozen at exit never walks it, so nothing in it is freed one by one. The last report's only: a
# process that runs the command again and goes on (a test's CliRunner) holds one report's records at most.
_LEFT: list[object] = []
_LEFT.append(_LEFT)


def _leave_to_the_os() -> None:
    """At exit (atexit): the collector's last passes would walk, and free one by one, whatever the report left
    to them (10^5 steps: ~250 000 records, held by reference cycles until then: optuna keeps the tracebacks of
    its optional imports, and with them the frames that first imported it), ~0.3 s of CPU; ``gc.freeze`` takes
    them out of those passes and the OS frees the heap at once. Only the collector's passes are skipped: the
    other atexit handlers (logging's flush) run as before. At exit, not at once: a process that runs the
    command and goes on (a test's CliRunner) collects as before until it ends."""
    gc.freeze()


@click.command(name="generate-report")
@click.argument("results_dirs", nargs=-1, type=click.Path(path_type=Path))
@click.option("--result-dir", "result_dir", type=click.Path(path_type=Path), help="CloudAI's spelling of RESULTS_DIR.")
@click.option("--system-config", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option("--tests-dir", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option("--test-scenario", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option("--hook-dir", type=click.Path(path_type=Path), help="Accepted (CloudAI); the results dir is read.")
@click.option(
    "--output", type=click.Path(path_type=Path, dir_okay=False), help="Write the report (or comparison) here."
)
@click.option(
    "--compare-by",
    type=click.Choice(["test-name", "test-id"]),
    default="test-name",
    show_default=True,
    help="With several dirs: overlay the runs of one test name, or of one scenario test id (renamed tests).",
)
@common_options
def generate_report(
    results_dirs: tuple[Path, ...],
    result_dir: Path | None,
    system_config: Path | None,
    tests_dir: Path | None,
    test_scenario: Path | None,
    hook_dir: Path | None,
    output: Path | None,
    compare_by: str,
    verbose: bool,
    log_file: Path | None,
) -> None:
    """Write report.html and summary.csv per results dir; with several dirs, also a comparison page.

    ``cloudai generate-report DIR...`` or CloudAI's ``--system-config S --tests-dir T --test-scenario F
    --result-dir R`` (the run's own ``run.json`` says what ran, so S, T and F are not re-read).
    """
    setup_logging(verbose, log_file)
    dirs = [*results_dirs, *([result_dir] if result_dir is not None else [])]
    if not dirs:
        raise click.UsageError("give the results dir: cloudai generate-report DIR (or --result-dir DIR)")
    from cloudai.reports import generate_report as generate

    del _LEFT[1:]
    click.echo(f"Report: {generate(dirs, output, compare_by.replace('-', '_'), keep=_LEFT)}")
    atexit.unregister(_leave_to_the_os)  # once per process, however often the command runs in it
    atexit.register(_leave_to_the_os)
