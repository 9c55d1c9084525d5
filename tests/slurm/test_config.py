"""The slurm system TOML: CloudAI's files load; mistakes are named by file and field (pure, plus the real CLI)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.conftest import CONF, cloudai

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.config.system import load_system
from cloudai.errors import ConfigError

HERE = Path(__file__).parent
GOOD = """\
name = "c"
scheduler = "slurm"
default_partition = "batch"
[[partitions]]
name = "batch"
"""


@pytest.mark.parametrize(
    "path",
    [HERE / "data" / "example_slurm_cluster.toml", HERE / "slurm_system.toml", CONF / "common/system/local_slurm.toml"],
)
def test_shipped_files_load(path: Path) -> None:
    config = load_system(path)
    assert isinstance(config, SlurmSystemConfig)


def test_cloudai_example_keeps_its_meaning() -> None:
    config = load_system(HERE / "data" / "example_slurm_cluster.toml")
    assert isinstance(config, SlurmSystemConfig)
    assert config.partition_names == ["partition_1", "partition_2"]
    assert [g.name for g in config.partitions[0].groups] == ["group_1", "group_2", "group_3", "group_4"]
    assert config.partitions[0].groups[0].nodes == ["node-[001-025]"]
    assert (config.mpi, config.gpus_per_node, config.ntasks_per_node) == ("pmix", 8, 8)
    assert config.global_env_vars["NCCL_IB_TIMEOUT"] == "20"


def test_numbers_in_global_env_vars_become_strings(write: Callable[[str, str], Path]) -> None:
    config = load_system(write("s.toml", GOOD + "[global_env_vars]\nA = 1\nB = true\n"))
    assert isinstance(config, SlurmSystemConfig)
    assert config.global_env_vars == {"A": "1", "B": "1"}


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        (GOOD.replace('default_partition = "batch"', 'default_partition = "bach"'), "default_partition", "'batch'"),
        ("poll_interval = 1\n" + GOOD, "poll_interval", "poll_interval_s"),
        ("poll_interval_s = 0\n" + GOOD, "poll_interval_s", "greater than 0"),
        ("max_concurrent_jobs = 0\n" + GOOD, "max_concurrent_jobs", "greater than or equal to 1"),
        (GOOD + '[[partitions.groups]]\nname = "g"\nnode = []\n', "partitions[0].groups[0].node", "nodes"),
        (GOOD.replace('default_partition = "batch"\n', ""), "default_partition", "required"),
        ('name = "c"\nscheduler = "slurm"\ndefault_partition = "b"\npartitions = []\n', "partitions", "at least 1"),
        (GOOD.replace('scheduler = "slurm"', 'scheduler = "slrum"'), "scheduler", "'slurm'"),
    ],
)
def test_mistakes_name_file_and_field(write: Callable[[str, str], Path], text: str, field: str, words: str) -> None:
    path = write("system.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_system(path)
    problem = caught.value.problems[0]
    assert problem.file == str(path) and problem.field == field
    assert words in str(caught.value)


def test_cli_reports_a_bad_default_partition(write: Callable[[str, str], Path]) -> None:
    path = write("system.toml", GOOD.replace('default_partition = "batch"', 'default_partition = "bach"'))
    done = cloudai("verify-configs", path)
    assert done.returncode == 2
    assert f"{path}: default_partition:" in done.stderr and "did you mean 'batch'?" in done.stderr
