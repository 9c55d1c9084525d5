"""``NeMoRun``: NeMo 2.0 training through NeMo-Run's CLI (CloudAI's ``cloudai_nemorun.py``), CloudAI's files
unchanged; the parallelism rule of ``cloudai.workloads.parallelism``."""

from cloudai.workloads.nemo_run.workload import NeMoRun, NeMoRunArgs

__all__ = ["NeMoRun", "NeMoRunArgs"]
