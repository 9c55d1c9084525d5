"""System TOML models. ``scheduler`` picks the model; CloudAI's files load unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from cloudai.config.fields import check_env
from cloudai.config.tomlfile import read_toml, validate
from cloudai.errors import ConfigError, did_you_mean


class StandaloneSystemConfig(BaseModel):
    """This machine. ``max_concurrent_jobs`` bounds how many independent jobs run at once."""

    model_config = ConfigDict(extra="forbid")

    name: str = "standalone"
    scheduler: Literal["standalone"] = "standalone"
    install_path: Path = Path("./install")
    output_path: Path = Path("./results")
    hf_home_path: Path | None = None  # CloudAI's field; see hf_home()
    global_env_vars: dict[str, str] = Field(default_factory=dict)
    monitor_interval: float = Field(default=1.0, gt=0)
    max_concurrent_jobs: int = Field(default=8, ge=1)
    # How a job's descendants are made to end with it: "cgroup" (a cgroup v2 per job where writable, else
    # as "subreaper") or "subreaper" (cloudai reaps and kills the job's orphans; no cgroup move per job).
    job_containment: Literal["cgroup", "subreaper"] = "cgroup"

    @field_validator("global_env_vars")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        check_env(env)
        return env


def hf_home(config: BaseModel) -> Path:
    """The system's Hugging Face cache (CloudAI's ``hf_home_path``, by default ``<install_path>/huggingface``),
    absolute: serving jobs mount it into their containers so that every job reuses the weights once downloaded."""
    path = getattr(config, "hf_home_path", None) or Path(getattr(config, "install_path", "./install")) / "huggingface"
    return Path(path).absolute()


SYSTEM_MODELS: dict[str, type[BaseModel]] = {"standalone": StandaloneSystemConfig}

# CloudAI's other schedulers: its files name them, cloudai does not run on them (docs/system-toml.md says why).
CLOUDAI_ONLY_SCHEDULERS = {"kubernetes": "Kubernetes", "runai": "Run:ai", "lsf": "IBM LSF"}


def _slurm_model() -> type[BaseModel] | None:
    try:
        from cloudai.config.slurm import SlurmSystemConfig
    except ImportError:
        return None
    return SlurmSystemConfig


def system_models() -> dict[str, type[BaseModel]]:
    """Config model per ``scheduler``."""
    models = dict(SYSTEM_MODELS)
    slurm = _slurm_model()
    if slurm is not None:
        models["slurm"] = slurm
    return models


def system_model(scheduler: str) -> type[BaseModel] | None:
    return system_models().get(scheduler)


def system_from_dict(data: dict[str, Any], file: Path | None) -> BaseModel:
    """Validate a system table against the model its ``scheduler`` names."""
    models = system_models()
    scheduler = data.get("scheduler")
    if not isinstance(scheduler, str):
        raise ConfigError(
            "required field is missing",
            file=file,
            field="scheduler",
            hint=f"set scheduler to one of: {', '.join(sorted(models))}",
        )
    if scheduler in CLOUDAI_ONLY_SCHEDULERS and scheduler not in models:
        raise ConfigError(
            f"scheduler '{scheduler}' is not supported by cloudai: {CLOUDAI_ONLY_SCHEDULERS[scheduler]} is one of "
            "NVIDIA CloudAI's schedulers that cloudai does not run jobs on",
            file=file,
            field="scheduler",
            hint=f"cloudai runs on: {', '.join(sorted(models))} (slurm: a cluster; standalone: this machine); "
            "the tests and scenarios verify without a system (cloudai verify-configs)",
        )
    if scheduler not in models:
        raise ConfigError(
            f"unknown scheduler '{scheduler}'", file=file, field="scheduler", hint=did_you_mean(scheduler, models)
        )
    return validate(models[scheduler], data, file)


def load_system(path: Path | None) -> BaseModel:
    """The system in ``path``; the embedded standalone system when ``path`` is None."""
    if path is None:
        return StandaloneSystemConfig()
    return system_from_dict(read_toml(path), path)
