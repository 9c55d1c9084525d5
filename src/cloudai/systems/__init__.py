"""Where jobs run. ``System.submit(spec) -> Job`` is the only interface the runner and env use."""

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
