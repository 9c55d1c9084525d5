"""cloudai: design-space exploration for cluster workloads.

The command line is the main interface (``cloudai --help``). ``import cloudai`` imports
nothing heavy; the modules below are the public API.
"""

from cloudai.errors import (
    AgentError,
    CloudAIError,
    ConfigError,
    GymServerError,
    Interrupted,
    SubmissionError,
    SystemError_,
    WorkloadError,
)

__version__ = "0.1.0"

__all__ = [
    "AgentError",
    "CloudAIError",
    "ConfigError",
    "GymServerError",
    "Interrupted",
    "SubmissionError",
    "SystemError_",
    "WorkloadError",
    "__version__",
]
