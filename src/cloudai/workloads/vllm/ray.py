"""A vLLM role on several nodes: a Ray cluster, as CloudAI starts one (its scripts, word for word).

One ``ray start --address=HEAD:PORT --block`` worker on each of the role's nodes but the first, then the head
(``ray start --head``) on the first, which waits until every node is alive and execs ``vllm serve ...
--distributed-executor-backend ray`` with ``RAY_ADDRESS`` set. ``[cmd_args.<role>.ray_head]`` and
``ray_worker`` add ``ray start`` flags (``num_gpus = 4`` is ``--num-gpus=4``) or replace ours.
"""

from __future__ import annotations

import shlex
from typing import Any

from pydantic import BaseModel, ConfigDict

from cloudai.steps import Run, Step
from cloudai.workloads.serving.args import Role
from cloudai.workloads.serving.workload import inner


class RayStartArgs(BaseModel):
    """Flags of ``ray start`` for a multi-node role (``--key=value``; ``true`` a bare flag)."""

    model_config = ConfigDict(extra="allow")

    head: bool | None = None
    port: int | str | None = None
    address: str | None = None
    block: bool | None = None


def ray_args(generated: dict[str, Any], user: RayStartArgs | None) -> str:
    """``ray start`` flags: ours (unquoted: they hold variables) unless the user set them, then the user's."""
    chosen = user.model_fields_set | set(user.model_extra or {}) if user else set()
    ours = {k: v for k, v in generated.items() if k not in chosen}
    theirs = user.model_dump(exclude_none=True) if user else {}
    return " ".join(p for p in (_ray_flags(ours, quote=False), _ray_flags(theirs, quote=True)) if p)


def _ray_flags(values: dict[str, Any], *, quote: bool) -> str:
    parts = []
    for key, value in values.items():
        opt = f"--{key.replace('_', '-')}"
        if isinstance(value, bool):
            parts += [opt] if value else []
        else:
            parts.append(f"{opt}={shlex.quote(value) if quote and isinstance(value, str) else value}")
    return " ".join(parts)


def ray_steps(
    head_args: RayStartArgs | None, worker_args: RayStartArgs | None, role: Role, argv: list[str], wait_s: int
) -> list[Step]:
    """A Ray cluster over the role's nodes: a worker on each node but the first, then the head, which waits
    for every node and execs ``argv`` (CloudAI's scripts, word for word)."""
    head = "${SERVE_NODE}" if role.name == "serve" else role.host_ref
    port = f"${{{role.name.upper()}_RAY_PORT}}"
    worker = ray_args({"address": f"{head}:{port}", "block": True}, worker_args)
    worker_script = f"""\
ray stop --force >/dev/null 2>&1 || true
for (( i=0; i < {wait_s}; i+=5 )); do
    if ray start {worker}; then
        echo "Ray worker connected to {head}:{port}"
        exit 0
    fi
    echo "Waiting until the Ray worker can connect to {head}:{port}..."
    sleep 5
done
echo "Ray worker startup timed out for {head}:{port}"
exit 1"""
    n = role.num_nodes
    head_script = f"""\
ray stop --force >/dev/null 2>&1 || true
ray start {ray_args({"head": True, "port": f'"{port}"'}, head_args)}

active_nodes=0
for (( i=0; i < {wait_s}; i+=5 )); do
    active_nodes=$(python3 -c 'import ray; ray.init(); print(sum(node["Alive"] for node in ray.nodes()))')
    if [ "$active_nodes" -eq "{n}" ]; then
        echo "All Ray workers are active: $active_nodes/{n}"
        ray status || true
        exec env RAY_ADDRESS="{head}:{port}" {inner(argv)}
    fi
    echo "Waiting for Ray workers: $active_nodes/{n} active"
    sleep 5
done

echo "Waiting for Ray workers timed out: $active_nodes/{n} active"
exit 1"""
    steps: list[Step] = []
    for i in range(1, n):
        name, log = f"{role.name}_ray_worker_{i}", f"vllm-{role.name}-ray-worker-{i}.log"
        steps.append(Run(("bash", "-lc", worker_script), name, True, log, 1, 1, node=role.first_node + i))
    steps.append(
        Run(("bash", "-lc", head_script), role.name, True, f"vllm-{role.name}.log", 1, 1, node=role.first_node)
    )
    return steps
