"""``StructuredServingSim``: ServingSim describing its observation as leaves, as a structured live env does."""

from __future__ import annotations

from cloudai.gym.examples import ServingSim
from cloudai.gymserver.spaces import ObsLeafDescriptor


class StructuredServingSim(ServingSim):
    def observation_space(self) -> dict[str, ObsLeafDescriptor]:  # type: ignore[override]
        return {
            "throughput": ObsLeafDescriptor("box", 0.0, None),
            "p99_latency_ms": ObsLeafDescriptor("box", 0.0, None),
            "queue_depth": ObsLeafDescriptor("box", 0.0, None),
        }
