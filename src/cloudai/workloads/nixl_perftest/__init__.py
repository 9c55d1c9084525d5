"""``NixlPerftest``: NIXL kvbench's traffic-matrix perftest (matrices generated first), CloudAI's files unchanged."""

from cloudai.workloads.nixl_perftest.workload import NixlPerftest, NixlPerftestArgs

__all__ = ["NixlPerftest", "NixlPerftestArgs"]
