"""``DeepEP``: CloudAI's ``DeepEPCmdArgs`` and the job CloudAI renders (``tests/ref_data/deepep-benchmark.sbatch``).

Two steps: the batch shell exports ``MASTER_ADDR`` (the head node) and ``MASTER_PORT=29500``, then one task per
node runs, in the container::

    torchrun --nnodes=N --nproc_per_node=1 --rdzv_id=${SLURM_JOB_ID:-0} --rdzv_backend=c10d
        --rdzv_endpoint=${MASTER_ADDR}:${MASTER_PORT} <tests root>/<subtest_name>.py --num-processes 8 ...

The test script's flags are the subtest's own fields (``_FLAGS``, in CloudAI's order), ``--field-name value``,
a ``True`` bool as a bare flag, ``False``/empty left out. The command runs under ``bash -c`` so that the task's
shell expands ``${SLURM_JOB_ID:-0}`` and ``${MASTER_*}`` (CloudAI escapes them the same way). CloudAI takes the
head node's IP address with an extra ``srun hostname --ip-address``; here ``MASTER_ADDR`` is its host name, which
torchrun's c10d rendezvous resolves. DeepEP's tests print their own checks and tuning lines; CloudAI reads no
numbers from them (its success check is a grep), so neither does cloudai.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from cloudai.config.fields import ParallelSize, PositiveCount
from cloudai.steps import Run, Shell, Step
from cloudai.workloads.base import JobContext, Workload, cloudai_extra_args

Subtest = Literal["test_internode", "test_intranode", "test_low_latency", "test_ep"]
_LEGACY = ("test_internode", "test_intranode", "test_low_latency")
_COMMON = ("num_processes", "num_tokens", "hidden")
_FLAGS: dict[str, tuple[str, ...]] = {
    "test_internode": (*_COMMON, "num_topk_groups", "num_topk", "pressure_test_mode", "num_experts",
                       "test_ll_compatibility"),
    "test_intranode": (*_COMMON, "num_topk", "num_experts", "allow_mnnvl"),
    "test_low_latency": (*_COMMON, "num_topk", "num_experts", "allow_mnnvl", "disable_nvlink", "use_logfmt",
                         "pressure_test", "shrink_test"),
    "test_ep": ("num_processes", "num_sms", "num_qps", "num_allocated_qps", "num_gpu_timeout_secs",
                "num_cpu_timeout_secs", "sl_idx", "num_tokens", "hidden", "num_topk", "num_experts", "do_cpu_sync",
                "allow_hybrid_mode", "allow_multiple_reduction", "prefer_overlap_with_compute", "deterministic",
                "seed", "skip_check", "skip_perf_test", "do_pressure_test", "reuse_elastic_buffer",
                "test_first_only", "unbalanced_ratio", "precise_unbalanced_ratio", "masked_ratio",
                "dump_profile_traces", "ignore_local_traffic"),
}  # fmt: skip
MASTER_PORT = 29500


class DeepEPArgs(BaseModel):
    """CloudAI's fields and defaults."""

    model_config = ConfigDict(extra="forbid")

    docker_image_url: str = Field(min_length=1)
    subtest_name: Subtest = "test_internode"
    deep_ep_root: str = "/workspace/DeepEP"
    legacy_tests_root: str | None = None
    elastic_tests_root: str | None = None
    python_executable: str = "python"
    num_processes: ParallelSize = 8
    num_tokens: int = 4096
    hidden: int = 7168
    num_topk: int = 8
    num_experts: PositiveCount = 256
    # v1 (legacy) flags
    num_topk_groups: int | None = None
    allow_mnnvl: bool = False
    test_ll_compatibility: bool = False
    pressure_test_mode: int = 0
    pressure_test: bool = False
    shrink_test: bool = False
    disable_nvlink: bool = False
    use_logfmt: bool = False
    # v2 (elastic, test_ep) flags
    num_sms: int = 0
    num_qps: int = 0
    num_allocated_qps: int = 0
    num_gpu_timeout_secs: int = 100
    num_cpu_timeout_secs: int = 100
    sl_idx: int = 0
    do_cpu_sync: int = 1
    allow_hybrid_mode: int = 1
    allow_multiple_reduction: int = 1
    prefer_overlap_with_compute: int = 0
    deterministic: bool = False
    seed: int = 0
    skip_check: bool = False
    skip_perf_test: bool = False
    do_pressure_test: bool = False
    reuse_elastic_buffer: bool = False
    test_first_only: bool = False
    unbalanced_ratio: float = 1.0
    precise_unbalanced_ratio: bool = False
    masked_ratio: float = 0.0
    dump_profile_traces: str = ""
    ignore_local_traffic: bool = False


def script_path(args: DeepEPArgs) -> str:
    """``<root>/<subtest>.py``: legacy tests under ``tests/legacy``, ``test_ep`` under ``tests/elastic``."""
    if args.subtest_name in _LEGACY:
        root = args.legacy_tests_root or f"{args.deep_ep_root}/tests/legacy"
    else:
        root = args.elastic_tests_root or f"{args.deep_ep_root}/tests/elastic"
    return f"{root.rstrip('/')}/{args.subtest_name}.py"


def test_flags(args: DeepEPArgs) -> list[str]:
    words: list[str] = []
    for name in _FLAGS[args.subtest_name]:
        value = getattr(args, name)
        if value is None or value == "" or value is False:
            continue
        flag = f"--{name.replace('_', '-')}"
        words += [flag] if value is True else [flag, str(value)]
    return words


class DeepEP(Workload):
    name = "DeepEP"
    args_model = DeepEPArgs
    metrics = ()  # CloudAI parses none

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = DeepEPArgs.model_validate(args)
        torchrun = [
            "torchrun", f"--nnodes={job.num_nodes}", "--nproc_per_node=1", "--rdzv_id=${SLURM_JOB_ID:-0}",
            "--rdzv_backend=c10d", "--rdzv_endpoint=${MASTER_ADDR}:${MASTER_PORT}",
        ]  # fmt: skip
        words = [script_path(model), *test_flags(model), *cloudai_extra_args(job.extra_cmd_args)]
        return ["bash", "-c", " ".join([*torchrun, *(shlex.quote(w) for w in words)])]

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        nodes = job.num_nodes
        return (
            Shell(f'export MASTER_ADDR="$CLOUDAI_HEAD_NODE"\nexport MASTER_PORT={MASTER_PORT}'),
            Run(tuple(self.argv(args, job)), name="deepep", num_nodes=nodes, ntasks=nodes, ntasks_per_node=1),
        )

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return DeepEPArgs.model_validate(args).docker_image_url
