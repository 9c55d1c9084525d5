"""Where an AIDynamo job's workers run and the commands that start them (what CloudAI's ``ai_dynamo.sh`` does
on each node, here as one step per worker).

Layout, as CloudAI's script computes it: decode workers on the first ``decode num-nodes`` nodes, the frontend,
etcd and NATS on the first of them; prefill workers on the next ``prefill num-nodes`` nodes when the job has
nodes for both, else on the decode nodes ("shared-node disaggregation": each node runs one decode worker on
its first ``tp*pp`` GPUs and one prefill worker on the next, with their ports shifted apart). A worker is
``<cmd> --<arg> <value> ... <extra-args>``: ``args`` in TOML order after the model (``true``: a bare flag,
``false``: left out), each worker started with ``DYN_SYSTEM_PORT`` (its metrics port) set.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cloudai.steps import Run
from cloudai.workloads.ai_dynamo.args import DynamoArgs, WorkerConfig

SYSTEM_PORT = 9090  # DYN_SYSTEM_PORT of the first worker on a node (CloudAI's default)
_NIXL_PORT, _KV_EVENT_PORT, _KVBM_PUB, _KVBM_ACK = 5557, 20080, 56001, 56002


@dataclass(frozen=True)
class Layout:
    decode: tuple[int, ...]  # node indices of the job
    prefill: tuple[int, ...]

    @property
    def shared(self) -> bool:
        return bool(set(self.decode) & set(self.prefill))

    @property
    def nodes_needed(self) -> int:
        return max((*self.decode, *self.prefill), default=0) + 1


def layout(dynamo: DynamoArgs, num_nodes: int) -> Layout:
    decode_n, prefill_n = dynamo.decode_worker.num_nodes, dynamo.prefill_worker.num_nodes
    start = decode_n if num_nodes >= decode_n + prefill_n else 0
    return Layout(tuple(range(decode_n)), tuple(range(start, start + prefill_n)))


def flag_words(args: dict[str, Any]) -> list[str]:
    """``--key value`` per entry (``True``: ``--key``; ``None``/``False``: nothing)."""
    words: list[str] = []
    for key, value in args.items():
        if value is None or value is False:
            continue
        words += [f"--{key}"] if value is True else [f"--{key}", str(value)]
    return words


def worker_argv(worker: WorkerConfig, extra: Sequence[str] = ()) -> list[str]:
    """``extra``: flags cloudai adds after the worker's ``args`` (HiCache's config file); they replace an ``args``
    entry of the same name, as CloudAI's script overwrites it."""
    replaced = {word[2:] for word in extra if word.startswith("--")}
    args = {k: v for k, v in worker.args.model_dump(by_alias=True, exclude_none=True).items() if k not in replaced}
    return [*shlex.split(worker.cmd), *flag_words(args), *extra, *shlex.split(worker.extra_args or "")]


def _gpus(first: int, count: int) -> str:
    return ",".join(str(gpu) for gpu in range(first, first + count))


def _port(env: Mapping[str, str], name: str, default: int) -> int:
    value = env.get(name, "")
    return int(value) if value.isdigit() else default


def _shared_env(dynamo: DynamoArgs, role: str, env: Mapping[str, str]) -> dict[str, str]:
    """A shared node's GPU split and port offsets (the prefill worker's ports after the decode worker's)."""
    decode = dynamo.decode_worker
    if role == "decode":
        return {"CUDA_VISIBLE_DEVICES": _gpus(0, decode.gpus)}
    tp = decode.args.tensor_parallel_size
    shifted = {"DYN_SYSTEM_PORT": (SYSTEM_PORT, 1), "VLLM_NIXL_SIDE_CHANNEL_PORT": (_NIXL_PORT, tp),
               "DYN_VLLM_KV_EVENT_PORT": (_KV_EVENT_PORT, 1), "DYN_KVBM_LEADER_ZMQ_PUB_PORT": (_KVBM_PUB, 2),
               "DYN_KVBM_LEADER_ZMQ_ACK_PORT": (_KVBM_ACK, 2)}  # fmt: skip
    ports = {name: str(_port(env, name, base) + step) for name, (base, step) in shifted.items()}
    return {"CUDA_VISIBLE_DEVICES": _gpus(decode.gpus, dynamo.prefill_worker.gpus), **ports}


def worker_runs(dynamo: DynamoArgs, where: Layout, env: Mapping[str, str], extra: Sequence[str] = ()) -> list[Run]:
    """One background step per worker: decode workers first, then prefill (CloudAI's start order). ``env``: the
    job's variables, whose ports (``DYN_SYSTEM_PORT``, ...) are the bases CloudAI's script offsets from;
    ``extra``: flags every worker gets after its ``args``."""
    runs: list[Run] = []
    system_port = {"DYN_SYSTEM_PORT": str(_port(env, "DYN_SYSTEM_PORT", SYSTEM_PORT))}
    for role, worker, nodes in (("decode", dynamo.decode_worker, where.decode),
                                ("prefill", dynamo.prefill_worker, where.prefill)):  # fmt: skip
        role_env = system_port | (_shared_env(dynamo, role, env) if where.shared else {})
        for i, node in enumerate(nodes):
            name = f"{role}_{i}"
            runs.append(Run(tuple(worker_argv(worker, extra)), name=name, background=True, output=f"dynamo_{name}.log",
                            node=node, ntasks=1, env=role_env))  # fmt: skip
    return runs


def ready_wait(dynamo: DynamoArgs, runs: list[Run]) -> str:
    """Batch-shell lines: wait until every worker's log has its ``worker-initialized-regex`` line; a worker
    that exits first ends the job (CloudAI waits on the same lines)."""
    regex = {"decode": dynamo.decode_worker.worker_initialized_regex,
             "prefill": dynamo.prefill_worker.worker_initialized_regex}  # fmt: skip
    lines = ["cloudai_wait_ready() {  # LOG REGEX PID NAME",
             '    until grep -qE -- "$2" "$1" 2>/dev/null; do',
             '        kill -0 "$3" 2>/dev/null || { echo "cloudai: worker $4 exited before it was ready" >&2; '
             "return 1; }",
             "        sleep 5",
             "    done",
             '    echo "cloudai: worker $4 is ready"',
             "}"]  # fmt: skip
    for run in runs:
        role = (run.name or "").split("_")[0]
        pid = f'"${run.pid_var}"'
        lines.append(
            f"cloudai_wait_ready {shlex.quote(run.output or '')} {shlex.quote(regex[role])} {pid} {run.name} || exit 1"
        )
    return "\n".join(lines)
