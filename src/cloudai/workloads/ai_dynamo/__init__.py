"""``AIDynamo``: NVIDIA Dynamo serving (etcd, NATS, prefill/decode workers, frontend) benchmarked with aiperf or
genai-perf, from CloudAI's ``conf/experimental/ai_dynamo`` files.

``args`` holds CloudAI's cmd_args models, ``workers`` the node layout and worker commands, ``aiperf_script``
the ``aiperf.sh`` CloudAI generates, ``cache_config`` the LMCache / HiCache config files, ``workload`` the steps
and metrics.
"""

from cloudai.workloads.ai_dynamo.args import AIDynamoArgs
from cloudai.workloads.ai_dynamo.workload import AIDynamo

__all__ = ["AIDynamo", "AIDynamoArgs"]
