"""The ``cloudai`` command line. The only place errors become messages and exit codes (``group.Group``).

Exit codes: 0 ok, 1 a job or trial failed (or an unexpected error), 2 bad input, 130 interrupted.
Heavy modules are imported inside the commands, so ``cloudai --help`` stays fast. One module per job: the group
(``group``), shared options (``options``), ``run``/``dry-run`` (``run_cmd``), the configuration commands
(``config_cmds``), ``serve`` (``serve_cmd``), ``generate-report`` (``report_cmd``).
"""

from __future__ import annotations

from cloudai.cli.config_cmds import install, list_, uninstall, verify_configs
from cloudai.cli.group import cli, internal_error_line
from cloudai.cli.report_cmd import generate_report
from cloudai.cli.run_cmd import dry_run, run
from cloudai.cli.serve_cmd import serve

__all__ = ["cli", "internal_error_line", "main"]

for _command in (run, dry_run, verify_configs, list_, install, uninstall, serve, generate_report):
    cli.add_command(_command)


def main() -> None:
    cli()
