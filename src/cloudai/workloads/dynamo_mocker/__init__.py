"""``DynamoMocker``: NVIDIA Dynamo's GPU-free engine simulator (``dynamo.mocker``) behind ``dynamo.frontend``,
benchmarked with aiperf or genai-perf, on the standalone system (CloudAI's ``conf/experimental/dynamo_mocker``).

``args`` holds CloudAI's cmd_args, ``workload`` the steps (what CloudAI's ``dynamo_mocker.sh`` runs) and metrics.
"""

from cloudai.workloads.dynamo_mocker.args import DynamoMockerArgs
from cloudai.workloads.dynamo_mocker.workload import DynamoMocker

__all__ = ["DynamoMocker", "DynamoMockerArgs"]
