"""Run a plan: the plain runner, the DSE handler, single-sbatch mode, dry-runs, best.toml and progress.

``rundir`` makes the results dir and its ``run.json``; ``plain`` runs plain entries as jobs;
``dse`` runs agent-driven entries through their agent and env (``tally``, ``conclude``, ``failure`` its parts;
``resume_check`` and ``commands`` for ``--resume``; ``dry_run`` shows them without running);
``single_sbatch`` runs a whole scenario as one Slurm job; ``best`` and ``progress`` say what was found.

May import everything below it: ``plan``, ``agents``, ``envs``, ``jobs``, ``systems``, ``workloads``,
``trajectory``, ``config`` and the leaves. Never ``cli``, ``gym``, ``serve``.
"""

from typing import Protocol


class Echo(Protocol):
    """Where a stage prints a line for the user (``click.echo`` from the CLI); nothing below ``cli`` prints itself.
    ``err=True``: an error or warning, for stderr."""

    def __call__(self, message: str, err: bool = False) -> None: ...
