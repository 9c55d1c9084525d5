"""``MegatronBridge``: Megatron-Bridge's performance launcher (``scripts/performance/setup_experiment.py``), run in
the batch shell, which submits and waits for its own training job; CloudAI's files unchanged."""

from cloudai.workloads.megatron_bridge.workload import MegatronBridge, MegatronBridgeArgs

__all__ = ["MegatronBridge", "MegatronBridgeArgs"]
