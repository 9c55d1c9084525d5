"""The fio command line: CloudAI's rendering of ``cmd_args`` (fio_binary, args in order, job_file last)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from cloudai.config.test import load_test
from cloudai.workloads.base import JobContext
from cloudai.workloads.fio import Fio, FioArgs

CLOUDAI_TESTS = Path(__file__).parent / "cloudai_conf_fio" / "test"
JOB = JobContext(job_dir=Path("/tmp/job"))


def argv(cmd_args: dict[str, Any], job: JobContext = JOB) -> list[str]:
    return Fio().argv(cmd_args, job)


def test_cloudai_fio_toml_renders_cloudais_command_plus_json_output() -> None:
    test = load_test(CLOUDAI_TESTS / "fio.toml")
    assert test.test_template_name == "Fio"
    assert argv(test.cmd_args) == [
        "fio", "--name=fio-smoke", "--filename=/tmp/cloudai-fio-test", "--rw=randwrite", "--bs=128k",
        "--size=80m", "--iodepth=1", "--numjobs=1", "--group_reporting", "--thread", "--output-format=json",
    ]  # fmt: skip


def test_cloudais_defaults() -> None:
    defaults = FioArgs().model_dump()
    assert defaults == {
        "fio_binary": "fio", "job_file": None, "args": {}, "docker_image_url": None, "num_tasks_per_node": 1,
        "metric_operation": "all", "metric_name": "bw", "metric_aggregate": "sum",
    }  # fmt: skip
    assert argv({}) == ["fio", "--output-format=json"]
    assert Fio().container_image({}) is None
    assert Fio().container_image({"docker_image_url": "nvcr.io#nvidia/fio:1"}) == "nvcr.io#nvidia/fio:1"


def test_value_kinds_render_as_cloudai_renders_them() -> None:
    args = {
        "name": "j",
        "thread": True,
        "direct": False,
        "verify": None,
        "bssplit": ["4k/50", "64k/50"],
        "iodepth": 16.0,
        "--rw": "read",
        "filename": {"a": "/dev/a", "b": "/dev/b"},
    }
    assert argv({"fio_binary": "/opt/fio/bin/fio", "args": args, "job_file": "jobs.fio"}) == [
        "/opt/fio/bin/fio", "--name=j", "--thread", "--bssplit=4k/50,64k/50", "--iodepth=16", "--rw=read",
        "--filename=/dev/a", "--filename=/dev/b", "--output-format=json", "jobs.fio",
    ]  # fmt: skip


@pytest.mark.parametrize(("key", "value"), [("output-format", "json+"), ("output_format", "normal,json")])
def test_a_users_output_format_is_kept(key: str, value: str) -> None:
    assert argv({"args": {key: value}}) == ["fio", f"--{key}={value}"]


def test_extra_cmd_args_come_before_the_job_file() -> None:
    job = JobContext(job_dir=Path("/tmp/job"), extra_cmd_args={"eta": "never"})
    assert argv({"job_file": "j.fio"}, job) == ["fio", "--output-format=json", "--eta=never", "j.fio"]
    job = JobContext(job_dir=Path("/tmp/job"), extra_cmd_args="--eta=never --minimal-no")
    assert argv({}, job)[-2:] == ["--eta=never", "--minimal-no"]


@pytest.mark.parametrize(
    ("cmd_args", "field"),
    [
        ({"fio_bin": "fio"}, "fio_bin"),
        ({"metric_name": "throughput"}, "metric_name"),
        ({"metric_operation": "rw"}, "metric_operation"),
        ({"metric_aggregate": "median"}, "metric_aggregate"),
        ({"args": "--bs=4k"}, "args"),
        ({"args": {"output-format": "normal"}}, "cloudai reads fio's JSON output"),
    ],
)
def test_bad_cmd_args_are_refused(cmd_args: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError, match=field):
        FioArgs.model_validate(cmd_args)
