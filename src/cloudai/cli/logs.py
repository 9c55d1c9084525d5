"""CloudAI's logging flags and every run's ``debug.log``, for ``cloudai.cli``.

``--log-level`` and ``--log-file`` may come before the command (CloudAI's spelling,
``cloudai --log-level INFO run ...``) or after it; either way they land in ``LOG``, which
``setup_logging`` below reads. ``debug_log`` keeps a run's whole log in its results dir.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from cloudai.errors import ConfigError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL")  # WARN: Python's and CloudAI's alias
LOG: dict[str, Any] = {"level": None, "file": None}  # this invocation's --log-level/--log-file
DEBUG_LOG = "debug.log"  # every run's full log, inside its results dir (CloudAI writes one into the cwd)


class _Formatter(logging.Formatter):
    """``logging.Formatter`` for ``FILE_FORMAT`` at a fraction of its cost (a run logs three records per trial):
    the date and time formatted once a second, not per record, and a record without a traceback or stack put
    together in one f-string instead of ``Formatter.format``'s five calls. The same text:
    ``2026-11-28 15:56:01,490 DEBUG cloudai.jobs.spec: job a.0.1: ...``."""

    _second: tuple[int, str] = (-1, "")

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info or record.exc_text or record.stack_info or self._fmt != FILE_FORMAT:
            return super().format(record)
        record.message = record.getMessage()
        second = int(record.created)  # ``formatTime``'s text, the date and time formatted once a second
        if second != self._second[0]:
            self._second = (second, time.strftime(self.default_time_format, self.converter(record.created)))
        record.asctime = f"{self._second[1]},{int(record.msecs):03d}"  # logging's default_msec_format, "%s,%03d"
        return f"{record.asctime} {record.levelname} {record.name}: {record.message}"


FILE_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # debug.log and --log-file


class _LogFile(logging.FileHandler):
    """``debug.log`` and ``--log-file``: each record written and flushed as ``FileHandler`` does (a killed run
    keeps every line it logged), without ``StreamHandler.emit`` taking the handler's lock a second time to
    flush (``handle`` holds it already), and without ``Handler.handle``'s filter pass and lock wrappers when it
    has no filters (a run logs three records per trial)."""

    def handle(self, record: logging.LogRecord) -> bool:
        if self.filters:
            return bool(super().handle(record))
        with self.lock:  # pyright: ignore[reportOptionalContextManager]  # Handler.__init__ made it
            self.emit(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        if self.stream is None:  # closed (or opened with delay): FileHandler's own path reopens it
            super().emit(record)
            return
        try:
            self.stream.write(self.format(record) + self.terminator)
            self.stream.flush()
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)


@contextlib.contextmanager
def debug_log(run_dir: Path) -> Iterator[None]:
    """Everything cloudai logs during the run, at DEBUG, into ``<run_dir>/debug.log`` (appended on --resume)."""
    handler = _LogFile(run_dir / DEBUG_LOG)
    handler.setLevel(logging.DEBUG)
    handler.setFormatter(_Formatter(FILE_FORMAT))
    root = logging.getLogger("cloudai")
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()


def _remember(key: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def store(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None:
            LOG[key] = logging.getLevelName(logging.getLevelName(value.upper())) if key == "level" else value

    return store


def log_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """CloudAI's ``--log-level``, on the group and on every command."""
    return click.option(
        "--log-level",
        type=click.Choice(LOG_LEVELS, case_sensitive=False),
        expose_value=False,
        callback=_remember("level"),
        help="Console log level (default WARNING); DEBUG also shows tracebacks, like -v.",
    )(func)


def log_file_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """CloudAI's ``--log-file`` before the command; a command's own ``--log-file`` wins."""
    return click.option(
        "--log-file",
        type=click.Path(path_type=Path, dir_okay=False),
        expose_value=False,
        callback=_remember("file"),
        help="Also log to FILE (any command; a run also keeps debug.log in its results dir).",
    )(func)


VERBOSE = {"on": False}  # this invocation shows tracebacks (-v or --log-level DEBUG)
OUT = logging.getLogger("cloudai.out")  # what the user was shown, kept in the log files beside the debug lines


def say(message: str, err: bool = False) -> None:
    """Print a line for the user and keep it in ``--log-file`` and the run's ``debug.log``."""
    click.echo(message, err=err)
    OUT.info(message)


def log_plan(plan: Any, argv: list[str]) -> None:
    """The run's inputs at the head of its log: the command line, the system, each entry and its route."""
    log = logging.getLogger("cloudai.plan")
    log.debug("command: %s", " ".join(argv))
    log.debug("system: %r", plan.system_config)
    for checked in plan.checked.values():
        entry = checked.entry
        route = "live RL" if checked.live_rl else "agent-driven" if checked.agent_driven else "plain"
        knobs = dict(checked.space.fixed) | {d.name: "swept" for d in checked.space.dims}
        log.debug("%s (test %s, workload %s): %s; knobs %s; agent %s", entry.id, entry.test_name, entry.workload,
                  route, knobs, entry.agent.name)  # fmt: skip


def _not_shown_twice(record: logging.LogRecord) -> bool:
    return record.name != OUT.name  # already on the terminal through say()


def _lean_records() -> None:
    """Records without what no cloudai format shows: the caller's file and line (a walk up the stack), the
    thread, process and multiprocessing names. A run logs three lines per trial; this halves their cost (the
    logging HOWTO's "Optimization" names these switches)."""
    logging._srcfile = None  # pyright: ignore[reportPrivateUsage]
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False


def setup_logging(verbose: bool, log_file: Path | None) -> None:
    """Console at ``--log-level`` (WARNING by default; ``-v`` is DEBUG with tracebacks), ``--log-file`` at DEBUG."""
    _lean_records()
    level = "DEBUG" if verbose else (LOG["level"] or "WARNING")
    VERBOSE["on"] = level == "DEBUG"
    log_file = log_file if log_file is not None else LOG["file"]
    root = logging.getLogger("cloudai")
    root.setLevel(logging.DEBUG)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(level)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    console.addFilter(_not_shown_twice)
    root.addHandler(console)
    if log_file is not None:
        try:
            handler = _LogFile(log_file)
        except OSError as exc:
            raise ConfigError(f"cannot open the log file: {exc.strerror}", file=log_file) from None
        handler.setFormatter(_Formatter(FILE_FORMAT))
        root.addHandler(handler)
