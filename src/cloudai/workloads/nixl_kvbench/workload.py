"""``NIXLKVBench``: CloudAI's ``NIXLKVBenchCmdArgs`` and the job CloudAI renders (``tests/ref_data/nixl-kvbench.sbatch``).

The steps are NIXLBench's (``nixl_bench.etcd``); the command is::

    python_executable kvbench_script profile [--model_config M] [--backend B] ... --etcd_endpoints http://$NIXL_ETCD_ENDPOINTS

every field that is not CloudAI's own as ``--name value`` (``model_cfg`` as ``--model_config``), then the keys
CloudAI passes through. kvbench ``profile`` prints nixlbench's results table: the same metrics (``default`` is the
mean average latency, us).
"""  # noqa: E501

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cloudai.steps import Step, Var
from cloudai.workloads.base import JobContext, Workload
from cloudai.workloads.nixl_bench.etcd import benchmark_steps, etcd_steps
from cloudai.workloads.nixl_bench.workload import NIXLArgs, NIXLBench, read_table

_NOT_FLAGS = {"docker_image_url", "etcd_path", "wait_etcd_for", "etcd_image_url", "command", "kvbench_script",
              "python_executable"}  # fmt: skip


class NIXLKVBenchArgs(NIXLArgs):
    command: Literal["profile"] = "profile"
    kvbench_script: str = "/workspace/nixl/benchmark/kvbench/main.py"
    python_executable: str = "python"
    model_cfg: str | None = None
    backend: str | None = None


class NIXLKVBench(Workload):
    name = "NIXLKVBench"
    args_model = NIXLKVBenchArgs
    produces_metrics = True
    metrics = NIXLBench.metrics
    units = NIXLBench.units
    noisy = True

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        model = NIXLKVBenchArgs.model_validate(args)
        argv = [model.python_executable, model.kvbench_script, model.command]
        for name, value in model.model_dump(exclude=_NOT_FLAGS, exclude_none=True).items():
            argv += ["--model_config" if name == "model_cfg" else f"--{name}", str(value)]
        return [*argv, "--etcd_endpoints", Var("http://$NIXL_ETCD_ENDPOINTS")]

    def steps(self, args: Mapping[str, Any], job: JobContext) -> Sequence[Step]:
        model = NIXLKVBenchArgs.model_validate(args)
        steps = etcd_steps(model.etcd_path, model.wait_etcd_for)
        return steps + benchmark_steps(self.argv(args, job), model.backend or "unset", job.num_nodes)

    def container_image(self, args: Mapping[str, Any]) -> str | None:
        return NIXLKVBenchArgs.model_validate(args).docker_image_url

    def read_metrics(self, job_dir: Path) -> dict[str, float]:
        return read_table(job_dir, "kvbench")
