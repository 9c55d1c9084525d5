"""``MegatronRun``: a Megatron-LM training script with CloudAI's flags; metrics from its training log."""

from cloudai.workloads.megatron_run.workload import MegatronRun, MegatronRunArgs

__all__ = ["MegatronRun", "MegatronRunArgs"]
