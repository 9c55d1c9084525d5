"""``NcclTest``: NVIDIA nccl-tests (``all_reduce_perf_mpi`` and friends), CloudAI's test files unchanged."""

from cloudai.workloads.nccl_test.workload import NcclTest, NcclTestArgs

__all__ = ["NcclTest", "NcclTestArgs"]
