"""CloudAI's ``NeMoLauncherCmdArgs``: field names and defaults; every table passes unknown keys through (they are
Hydra overrides of the launcher's own config tree, e.g. ``training.model.fp8_hybrid``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from cloudai.config.fields import RelativeName, check_absolute_path


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class NumaMapping(_Open):
    enable: bool = True


class Cluster(_Open):
    gpus_per_node: int = 8


class ExpManager(_Open):
    create_checkpoint_callback: bool = False


class Trainer(_Open):
    max_steps: int = 20
    val_check_interval: int = 10
    log_every_n_steps: Literal["1", "2"] = "1"
    enable_checkpointing: bool = False


class TrainingModelData(_Open):
    data_prefix: str = "[]"
    data_impl: str = "mock"


class TrainingModel(_Open):
    global_batch_size: int = 128
    micro_batch_size: int = 2
    tensor_model_parallel_size: int = 4
    pipeline_model_parallel_size: int = 4
    data: TrainingModelData = Field(default_factory=TrainingModelData)

    @model_validator(mode="after")
    def _tokenizer_path(self) -> TrainingModel:
        """``tokenizer.model`` is mounted into the container at itself: one absolute path."""
        tokenizer = (self.model_extra or {}).get("tokenizer")
        if isinstance(tokenizer, dict) and isinstance(tokenizer.get("model"), str):
            check_absolute_path(tokenizer["model"], "tokenizer.model")
        return self


class TrainingRun(_Open):
    time_limit: str = "3:00:00"
    name: RelativeName = "run"  # the launcher's results dir under the job dir


class Training(_Open):
    values: str = "gpt3/40b_improved"
    exp_manager: ExpManager = Field(default_factory=ExpManager)
    trainer: Trainer = Field(default_factory=Trainer)
    model: TrainingModel = Field(default_factory=TrainingModel)
    run: TrainingRun = Field(default_factory=TrainingRun)


class NeMoLauncherArgs(_Open):
    launcher_script: str = "launcher_scripts/main.py"
    docker_image_url: str = "nvcr.io/nvidia/nemo:24.12.01"
    stages: str = '["training"]'
    numa_mapping: NumaMapping = Field(default_factory=NumaMapping)
    cluster: Cluster = Field(default_factory=Cluster)
    training: Training = Field(default_factory=Training)
