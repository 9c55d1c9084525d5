"""How many tasks an ``srun`` line starts, and through which launcher, when the job's command fixes it.

CloudAI's rules: a command that is not an MPI program gets ``srun --ntasks=1`` in place of ``--mpi=...``
(``NcclTestSlurmCommandGenStrategy.gen_srun_prefix`` for nccl-tests binaries without ``_mpi``, e.g.
``all_reduce_perf``: one process driving ``-g`` GPUs); a command with its own tasks per node gets no ``--mpi`` and
``--ntasks-per-node=N --ntasks=nodes*N`` after the container flags (``FioSlurmCommandGenStrategy``).
"""

from __future__ import annotations

from cloudai.systems.base import JobSpec


def with_ntasks(words: list[str], spec: JobSpec) -> list[str]:
    """``words`` (an srun prefix) with ``--mpi=X`` replaced by ``--ntasks=N`` when the job fixes its task count,
    dropped when it is not launched through MPI, and its tasks per node appended when it fixes those."""
    if spec.ntasks is not None:
        words = [f"--ntasks={spec.ntasks}" if word.startswith("--mpi=") else word for word in words]
    if not spec.mpi:
        words = [word for word in words if not word.startswith("--mpi=")]
    if spec.ntasks_per_node is not None:
        words = [
            *words,
            f"--ntasks-per-node={spec.ntasks_per_node}",
            f"--ntasks={spec.num_nodes * spec.ntasks_per_node}",
        ]
    return words
