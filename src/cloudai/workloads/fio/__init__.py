"""``Fio``: the fio I/O benchmark with CloudAI's ``cmd_args`` (``fio_binary``, ``args``, ``job_file``, ...).

``workload`` builds the argv and holds the cmd_args model; ``results`` reads fio's JSON output.
"""

from cloudai.workloads.fio.workload import Fio, FioArgs

__all__ = ["Fio", "FioArgs"]
