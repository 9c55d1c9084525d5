"""``UCCTest``: UCC's ``ucc_perftest``, CloudAI's test files unchanged."""

from cloudai.workloads.ucc_test.workload import UCCTest, UCCTestArgs

__all__ = ["UCCTest", "UCCTestArgs"]
