"""End to end: CloudAI's test files, unchanged, run by ``cloudai run`` with stand-in binaries on PATH.

The stand-ins (``bin/``) print the real tools' output format; they are the only fake, because this
machine has no GPU. A scenario entry points UCC and OSU at them (``ucc_perftest_path``,
``benchmarks_dir``); nccl-tests binaries are found on PATH as on a cluster.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.workloads.conftest import BIN, CONF, HERE

from cloudai.cli import cli

SCENARIO = f"""name = "e2e"
[[Tests]]
id = "nccl"
test_name = "nccl_base_test"
[[Tests]]
id = "ucc"
test_name = "ucc_base_test"
  [Tests.cmd_args]
  ucc_perftest_path = "{BIN}/ucc_perftest"
[[Tests]]
id = "osu"
test_name = "osu_test"
  [Tests.cmd_args]
  benchmarks_dir = "{BIN}"
"""
WRONG = """
[[Tests]]
id = "wrong"
test_name = "nccl_base_test"
  [Tests.extra_env_vars]
  CLOUDAI_STANDIN_OUTPUT = "nccl_wrong.txt"
[[Tests]]
id = "cut"
test_name = "nccl_base_test"
  [Tests.extra_env_vars]
  CLOUDAI_STANDIN_OUTPUT = "nccl_truncated.txt"
"""
NCCL_ARGV = (
    "all_reduce_perf_mpi --nthreads 1 --ngpus 1 --minbytes 128 --maxbytes 4G --stepbytes 1M --op sum"
    " --datatype float --root 0 --iters 100 --warmup_iters 50 --agg_iters 1 --average 1 --parallel_init 0"
    " --check 1 --blocking 0 --cudagraph 0 --stepfactor 2"
)


def run(tmp_path: Path, scenario_text: str, *system: str) -> tuple[int, Path]:
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(scenario_text)
    out = tmp_path / "results"
    args = ["run", *system, "--tests-dir", str(CONF / "test"), "--test-scenario", str(scenario)]
    result = CliRunner().invoke(cli, [*args, "--output-dir", str(out)], catch_exceptions=False)
    [run_dir] = out.iterdir()
    return result.exit_code, run_dir


def jobs(run_dir: Path) -> dict[str, dict]:
    return {p.parent.parent.name: json.loads(p.read_text()) for p in run_dir.glob("*/0/job.json")}


def check_three_workloads(run_dir: Path) -> None:
    records = jobs(run_dir)
    assert {k: (v["status"], v["reason"]) for k, v in records.items() if k not in ("wrong", "cut")} == {
        "nccl": ("ok", ""), "ucc": ("ok", ""), "osu": ("ok", "")
    }  # fmt: skip
    assert records["nccl"]["metrics"]["busbw"] == 136.5532
    assert records["ucc"]["metrics"]["time-avg"] == 11.5
    assert records["osu"]["metrics"]["avg_lat"] == 2.94
    stdout = (run_dir / "nccl" / "0" / "stdout.txt").read_text()
    assert stdout.splitlines()[0] == f"# cloudai stand-in: {NCCL_ARGV}"  # CloudAI's command arrived as is
    with (run_dir / "nccl" / "0" / "nccl.csv").open() as f:
        assert len(list(csv.DictReader(f))) == 26
    osu_line = (run_dir / "osu" / "0" / "stdout.txt").read_text().splitlines()[0]
    assert osu_line == "# cloudai stand-in: osu_allreduce --message-size 1024 --iterations 10 --full"


@pytest.mark.usefixtures("standins")
def test_standalone_runs_each_workload_and_fails_wrong_or_cut_tables(tmp_path: Path) -> None:
    code, run_dir = run(tmp_path, SCENARIO + WRONG)
    assert code == 1  # one job failed
    check_three_workloads(run_dir)
    wrong = jobs(run_dir)["wrong"]
    assert (wrong["status"], wrong["metrics"]) == ("failed", {})
    assert wrong["reason"] == "nccl-tests found 3 wrong values (#wrong) at size 4096 B (in-place)"
    assert wrong["argv"][0] == "all_reduce_perf_mpi"  # run directly: no srun, no container
    cut = jobs(run_dir)["cut"]
    assert cut["status"] == "failed" and "stops after 12 rows (last size 262144 B)" in cut["reason"]


@pytest.mark.usefixtures("standins")
def test_standalone_dse_over_cloudais_nccl_all_gather(tmp_path: Path) -> None:
    scenario = 'name = "dse"\n[[Tests]]\nid = "Tests.1"\ntest_name = "dse_nccl_all_gather"\n'
    code, run_dir = run(tmp_path, scenario)
    assert code == 0
    with (run_dir / "Tests.1" / "0" / "trajectory.csv").open() as f:
        rows = list(csv.DictReader(f))
    seven, zero = {"extra_env_vars.NCCL_TESTS_SPLIT_MASK": "0x7"}, {"extra_env_vars.NCCL_TESTS_SPLIT_MASK": "0x0"}
    assert [(json.loads(r["action"]), r["status"]) for r in rows[:2]] == [(seven, "ok"), (zero, "ok")]
    # nccl-tests measures real hardware (noisy): both points confirmed by default, 3 re-runs each
    assert len(rows) == 8 and {r["status"] for r in rows} == {"ok"}
    confirm = (run_dir / "Tests.1" / "0" / "confirm.csv").read_text().splitlines()[1:]
    assert sorted(int(line.split(",")[0]) for line in confirm) == list(range(3, 9))
    assert "# Recommended (best.toml is it): candidate " in (run_dir / "Tests.1" / "0" / "best.toml").read_text()
    assert json.loads(rows[0]["observation"]) == [pytest.approx(1839.886, abs=1e-3)]  # mean in-place time, us


@pytest.mark.slurm
@pytest.mark.usefixtures("standins")
def test_local_slurm_runs_each_workload(tmp_path: Path) -> None:
    code, run_dir = run(tmp_path, SCENARIO, "--system-config", str(HERE / "slurm_system.toml"))
    assert code == 0
    check_three_workloads(run_dir)
    script = (run_dir / "nccl" / "0" / "sbatch.sh").read_text()
    assert script.splitlines()[-1] == f"srun --export=ALL --mpi=none {NCCL_ARGV}"
    assert "# container_runtime = none: runs on the host, not in nvcr.io/nvidia/pytorch:24.02-py3" in script
