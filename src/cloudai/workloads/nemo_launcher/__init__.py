"""``NeMoLauncher``: NeMo-Framework-Launcher's ``launcher_scripts/main.py`` (Hydra overrides), run in the batch
shell, where it submits its own training job; CloudAI's files unchanged."""

from cloudai.workloads.nemo_launcher.workload import NeMoLauncher, NeMoLauncherArgs

__all__ = ["NeMoLauncher", "NeMoLauncherArgs"]
