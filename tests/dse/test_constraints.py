"""A workload's validity rule shapes the search, through the CLI: load-time refusal, dry-run plan, sampler refusals
recorded once as ``infeasible`` (no job, no share of agent_steps), and a resume that reads them back."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tests.dse.conftest import Case, invoke
from tests.dse.training_rule import ToyTraining

from cloudai.workloads import WORKLOADS

TEST = """name = "x"
test_template_name = "ToyTraining"
agent = "{agent}"
{steps}
agent_metrics = ["default"]
agent_config = {{ seed = 0 }}
[cmd_args]
cmd = "{{model}}"
tp = [1, 2, 4, 8]
pp = [1, 3]
cp = 1
vp = 1
mbs = [2, 4]
gbs = {gbs}
"""


@pytest.fixture(autouse=True)
def _toy_training(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(WORKLOADS._loaded, "ToyTraining", ToyTraining)  # registered for these tests only
    yield


def _test(agent: str = "optuna", steps: int | None = None, gbs: str = "8") -> str:
    return TEST.format(agent=agent, steps=f"agent_steps = {steps}" if steps else "", gbs=gbs)


@pytest.mark.parametrize("command", ["run", "dry-run", "verify-configs"])
def test_a_space_without_a_valid_point_is_refused_at_load(case: Callable[..., Case], command: str) -> None:
    c = case(_test(gbs="3"))  # one node of 8 GPUs: gbs = 3 is a multiple of no (even) mbs * dp
    args = c.args(command) if command != "verify-configs" else [command, str(c.scenario), "--tests-dir", str(c.tests)]
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert "no point of the space of 't' satisfies ToyTraining's rule (16 points, 0 valid)" in result.output
    assert 'e.g. {"tp": 1, "pp": 1, "mbs": 2}: gbs = 3 is not a multiple of mbs*dp = 16' in result.output
    assert "Traceback" not in result.output and not c.out.exists()


def test_dry_run_says_how_many_points_are_valid_and_lists_the_first(case: Callable[..., Case]) -> None:
    c = case(_test(steps=3))
    result = invoke(c.args("dry-run"))
    assert result.exit_code == 0, result.output
    assert "space: 16 points, 5 valid (points that break ToyTraining's rule are never run)" in result.output
    first = 'valid points: {"tp": 2, "pp": 1, "mbs": 2}, {"tp": 4, "pp": 1, "mbs": 2}, {"tp": 4, "pp": 1, "mbs": 4}'
    assert first in result.output
    steps = [line for line in result.output.splitlines() if line.startswith("  step ")]
    assert len(steps) == 3 and not any("infeasible" in line for line in steps)
    assert all('derived {"dp": ' in line for line in steps)  # dp = 8 / tp, computed, never asked


def test_a_grid_dry_run_plans_the_valid_points_in_grid_order(case: Callable[..., Case]) -> None:
    c = case(_test(agent="grid_search"))
    result = invoke(c.args("dry-run"))
    assert result.exit_code == 0, result.output
    assert "agent grid_search, 5 step(s)" in result.output  # by default a sweep runs every valid point once
    assert '  step 1: {"tp": 2, "pp": 1, "mbs": 2}  derived {"dp": 4}' in result.output
    assert '  step 2: {"tp": 4, "pp": 1, "mbs": 2}  derived {"dp": 2}' in result.output


def test_refused_draws_are_recorded_once_and_a_resume_reads_them_back(case: Callable[..., Case]) -> None:
    c = case(_test(steps=1))
    result = invoke(c.args())
    assert result.exit_code == 0, result.output
    assert "t: 16 points, 5 valid" in result.output
    frame = c.trajectory()
    assert list(frame.status).count("ok") == 1 and set(frame.status) <= {"ok", "infeasible"}
    refused = frame[frame.status == "infeasible"]
    assert len(refused) > 0  # seed 0's first draws break the rule: what this test is about
    assert refused.action.is_unique and (refused.reward == -1.0).all() and refused.reason.str.contains("not").all()
    assert [p.name for p in c.job_dirs()] == [str(s) for s in frame.step[frame.status == "ok"]]  # no job refused

    (c.tests / "x.toml").write_text((c.tests / "x.toml").read_text().replace("agent_steps = 1", "agent_steps = 2"))
    resumed = invoke([*c.args(), "--resume", str(c.run_dir())])
    assert resumed.exit_code == 0, resumed.output
    again = c.trajectory()
    assert list(again.step) == list(range(1, len(again) + 1)) and list(again.status).count("ok") == 2
    assert again.iloc[: len(frame)].equals(frame)  # the recorded steps, refusals included, kept as they were
    oks = again[again.status == "ok"].action.map(json.loads)
    assert len(oks) == 2 and oks.map(lambda a: a["pp"] == 1 and a["tp"] > 1).all()


def test_the_plan_of_a_single_sbatch_skips_invalid_points(case: Callable[..., Case], tmp_path: Path) -> None:
    system = tmp_path / "slurm.toml"
    system.write_text('name = "s"\nscheduler = "slurm"\ndefault_partition = "p"\ngpus_per_node = 8\n'
                      'install_path = "i"\noutput_path = "o"\n[[partitions]]\nname = "p"\n')  # fmt: skip
    c = case(_test(agent="grid_search"))
    result = invoke([*c.args("dry-run"), "--single-sbatch", "--system-config", str(system)])
    assert result.exit_code == 0, result.output
    (script,) = c.out.glob("*/single_sbatch.sh")
    text = script.read_text()
    assert text.count("--tp=") == 5 and "--pp=3" not in text and "--tp=1 " not in text
