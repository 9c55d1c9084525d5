"""``NIXLBench``: NIXL's ``nixlbench`` between two nodes that meet through etcd, CloudAI's files unchanged."""

from cloudai.workloads.nixl_bench.workload import NIXLBench, NIXLBenchArgs

__all__ = ["NIXLBench", "NIXLBenchArgs"]
