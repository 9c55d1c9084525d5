"""Issue 29 item 3: a job's output is read with a bound. nccl-tests with ``NCCL_DEBUG=INFO`` prints gigabytes before
its table; a job may make its ``stdout.txt`` a link to ``/dev/zero``. The parser reads the ends of a regular file
(the tool's header and its table), so a flood costs no memory, and a trial whose output cannot be read fails with
that reason while the sweep goes on."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.workloads.conftest import BIN, CONF

from cloudai.cli import cli

pytestmark = pytest.mark.usefixtures("standins")

DSE = """name = "flood"
[[Tests]]
id = "nccl"
test_name = "nccl_base_test"
agent = "grid_search"
agent_config = { confirm = 0 }
  [Tests.extra_env_vars]
  CLOUDAI_STANDIN_STDOUT = ["devzero", "file"]
  CLOUDAI_STANDIN_FLOOD_MB = "16"
"""


def test_a_trial_whose_stdout_is_dev_zero_fails_with_why_and_the_sweep_goes_on(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text(DSE)
    args = ["run", "--tests-dir", str(CONF / "test"), "--test-scenario", str(tmp_path / "s.toml")]
    result = CliRunner().invoke(cli, [*args, "--output-dir", str(tmp_path / "out")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (it_dir,) = tmp_path.glob("out/*/nccl/0")
    with (it_dir / "trajectory.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["failed", "ok"]
    assert rows[0]["reason"] == "stdout.txt refused: not a regular file (a character device)"
    assert json.loads(rows[1]["observation"])[0] > 0  # 16 MiB of INFO lines before the table: still parsed


def test_a_flood_before_the_table_is_parsed_in_bounded_memory(tmp_path: Path) -> None:
    """400 MiB of output parsed under a 300 MiB address-space limit (reading it whole needed 2.8x its size)."""
    job = tmp_path / "job"
    job.mkdir()
    env = {**os.environ, "CLOUDAI_STANDIN_FLOOD_MB": "400"}
    with (job / "stdout.txt").open("wb") as out:
        subprocess.run([BIN / "all_reduce_perf_mpi"], stdout=out, env=env, check=True)
    assert (job / "stdout.txt").stat().st_size > 400 * 2**20
    read = (
        "import json, sys; from pathlib import Path; from cloudai.workloads.nccl_test import NcclTest;"
        "print(json.dumps(NcclTest().read_metrics(Path(sys.argv[1]))))"
    )
    limited = ["prlimit", f"--as={300 * 2**20}", sys.executable, "-c", read, str(job)]
    flooded = subprocess.run(limited, capture_output=True, text=True, timeout=60)
    assert flooded.returncode == 0, flooded.stderr
    (job / "stdout.txt").write_text(_table())
    plain = subprocess.run([sys.executable, "-c", read, str(job)], capture_output=True, text=True, timeout=60)
    assert json.loads(flooded.stdout) == json.loads(plain.stdout)  # the same table, the same metrics


def _table() -> str:
    return (BIN.parent / "data" / "nccl_all_reduce.txt").read_text()
