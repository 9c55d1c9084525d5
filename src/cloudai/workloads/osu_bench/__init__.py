"""``OSUBench``: the OSU micro-benchmarks (``osu_allreduce``, ``osu_bw``, ...), CloudAI's test files unchanged."""

from cloudai.workloads.osu_bench.workload import OSUBench, OSUBenchArgs

__all__ = ["OSUBench", "OSUBenchArgs"]
