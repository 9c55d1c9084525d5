"""``NIXLKVBench``: NIXL's kvbench ``profile`` between nodes that meet through etcd, CloudAI's files unchanged."""

from cloudai.workloads.nixl_kvbench.workload import NIXLKVBench, NIXLKVBenchArgs

__all__ = ["NIXLKVBench", "NIXLKVBenchArgs"]
