"""CloudAI's rule for a command that is not an MPI program: ``srun --ntasks=1`` in place of ``--mpi=...``.

(CloudAI's ``NcclTestSlurmCommandGenStrategy.gen_srun_prefix`` for nccl-tests binaries without the
``_mpi`` suffix, e.g. ``all_reduce_perf``: one process driving ``-g`` GPUs, not one per task.)
"""

from __future__ import annotations

from cloudai.systems.base import JobSpec


def with_ntasks(words: list[str], spec: JobSpec) -> list[str]:
    """``words`` (an srun prefix) with ``--mpi=X`` replaced by ``--ntasks=N`` when the job fixes its task count."""
    if spec.ntasks is None:
        return words
    return [f"--ntasks={spec.ntasks}" if word.startswith("--mpi=") else word for word in words]
