"""``vllm``: vLLM serving benchmarked by ``vllm bench serve``, CloudAI's test files unchanged."""

from cloudai.workloads.vllm.workload import Vllm, VllmArgs

__all__ = ["Vllm", "VllmArgs"]
