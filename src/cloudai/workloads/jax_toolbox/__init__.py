"""``JaxToolboxGPT`` / ``JaxToolboxGrok``: Paxml training from JAX-Toolbox, CloudAI's ``run.sh`` and metrics."""

from cloudai.workloads.jax_toolbox.workload import JaxToolbox, JaxToolboxGPT, JaxToolboxGrok

__all__ = ["JaxToolbox", "JaxToolboxGPT", "JaxToolboxGrok"]
