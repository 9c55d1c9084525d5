"""``TritonInference``: a NIM (Triton) server on every node but one, genai-perf on the last, as CloudAI runs it.

``workload`` holds CloudAI's ``TritonInferenceCmdArgs`` and the steps; ``wrapper`` writes the server's start
script (CloudAI's ``start_server_wrapper.sh``). Metrics come from genai-perf's profile export
(``cloudai.workloads.profile_export``).
"""

from cloudai.workloads.triton_inference.workload import TritonInference, TritonInferenceArgs

__all__ = ["TritonInference", "TritonInferenceArgs"]
