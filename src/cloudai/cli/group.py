"""The ``cloudai`` click group: the one place our errors become a message on stderr and an exit code."""

from __future__ import annotations

import logging
from typing import Any

import click

from cloudai.cli.logs import LOG, VERBOSE, log_file_option, log_options
from cloudai.errors import CloudAIError, ConfigError, Stopped


class Group(click.Group):
    """Turns our errors into one message on stderr and an exit code; a traceback only with -v."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None, **extra: Any):
        LOG.update(level=None, file=None)  # one invocation's flags (CliRunner runs many in one process)
        return super().make_context(info_name, args, parent, **extra)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CloudAIError as exc:
            if VERBOSE["on"]:
                logging.getLogger("cloudai").exception("failed")
            for line in exc.problems if isinstance(exc, ConfigError) and exc.problems else [exc]:
                click.echo(f"error: {line}", err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            click.echo(f"error: stopped by {exc.signal_name}" if isinstance(exc, Stopped) else "error: interrupted",
                       err=True)  # fmt: skip
            ctx.exit(130)
        except OSError as exc:  # disk full, permissions: the user's to fix, not a bug to trace
            if VERBOSE["on"]:
                logging.getLogger("cloudai").exception("failed")
            where = f" ({exc.filename})" if exc.filename else ""
            click.echo(f"error: {exc.strerror or exc}{where}", err=True)
            ctx.exit(1)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:  # the last line of defence: a bug is one line, never a raw traceback
            logging.getLogger("cloudai").debug("internal error", exc_info=True)  # shown with -v, kept in --log-file
            click.echo(internal_error_line(exc, verbose=VERBOSE["on"]), err=True)
            ctx.exit(1)


def internal_error_line(exc: BaseException, *, verbose: bool) -> str:
    """One line for an unexpected exception: its type and message, and how to see more."""
    text = " ".join(str(exc).split())[:300] or "(no message)"
    more = "the traceback is above; please report" if verbose else "run with -v for the traceback; please report"
    return f"internal error: {type(exc).__name__}: {text} ({more})"


@click.group(cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="cloudai")
@log_options
@log_file_option
def cli() -> None:
    """Design-space exploration for cluster workloads: run, sweep and search real jobs."""
