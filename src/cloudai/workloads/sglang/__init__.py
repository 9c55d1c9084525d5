"""``sglang``: SGLang serving benchmarked by ``sglang.bench_serving``, CloudAI's test files unchanged."""

from cloudai.workloads.sglang.workload import Sglang, SglangArgs

__all__ = ["Sglang", "SglangArgs"]
