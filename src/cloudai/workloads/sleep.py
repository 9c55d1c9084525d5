"""``Sleep``: ``sleep <seconds>``. CloudAI's sleep tests load and run unchanged."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from cloudai.workloads.base import JobContext, Workload


class SleepArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seconds: float = Field(default=5, ge=0)  # CloudAI's default


class Sleep(Workload):
    name = "Sleep"
    hardware = "cpu"
    args_model = SleepArgs
    metrics = ()  # sleeping measures nothing: an agent would have nothing to optimise

    def argv(self, args: Mapping[str, Any], job: JobContext) -> list[str]:
        seconds = SleepArgs.model_validate(args).seconds
        return ["sleep", f"{seconds:g}"]
