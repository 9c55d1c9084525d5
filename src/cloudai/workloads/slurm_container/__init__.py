"""``SlurmContainer``: CloudAI's generic "run this command in this container" test, its files unchanged."""

from cloudai.workloads.slurm_container.workload import SlurmContainer, SlurmContainerArgs

__all__ = ["SlurmContainer", "SlurmContainerArgs"]
