"""The ``scheduler = "slurm"`` system model: CloudAI's slurm system TOML, loaded unchanged.

CloudAI's own fields (``default_partition``, ``[[partitions]]`` with ``[[partitions.groups]]``,
``gpus_per_node``, ``mpi``, ``extra_sbatch_args``, ...) keep their meaning. Fields CloudAI
uses for features we do not have (``cache_docker_images_locally``, ``data_repository``,
``reports``, ``slurm_api``) are accepted, so existing files load, and ignored.

Ours: ``poll_interval_s`` (seconds between ``squeue`` calls; CloudAI's ``monitor_interval``
is accepted but a 60 s default would make every trial a minute longer), ``max_concurrent_jobs``
(as on standalone: how many jobs the runner keeps in the queue at once), ``exclusive``
(``#SBATCH --exclusive``), ``command_timeout_s`` (the cap on every Slurm command we run) and
``container_runtime``: ``"pyxis"`` (CloudAI's only one: a job with an image runs under
``srun --container-image``) or ``"none"`` (the cluster has no pyxis/enroot: every job runs on the
host, its image ignored and named in a comment of the sbatch script).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from cloudai.config.fields import TimeLimitText, check_env, check_one_line, has_control
from cloudai.config.hostlist import check_hostlists
from cloudai.config.timelimit import parse_time_limit
from cloudai.errors import did_you_mean

_NODE_DIST = r"(\*|block|cyclic|arbitrary|plane=[1-9][0-9]*)"
_CPU_DIST = r"(\*|block|cyclic|fcyclic)"
DISTRIBUTION = re.compile(rf"{_NODE_DIST}(:{_CPU_DIST}(:{_CPU_DIST})?)?(,(Pack|NoPack))?")
MPI_PLUGIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]*")  # srun --mpi=list: none, pmix, pmix_v4, pmi2, cray_shasta


class SlurmGroup(BaseModel):
    """A named subset of a partition's nodes (CloudAI's ``[[partitions.groups]]``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    nodes: list[str] = Field(default_factory=list)

    _nodes = field_validator("nodes")(check_hostlists)


class SlurmPartition(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    nodes: list[str] = Field(default_factory=list)
    groups: list[SlurmGroup] = Field(default_factory=list)

    _nodes = field_validator("nodes")(check_hostlists)


class SlurmSystemConfig(BaseModel):
    """A Slurm cluster reached through ``sbatch``/``squeue``/``scontrol`` on this machine."""

    model_config = ConfigDict(extra="forbid")

    name: str
    scheduler: Literal["slurm"] = "slurm"
    install_path: Path = Path("./install")
    output_path: Path = Path("./results")
    hf_home_path: Path | None = None  # CloudAI's Hugging Face cache, mounted into serving jobs; see hf_home()
    partitions: list[SlurmPartition] = Field(min_length=1)  # before default_partition: its validator reads it
    default_partition: str
    account: str | None = None
    distribution: str | None = None
    mpi: str = "pmix"
    gpus_per_node: int | None = Field(default=None, ge=0)
    ntasks_per_node: int | None = Field(default=None, ge=1)
    global_env_vars: dict[str, str] = Field(default_factory=dict)
    extra_sbatch_args: list[str] = Field(default_factory=list)
    extra_srun_args: str | None = None
    exclusive: bool = False
    monitor_interval: float = Field(default=60, gt=0)
    poll_interval_s: float = Field(default=1.0, gt=0)
    max_concurrent_jobs: int = Field(default=8, ge=1)
    command_timeout_s: float = Field(default=60.0, gt=0)
    container_runtime: Literal["pyxis", "none"] = "pyxis"
    container_mount_home: bool = False  # False: --no-container-mount-home, as CloudAI renders
    exclude_nodes: list[str] = Field(default_factory=list)  # never used by any job: #SBATCH --exclude
    pending_timeout: TimeLimitText | None = None  # a job pending longer is cancelled and failed with squeue's reason
    # Accepted for CloudAI compatibility, unused here.
    cache_docker_images_locally: bool = False
    extra_transient_status_errors: list[str] = Field(default_factory=list)
    status_retry_pause_seconds: int = Field(default=10, ge=0)
    data_repository: dict[str, Any] | None = None
    reports: dict[str, Any] | None = None
    slurm_api: dict[str, Any] | None = None

    _exclude = field_validator("exclude_nodes")(check_hostlists)

    @model_validator(mode="before")
    @classmethod
    def _stringify_env(cls, data: Any) -> Any:
        """CloudAI allows numbers in ``global_env_vars``; the environment only holds strings."""
        if isinstance(data, dict) and isinstance(data.get("global_env_vars"), dict):
            env = data["global_env_vars"]
            data = {**data, "global_env_vars": {k: _env_text(v) for k, v in env.items()}}
        return data

    @field_validator("global_env_vars")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        check_env(env)
        return env

    @model_validator(mode="after")
    def _one_line(self) -> SlurmSystemConfig:
        """Everything that reaches an ``#SBATCH`` header or the ``srun`` line is one line of text."""
        fields = {"name": self.name, "default_partition": self.default_partition, "account": self.account}
        fields |= {"distribution": self.distribution, "mpi": self.mpi, "extra_srun_args": self.extra_srun_args}
        fields |= {f"extra_sbatch_args[{i}]": arg for i, arg in enumerate(self.extra_sbatch_args)}
        fields |= {f"partitions[{i}].name": p.name for i, p in enumerate(self.partitions)}
        for field, value in fields.items():
            if value is not None:
                check_one_line(value, field)
        paths = {"install_path": self.install_path, "output_path": self.output_path, "hf_home_path": self.hf_home_path}
        for field, path in paths.items():
            if path is not None and ("," in str(path) or has_control(str(path))):  # a mount source
                raise ValueError(f"{field} {str(path)!r} holds a ',' or a control character (it is mounted into "
                                 "containers as SRC:DST, one per comma)")  # fmt: skip
        return self

    @field_validator("distribution")
    @classmethod
    def _distribution(cls, value: str | None) -> str | None:
        """Slurm's ``--distribution`` grammar (``block``, ``cyclic:fcyclic``, ``plane=4``, ``*:block,Pack``, ...):
        the value reaches the srun line, so anything else (``block $(touch x)``) is refused here."""
        if value is not None and not DISTRIBUTION.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a Slurm distribution: <node>[:<socket>[:<core>]][,Pack|,NoPack] with node one of "
                "*, block, cyclic, arbitrary, plane=N and socket/core one of *, block, cyclic, fcyclic"
            )
        return value

    @field_validator("mpi")
    @classmethod
    def _mpi(cls, value: str) -> str:
        """An MPI plugin name (``srun --mpi=list``): it reaches the srun line, so ``none; touch x`` is refused here."""
        if not MPI_PLUGIN.fullmatch(value):
            raise ValueError(
                f"{value!r} is not an MPI plugin name (letters, digits, _ . + -, as `srun --mpi=list` prints them: "
                "none, pmix, pmix_v4, pmi2, ...)"
            )
        return value

    @field_validator("extra_srun_args")
    @classmethod
    def _srun_words(cls, value: str | None) -> str | None:
        """Split into words like a shell would (each is then quoted on the srun line: ``$(...)`` stays literal)."""
        if value is not None:
            try:
                shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"cannot be split into words: {exc} (an unbalanced quote?)") from None
        return value

    @field_validator("default_partition")
    @classmethod
    def _known_partition(cls, value: str, info: ValidationInfo) -> str:
        partitions = info.data.get("partitions")
        if partitions is None:  # partitions itself is invalid: that error is reported instead
            return value
        names = [p.name for p in partitions]
        if value not in names:
            raise ValueError(
                f"'{value}' is not a declared partition ([[partitions]] name); {did_you_mean(value, names)}"
            )
        return value

    @property
    def pending_timeout_s(self) -> float | None:
        return None if self.pending_timeout is None else float(parse_time_limit(self.pending_timeout))

    @property
    def partition_names(self) -> list[str]:
        return [p.name for p in self.partitions]


def _env_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float):
        return str(value)
    return value
