"""``DeepEP``: DeepEP's official v1 (legacy) and v2 (elastic) test scripts under torchrun, CloudAI's files unchanged."""

from cloudai.workloads.deepep.workload import DeepEP, DeepEPArgs

__all__ = ["DeepEP", "DeepEPArgs"]
