"""CloudAI's ``NeMoRunCmdArgs``: its fields, defaults and order (the order is the command line's).

Every table allows keys CloudAI does not name (``extra="allow"``): CloudAI passes them to NeMo-Run as overrides
(``trainer.strategy.sequence_parallel=True``), after the named fields of the same table.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Plugin(_Open):
    fp8: str | None = None
    fp8_margin: int | None = None
    fp8_amax_history_len: int | None = None
    fp8_amax_compute_algo: str | None = None
    fp8_wgrad: bool | None = None
    fp8_params: bool | None = None
    grad_reduce_in_fp32: bool | None = None


class OptimConfig(_Open):
    use_precision_aware_optimizer: bool | None = None


class Optim(_Open):
    config: OptimConfig | None = None


class Data(_Open):
    seq_length: int = 8192
    micro_batch_size: int = 1
    global_batch_size: int = 1
    num_train_samples: int | None = 1000  # derived: global_batch_size x trainer.max_steps (CloudAI overwrites it)


class TrainerStrategy(_Open):
    tensor_model_parallel_size: int = 1
    pipeline_model_parallel_size: int = 1
    context_parallel_size: int = 2
    virtual_pipeline_model_parallel_size: int | None = None


class Trainer(_Open):
    max_steps: int = 100
    val_check_interval: int | float = 1000
    num_nodes: int | None = None  # derived: the job's node count (CloudAI overwrites it)
    strategy: TrainerStrategy = Field(default_factory=TrainerStrategy)
    plugins: Plugin | None = None
    callbacks: str | list[str] | None = None
    log_every_n_steps: int = 1


class LogCkpt(_Open):
    save_on_train_epoch_end: bool | None = None
    save_last: bool | None = None


class LogTensorboard(_Open):
    save_dir: str = "logs"
    name: str | None = "default"


class Log(_Open):
    ckpt: LogCkpt | None = None
    tensorboard: LogTensorboard | None = None


class NeMoRunArgs(_Open):
    docker_image_url: str
    task: str
    recipe_name: str
    num_layers: int | None = None
    trainer: Trainer = Field(default_factory=Trainer)
    log: Log = Field(default_factory=Log)
    data: Data = Field(default_factory=Data)
    optim: Optim = Field(default_factory=Optim)
