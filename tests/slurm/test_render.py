"""Golden files for generated sbatch scripts (pure: no Slurm needed).

Regenerate after an intended change with ``CLOUDAI_UPDATE_GOLDEN=1 uv run pytest tests/slurm/test_render.py``
and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cloudai.config.slurm import SlurmSystemConfig
from cloudai.systems.base import JobSpec
from cloudai.systems.slurm.render import dependency_expr, render_sbatch, time_directive
from cloudai.systems.slurm.single_sbatch import ScriptStep, render_single_sbatch

GOLDEN = Path(__file__).parent / "golden"
RUN = Path("/results/sleep-scenario_2026-01-01_00-00-00")


def minimal() -> SlurmSystemConfig:
    return SlurmSystemConfig.model_validate({"name": "c", "default_partition": "p", "partitions": [{"name": "p"}]})


def everything() -> SlurmSystemConfig:
    return SlurmSystemConfig.model_validate(
        {
            "name": "cluster",
            "default_partition": "batch",
            "partitions": [{"name": "batch"}, {"name": "other"}],
            "account": "proj-7",
            "distribution": "block:block",
            "gpus_per_node": 8,
            "ntasks_per_node": 8,
            "exclusive": True,
            "global_env_vars": {"NCCL_IB_TIMEOUT": 20, "GREETING": "it's a test"},
            "extra_sbatch_args": ["--reservation=r1", "--constraint=a100"],
            "extra_srun_args": "--cpu-bind=none --container-image=img",
        }
    )


def spec(name: str = "Tests.1.0", **overrides: object) -> JobSpec:
    values: dict = {
        "name": name,
        "argv": ("bash", "-c", "echo \"$HOME\" 'a b' ; exit 3"),
        "job_dir": RUN / name.rsplit(".", 1)[0] / name.rsplit(".", 1)[1],
        "env": {"SPACEY": "a b", "QUOTE": "x'y", "GREETING": "overridden"},
        "time_limit_s": 90.0,
        "num_nodes": 2,
    }
    values.update(overrides)
    return JobSpec(**values)


def check_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("CLOUDAI_UPDATE_GOLDEN") == "1":
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs; see the module docstring to regenerate"


def test_minimal_job() -> None:
    check_golden("minimal.sbatch", render_sbatch(spec(env={}, time_limit_s=None, num_nodes=1), minimal()))


def test_every_option() -> None:
    deps = [dependency_expr("start_post_comp", ["11", "12"]), dependency_expr("start_post_init", ["10"])]
    check_golden("every_option.sbatch", render_sbatch(spec(), everything(), [d for d in deps if d]))


def test_single_sbatch() -> None:
    steps = [
        ScriptStep(spec("Tests.4.0", argv=("sleep", "600"), env={}, time_limit_s=60.0, num_nodes=1), "Tests.1.0"),
        ScriptStep(spec("Tests.1.0", env={}, time_limit_s=60.0, num_nodes=1)),
        ScriptStep(spec("Tests.2.0", argv=("sleep", "1"), env={"X": "1"}, time_limit_s=120.0)),
        ScriptStep(spec("Tests.3.0", argv=("false",), env={}, time_limit_s=30.0, num_nodes=1)),
    ]
    check_golden("single.sbatch", render_single_sbatch(steps, everything(), RUN, "sleep-scenario"))


def test_single_sbatch_without_every_limit_has_no_time() -> None:
    steps = [ScriptStep(spec()), ScriptStep(spec("Tests.2.0", time_limit_s=None))]
    assert "#SBATCH --time" not in render_single_sbatch(steps, minimal(), RUN, "s")


def test_single_sbatch_needs_jobs() -> None:
    with pytest.raises(ValueError, match="no jobs"):
        render_single_sbatch([], minimal(), RUN, "s")


@pytest.mark.parametrize(
    ("kind", "ids", "expected"),
    [
        ("start_post_init", ["5"], "after:5"),
        ("start_post_comp", ["5", "6"], "afterany:5:6"),
        ("end_post_comp", ["5"], None),
        ("start_post_comp", [], None),
    ],
)
def test_dependency_expr(kind: str, ids: list[str], expected: str | None) -> None:
    assert dependency_expr(kind, ids) == expected


@pytest.mark.parametrize(
    ("seconds", "expected"), [(0.2, "00:00:01"), (59.5, "00:01:00"), (3600, "01:00:00"), (90061, "1-01:01:01")]
)
def test_time_directive_rounds_up_to_whole_seconds(seconds: float, expected: str) -> None:
    assert time_directive(seconds) == expected
