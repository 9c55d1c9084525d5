"""Workload kinds, keyed by CloudAI's ``test_template_name``. Plugins: group ``cloudai.workloads``.

Importing this package imports no workload (so a workload's own ``python -m`` entry stays fast).

May import ``config`` (TOML error helpers) and the shared leaves; never a system (containers and srun
are the Slurm system's), an agent or an env.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cloudai.registry import Registry

if TYPE_CHECKING:
    from cloudai.workloads.base import Workload

WORKLOADS: Registry[type[Workload]] = Registry(
    "workload (test_template_name)",
    "cloudai.workloads",
    {
        "Sleep": "cloudai.workloads.sleep:Sleep",
        "BashCmd": "cloudai.workloads.bash_cmd:BashCmd",
        "Synthetic": "cloudai.workloads.synthetic:Synthetic",
        "NcclTest": "cloudai.workloads.nccl_test:NcclTest",
        "UCCTest": "cloudai.workloads.ucc_test:UCCTest",
        "OSUBench": "cloudai.workloads.osu_bench:OSUBench",
        "Fio": "cloudai.workloads.fio:Fio",
        "MegatronRun": "cloudai.workloads.megatron_run:MegatronRun",
        "JaxToolboxGPT": "cloudai.workloads.jax_toolbox:JaxToolboxGPT",
        "JaxToolboxGrok": "cloudai.workloads.jax_toolbox:JaxToolboxGrok",
        "NeMoRun": "cloudai.workloads.nemo_run:NeMoRun",
        "MegatronBridge": "cloudai.workloads.megatron_bridge:MegatronBridge",
        "NeMoLauncher": "cloudai.workloads.nemo_launcher:NeMoLauncher",
        "DeepEP": "cloudai.workloads.deepep:DeepEP",
        "NIXLBench": "cloudai.workloads.nixl_bench:NIXLBench",
        "NIXLKVBench": "cloudai.workloads.nixl_kvbench:NIXLKVBench",
        "NixlPerftest": "cloudai.workloads.nixl_perftest:NixlPerftest",
        "MoEBenchmark": "cloudai.workloads.moe_benchmark:MoEBenchmark",
        "ChakraReplay": "cloudai.workloads.chakra_replay:ChakraReplay",
        "NixlEP": "cloudai.workloads.nixl_ep:NixlEP",
        "DDLBTest": "cloudai.workloads.ddlb:DDLBTest",
        "SlurmContainer": "cloudai.workloads.slurm_container:SlurmContainer",
        "TritonInference": "cloudai.workloads.triton_inference:TritonInference",
        "AIDynamo": "cloudai.workloads.ai_dynamo:AIDynamo",
        "DynamoMocker": "cloudai.workloads.dynamo_mocker:DynamoMocker",
        "vllm": "cloudai.workloads.vllm:Vllm",
        "sglang": "cloudai.workloads.sglang:Sglang",
        "Aiconfigurator": "cloudai.workloads.aiconfigurator:Aiconfigurator",
    },
)

__all__ = ["WORKLOADS"]


def units_of(workload: str, cmd_args: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The workload's declared metric units ({} for a plugin that declares none, or an unknown workload); with
    ``cmd_args``, ``default`` gets the unit of the metric it means (``Workload.default_means``)."""
    try:
        units = dict(getattr(WORKLOADS.get(workload), "units", {}))
    except Exception:  # an unknown workload (live RL has none): no units
        return {}
    means = default_means(workload, cmd_args) if cmd_args is not None and "default" not in units else None
    if means in units:
        units["default"] = units[means]
    return units


def default_means(workload: str, cmd_args: Mapping[str, Any]) -> str | None:
    """What ``default`` means for this test (``Workload.default_means``); None when unknown."""
    try:
        return WORKLOADS.get(workload)().default_means(cmd_args)
    except Exception:  # an unknown workload, or one that cannot be built without its environment
        return None


def latency_charts(workload: str) -> dict[str, object] | None:
    """The workload's ``LatencyCharts`` as run.json holds them; None for a workload without (or unknown)."""
    try:
        charts = getattr(WORKLOADS.get(workload), "latency_charts", None)
    except Exception:  # an unknown workload (live RL has none): no charts
        return None
    return charts.to_json() if charts is not None else None
