"""The etcd rendezvous NIXL's benchmarks need, as steps (``cloudai.steps``), in CloudAI's order
(``EtcdCmdGenMixin``, ``NIXLCmdGenBase``)::

    export NIXL_ETCD_NAMESPACE=/nixl/kvbench/$(uuidgen); export NIXL_ETCD_ENDPOINTS=<head>:2379
    etcd ... (background, head node, etcd.log)  ->  wait for http://$NIXL_ETCD_ENDPOINTS/health
    benchmark on node 1 (background) ... sleep 15 ... benchmark on node N   ->  etcd stopped on the way out

With UCX on several nodes the benchmark runs once per node; otherwise twice on the head node (CloudAI's rule).
"""

from __future__ import annotations

from collections.abc import Sequence

from cloudai.steps import Run, Shell, Step, Var, WaitHttp

ENV = 'export NIXL_ETCD_NAMESPACE="/nixl/kvbench/$(uuidgen)"\nexport NIXL_ETCD_ENDPOINTS="$CLOUDAI_HEAD_NODE:2379"'
ETCD_ARGS = (
    "--listen-client-urls=http://0.0.0.0:2379",
    Var("--advertise-client-urls=http://$SLURM_JOB_MASTER_NODE:2379"),
    "--listen-peer-urls=http://0.0.0.0:2380",
    Var("--initial-advertise-peer-urls=http://$SLURM_JOB_MASTER_NODE:2380"),
    Var("--initial-cluster=default=http://$SLURM_JOB_MASTER_NODE:2380"),
    "--initial-cluster-state=new",
)
SETTLE_S = 15  # CloudAI's pause between the first benchmark process and the next


def shell_word(text: str) -> str:
    """``text`` as a ``Var`` when it references variables the batch shell must expand (``$NIXL_ETCD_ENDPOINTS``)."""
    if "$" not in text:
        return text
    try:
        return Var(text)
    except ValueError:
        return text  # not a plain reference: passed as written


def etcd_steps(etcd_path: str, wait_s: int) -> list[Step]:
    return [
        Shell(ENV),
        Run((etcd_path, *ETCD_ARGS), name="etcd", background=True, output="etcd.log", node=0, ntasks=1,
            ntasks_per_node=1),
        WaitHttp(Var("http://$NIXL_ETCD_ENDPOINTS/health"), timeout_s=wait_s, interval_s=1),
    ]  # fmt: skip


def benchmark_steps(argv: Sequence[str], backend: str, num_nodes: int) -> list[Step]:
    """One process per node (UCX over several nodes) or two on the head node, started ``SETTLE_S`` apart."""
    nodes = list(range(num_nodes)) if backend.upper() == "UCX" and num_nodes > 1 else [0] * max(2, num_nodes)
    steps: list[Step] = []
    for index, node in enumerate(nodes):
        last = index == len(nodes) - 1
        name = "bench" if last else f"bench{index}"
        steps.append(Run(tuple(argv), name=name, background=not last, node=node, ntasks=1, ntasks_per_node=1))
        if not last:
            steps.append(Shell(f"sleep {SETTLE_S}"))
    return steps
