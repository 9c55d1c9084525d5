"""``MoEBenchmark``: DeepEP's MoE benchmark across expert-parallel backends, CloudAI's files unchanged."""

from cloudai.workloads.moe_benchmark.workload import MoEBenchmark, MoEBenchmarkArgs

__all__ = ["MoEBenchmark", "MoEBenchmarkArgs"]
