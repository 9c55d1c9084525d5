"""``NixlEP``: NIXL's elastic expert-parallel benchmark, ranks joining and leaving by phase, CloudAI's files."""

from cloudai.workloads.nixl_ep.workload import NixlEP, NixlEPArgs

__all__ = ["NixlEP", "NixlEPArgs"]
