"""``DDLBTest``: NVIDIA's Distributed Deep Learning Benchmarks (``ddlb/cli/benchmark.py``), CloudAI's files."""

from cloudai.workloads.ddlb.workload import DDLBArgs, DDLBTest

__all__ = ["DDLBArgs", "DDLBTest"]
