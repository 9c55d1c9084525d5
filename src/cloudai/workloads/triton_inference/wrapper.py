"""The NIM server's start script (CloudAI's ``start_server_wrapper.sh``) and the batch-shell lines around it.

NIM's multi-node launcher reads its rank and role from the environment: the wrapper sets
``NIM_NODE_RANK`` from ``SLURM_NODEID``, makes rank 0 the leader, exports the test's string
``extra_env_vars`` (NIM_MODEL_NAME, NIM_CACHE_PATH, ...) and ``exec``s ``/opt/nim/start_server.sh``.
The script is written into the job dir by the batch shell (a ``Shell`` step) and mounted at
``/opt/nim/start_server_wrapper.sh``, where CloudAI mounts it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cloudai.workloads.heredoc import write_lines, written_files

WRAPPER = "start_server_wrapper.sh"
CONTAINER_PATH = "/opt/nim/start_server_wrapper.sh"
_SET_BY_WRAPPER = ("NIM_LEADER_IP_ADDRESS", "NIM_NODE_RANK")
_END = "CLOUDAI_WRAPPER_EOF"


def single_quoted(text: str) -> str:
    """``'text'`` as CloudAI writes the exports (a ``'`` inside is closed, escaped and reopened)."""
    return "'" + text.replace("'", "'\\''") + "'"


def wrapper_text(env: Mapping[str, str]) -> str:
    """The script, line for line as CloudAI writes it (no final newline)."""
    exports = [f"export {key}={single_quoted(value)}" for key, value in env.items() if key not in _SET_BY_WRAPPER]
    lines = [
        "#!/bin/bash",
        "",
        "export NIM_LEADER_IP_ADDRESS=${SLURM_JOB_MASTER_NODE}",
        "export NIM_NODE_RANK=${SLURM_NODEID}",
        "",
        *exports,
        "",
        'if [ "$NIM_NODE_RANK" -eq 0 ]; then',
        "  export NIM_LEADER_ROLE=1",
        "else",
        "  export NIM_LEADER_ROLE=0",
        "fi",
        "",
        'echo "Starting NIM server on node rank ${NIM_NODE_RANK} with leader role ${NIM_LEADER_ROLE}"',
        "exec /opt/nim/start_server.sh",
    ]
    return "\n".join(lines)


def setup_shell(job_dir: Path, env: Mapping[str, str], server_nodes: int) -> str:
    """Batch-shell lines: CloudAI's NIM exports, then the wrapper written into the job dir, executable."""
    tokenizer = env.get("NIM_MODEL_TOKENIZER", "deepseek-ai/DeepSeek-R1")  # CloudAI's fixed value
    return "\n".join(
        [
            'export HEAD_NODE="$SLURM_JOB_MASTER_NODE"',
            'export NIM_LEADER_IP_ADDRESS="$SLURM_JOB_MASTER_NODE"',
            f"export NIM_NUM_COMPUTE_NODES={server_nodes}",
            f"export NIM_MODEL_TOKENIZER={single_quoted(tokenizer)}",
            *write_lines(job_dir / WRAPPER, wrapper_text(env), _END, executable=True),
        ]
    )


def extract_wrapper(script: str) -> str | None:
    """The wrapper text a rendered script writes (for tests and ``dry-run`` readers); None when it has none."""
    return written_files(script).get(WRAPPER)
