"""``ChakraReplay``: PARAM's ``comm_replay`` of a Chakra execution trace, CloudAI's test files unchanged."""

from cloudai.workloads.chakra_replay.workload import ChakraReplay, ChakraReplayArgs

__all__ = ["ChakraReplay", "ChakraReplayArgs"]
