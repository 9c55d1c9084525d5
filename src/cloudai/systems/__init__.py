"""Where jobs run. ``System.submit(spec) -> Job`` is the only interface the runner and env use.

May import ``config`` (the system models) and the shared leaves; never a workload, an agent, an env or
anything that plans or runs a scenario (a system runs ``JobSpec``s, whatever made them).
"""

from cloudai.registry import Registry
from cloudai.systems.base import Job, JobSpec, JobStatus, System

SYSTEMS: Registry[type[System]] = Registry(
    "system",
    "cloudai.systems",
    {
        "standalone": "cloudai.systems.standalone:StandaloneSystem",
        "slurm": "cloudai.systems.slurm.system:SlurmSystem",
    },
)

__all__ = ["SYSTEMS", "Job", "JobSpec", "JobStatus", "System"]
