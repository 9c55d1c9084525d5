"""Workload kinds, keyed by CloudAI's ``test_template_name``. Plugins: group ``cloudai.workloads``.

Importing this package imports no workload (so a workload's own ``python -m`` entry stays fast).

May import ``config`` (TOML error helpers) and the shared leaves; never a system (containers and srun
are the Slurm system's), an agent or an env.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    },
)

__all__ = ["WORKLOADS"]
