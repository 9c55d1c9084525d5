"""The Slurm system: pure sbatch rendering (``render``), pure output parsing (``parse``), the
system that submits and tracks jobs (``system``), and one-script runs (``single_sbatch``)."""

from cloudai.systems.slurm.render import dependency_expr, render_sbatch
from cloudai.systems.slurm.system import SlurmSystem

__all__ = ["SlurmSystem", "dependency_expr", "render_sbatch"]
