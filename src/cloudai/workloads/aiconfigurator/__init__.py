"""``Aiconfigurator``: NVIDIA's LLM-serving performance model (CloudAI's ``aiconfig`` workload), a warm worker."""

from cloudai.workloads.aiconfigurator.args import AiconfiguratorArgs
from cloudai.workloads.aiconfigurator.workload import Aiconfigurator

__all__ = ["Aiconfigurator", "AiconfiguratorArgs"]
