"""The shipped parallelism example end to end: constraint, trial, metric, report, best.toml.

``conf/common/test/dse_nemo_run_llama3_8b_parallelism.toml`` runs unchanged; the test puts the NeMo stand-in
(``tests/workloads/bin/nemo/python``: NeMo's log format, step times from an analytic model) first on PATH, so
CloudAI's command ``python /cloudai_install/cloudai_nemorun.py ...`` reaches it: the only fake, as there is no GPU.
Optuna's first points are random (its startup trials), so a seed fixes them: on 2 nodes seed 11 gives out of memory
(mbs 4 at tp 1), ok, infeasible (tp*pp*cp = 64), out of memory; on 1 node seed 1 gives ok, infeasible, out of
memory, infeasible.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
import toml
from click.testing import CliRunner
from tests.workloads.conftest import BIN, HERE

from cloudai.cli import cli

REPO = HERE.parent.parent
EXAMPLE_TESTS = REPO / "conf" / "common" / "test"
SCENARIO = """name = "s"
[[Tests]]
id = "parallelism"
test_name = "dse_nemo_run_llama3_8b_parallelism"
num_nodes = {nodes}
time_limit = "00:60:00"
agent_steps = 4
agent_config = {{ seed = {seed}, confirm = 0 }}
"""


@pytest.fixture
def nemo_standin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{BIN / 'nemo'}{os.pathsep}{os.environ.get('PATH', '')}")


def run(tmp_path: Path, nodes: int, seed: int, *system: str) -> tuple[int, str, Path]:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SCENARIO.format(nodes=nodes, seed=seed))
    out = tmp_path / "out"
    args = ["run", *system, "--tests-dir", str(EXAMPLE_TESTS), "--test-scenario", str(scenario)]
    args += ["--output-dir", str(out)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    [run_dir] = out.iterdir()
    return result.exit_code, result.output, run_dir / "parallelism" / "0"


def rows(iteration: Path) -> list[dict[str, str]]:
    with (iteration / "trajectory.csv").open() as f:
        return list(csv.DictReader(f))


def check_steps(iteration: Path, steps: list[dict[str, str]], gpus: str) -> str:
    """Optuna's 4 trials plus the points the rule refused (recorded once, no step, no job); the first ok step."""
    refused = [r for r in steps if r["status"] == "infeasible"]
    assert len(steps) - len(refused) == 4 and refused  # agent_steps counts trials: a refused point takes none
    assert all(f"{gpus}, tp=" in r["reason"] or "global_batch_size" in r["reason"] for r in refused), refused
    assert not any((iteration / r["step"]).exists() for r in refused)  # an infeasible point never ran
    return next(r["step"] for r in steps if r["status"] == "ok")


@pytest.mark.usefixtures("nemo_standin")
def test_parallelism_example_on_standalone(tmp_path: Path) -> None:
    code, output, iteration = run(tmp_path, 2, 11)
    assert code == 0, output
    steps = rows(iteration)
    ok = check_steps(iteration, steps, "16 GPUs")
    assert any("out of memory" in r["reason"] for r in steps if r["status"] == "failed")  # an OOM point is failed
    metrics = json.loads((iteration / ok / "job.json").read_text())["metrics"]
    assert 0 < metrics["step_time_s"] < metrics["default"] * 1.1 and metrics["tflops_per_gpu"] > 100
    assert metrics["tokens_per_s"] == pytest.approx(128 * 8192 / metrics["step_time_s"])
    argv = (iteration / ok / "stdout.txt").read_text().splitlines()[0]
    assert " trainer.num_nodes=2 " in argv and argv.endswith("data.num_train_samples=2560")  # derived, not asked
    best = toml.loads((iteration / "best.toml").read_text())
    assert best["test_template_name"] == "NeMoRun" and best["cmd_args"]["data"]["global_batch_size"] == 128
    assert (iteration.parent.parent / "report.html").exists()


@pytest.mark.slurm
@pytest.mark.usefixtures("nemo_standin")
def test_parallelism_example_on_local_slurm(tmp_path: Path) -> None:
    """The local Slurm has one node: 8 GPUs counted (its system gives no gpus_per_node: CloudAI's 8 per node)."""
    code, output, iteration = run(tmp_path, 1, 1, "--system-config", str(HERE / "slurm_system.toml"))
    assert code == 0, output
    ok = check_steps(iteration, rows(iteration), "8 GPUs")
    assert json.loads((iteration / ok / "job.json").read_text())["metrics"]["step_time_s"] > 0
    script = (iteration / ok / "sbatch.sh").read_text()
    assert "srun --export=ALL --mpi=none python /cloudai_install/cloudai_nemorun.py --factory" in script
    assert "export CLOUDAI_NEMO_RECIPE=cloudai_llama3_8b_recipe" in script
    assert (iteration / "best.toml").exists()
