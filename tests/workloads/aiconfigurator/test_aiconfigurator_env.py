"""CloudAI's Aiconfigurator files run unchanged on the standalone system, on the real package.

One install per machine: ``cloudai install`` with CloudAI's own standalone system file (``install_path =
"./install"``) run where ``./install`` is ``<repo>/.cache/install`` (ignored by git, kept between runs; ``.ci/run``
fills it first). One warm worker per test session (the runs find it listening and use it). Without the
environment and without PyPI, every test here is skipped with one reason.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from cloudai.cli import cli
from cloudai.workloads.aiconfigurator import Aiconfigurator, worker
from cloudai.workloads.aiconfigurator.catalog import ENV

HERE = Path(__file__).resolve().parent
CONF = HERE / "cloudai_conf"
SYSTEM = CONF / "system" / "standalone_system.toml"
CACHE = HERE.parents[2] / ".cache" / "install"


@contextlib.contextmanager
def inside(path: Path) -> Iterator[None]:
    """CloudAI's system file says ``install_path = "./install"``: run from a dir whose ``install`` is the cache
    (made if missing: a fresh clone has no ``.cache``, and ``cloudai install`` cannot install through a link to
    nothing)."""
    path.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    if not (path / "install").exists():
        (path / "install").symlink_to(CACHE, target_is_directory=True)
    before = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The environment, installed by ``cloudai install`` (a no-op when the cache has it), and one warm worker."""
    with inside(tmp_path_factory.mktemp("aiconf-install")):
        code, output = invoke("install", "--system-config", SYSTEM, "--tests-dir", CONF / "test",
                              "--test-scenario", CONF / "test_scenario" / "dse_aiconfigurator_disagg.toml")  # fmt: skip
    if code != 0 or not ENV.installed(CACHE):
        pytest.skip(f"`cloudai install` of aiconfigurator {ENV.packages[0]} into {CACHE} failed (exit {code}), "
                    f"its output ends: {output[-300:]}")  # fmt: skip
    proc = worker.start(CACHE)
    yield CACHE
    if proc is not None:
        worker.stop(proc)


def test_a_fresh_clone_gets_an_install_dir_to_install_into(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(globals(), "CACHE", tmp_path / "clone" / ".cache" / "install")
    with inside(tmp_path / "run"):
        assert Path("install").resolve().is_dir()  # was a link to a .cache/install the clone lacks


def trajectory(results: Path) -> list[dict[str, str]]:
    (path,) = results.glob("*/*/0/trajectory.csv")
    with path.open() as f:
        return list(csv.DictReader(f))


def run_test(tmp_path: Path, name: str, text: str) -> str:
    """``cloudai run`` of one test (``text``, named ``name``) as entry ``t`` of a scenario, in ``tmp_path``; its
    output (exit code 0 asserted)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / f"{name}.toml").write_text(text)
    (tmp_path / "s.toml").write_text(f'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "{name}"\n')
    with inside(tmp_path):
        code, output = invoke("run", "--system-config", SYSTEM, "--tests-dir", tmp_path / "tests",
                              "--test-scenario", tmp_path / "s.toml")  # fmt: skip
    assert code == 0, output
    return output


def test_cloudais_dse_scenario_runs_unchanged_and_equals_the_package(installed: Path, tmp_path: Path) -> None:
    with inside(tmp_path):
        code, output = invoke("run", "--system-config", SYSTEM, "--tests-dir", CONF / "test",
                              "--test-scenario", CONF / "test_scenario" / "dse_aiconfigurator_disagg.toml")  # fmt: skip
    assert code == 0, output
    rows = trajectory(tmp_path / "results")
    assert [r["status"] for r in rows] == ["ok"] * 4
    step = next(r for r in rows if json.loads(r["action"]) == {**json.loads(rows[0]["action"]), "disagg.d_workers": 2,
                                                                "disagg.p_workers": 2})  # fmt: skip
    job_dir = next((tmp_path / "results").glob(f"*/*/0/{step['step']}"))
    stdout = (job_dir / "stdout.txt").read_text()
    assert stdout.startswith("aiconfigurator 0.12.0, database h200_sxm/trtllm/1.3.0rc20\n")
    assert "by the warm worker;" in stdout  # the session's worker answered, no trial paid the 3-s cold start
    ours = json.loads((job_dir / "metrics.json").read_text())
    package = what_the_package_predicts(installed)
    assert {k: ours[k] for k in ("ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "tokens_per_s_per_user")} == {
        "ttft_ms": package["ttft"], "tpot_ms": package["tpot"],
        "tokens_per_s_per_gpu": package["tokens/s/gpu"], "tokens_per_s_per_user": package["tokens/s/user"],
    }  # fmt: skip
    observed = ("ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "tokens_per_s_per_user")  # CloudAI's agent_metrics
    assert json.loads(step["observation"]) == pytest.approx([ours[name] for name in observed])


def what_the_package_predicts(install_path: Path) -> dict[str, float]:
    """``cli_estimate``'s own result row for CloudAI's point (p_workers 2, d_workers 2), its arguments written by
    hand from the TOML, not by the workload."""
    kwargs = {
        "model_path": "meta-llama/Meta-Llama-3.1-70B", "system_name": "h200_sxm", "backend_name": "trtllm",
        "backend_version": "1.3.0rc20", "isl": 4000, "osl": 500, "mode": "disagg",
        "gemm_quant_mode": "fp8_block", "moe_quant_mode": "fp8", "kvcache_quant_mode": "fp8",
        "fmha_quant_mode": "fp8", "comm_quant_mode": "half",
        "prefill_tp_size": 1, "prefill_pp_size": 1, "prefill_attention_dp_size": 1, "prefill_batch_size": 1,
        "prefill_num_workers": 2, "decode_tp_size": 1, "decode_pp_size": 1, "decode_attention_dp_size": 1,
        "decode_batch_size": 8, "decode_num_workers": 2,
    }  # fmt: skip
    argv = [str(ENV.python(install_path)), "-c", BARE_ESTIMATE, json.dumps(kwargs)]  # not our runner: its worker
    done = subprocess.run(argv, check=True, capture_output=True, text=True)  # reuses database views
    return json.loads(done.stdout.splitlines()[-1])


BARE_ESTIMATE = """
import json, sys
from aiconfigurator.cli.api import cli_estimate
raw = cli_estimate(**json.loads(sys.argv[1])).raw
print(json.dumps({k: v.item() if hasattr(v, "item") else v for k, v in raw.items()}))
"""


def test_cloudais_pinned_legacy_database_is_exit_2_naming_the_shipped_ones(installed: Path, tmp_path: Path) -> None:
    with inside(tmp_path):
        code, output = invoke("run", "--system-config", SYSTEM, "--tests-dir", CONF / "test",
                              "--test-scenario", CONF / "test_scenario" / "aiconfigurator_disagg.toml")  # fmt: skip
    assert code == 2, output
    assert "cmd_args.version: '1.0.0rc3': aiconfigurator 0.12.0 ships no trtllm database of that version" in output
    assert "available: 1.3.0rc20" in output
    assert not (tmp_path / "results").exists()


OOM_GRID = """
name = "oom_grid"
test_template_name = "Aiconfigurator"
agent = "grid_search"
agent_steps = 4

[cmd_args]
model_name = "meta-llama/Meta-Llama-3.1-70B"
system = "h100_sxm"
isl = 4000
osl = 500

  [cmd_args.agg]
  tp = [1, 2, 4, 8]
  batch_size = 8
"""
OOM_REASON = "OOM: the model 'meta-llama/Meta-Llama-3.1-70B' does not fit in GPU memory on system 'h100_sxm'"


def test_a_configuration_out_of_gpu_memory_is_infeasible_with_the_models_reason(
    installed: Path, tmp_path: Path
) -> None:
    """70B in BF16 at tp 1 (140 GB of weights) on an 80 GB H100: the model's own memory estimate rules it out
    before a step (no job dir, no share of agent_steps); the three that fit are measured."""
    run_test(tmp_path, "oom_grid", OOM_GRID)
    rows = trajectory(tmp_path / "results")
    assert [(json.loads(r["action"])["agg.tp"], r["status"]) for r in rows] == [
        (1, "infeasible"), (2, "ok"), (4, "ok"), (8, "ok"),
    ]  # fmt: skip
    assert rows[0]["reason"].startswith(OOM_REASON + " with the given parallelism (tp=1, pp=1, dp=1)")
    run_dir = next((tmp_path / "results").glob("*/t/0"))
    assert not (run_dir / "1").exists()
    assert "by the warm worker;" in (run_dir / "2" / "stdout.txt").read_text()


SLA_GRID = """
name = "sla_grid"
test_template_name = "Aiconfigurator"
agent = "grid_search"
agent_steps = 5
agent_metrics = ["tokens_per_s_per_gpu"]
agent_constraints = { tpot_ms = "<= 20" }

[cmd_args]
model_name = "meta-llama/Meta-Llama-3.1-70B"
system = "h100_sxm"
isl = 4000
osl = 500

  [cmd_args.agg]
  tp = 8
  batch_size = [1, 8, 32, 128, 256]
"""


def test_a_batch_past_the_sla_rules_out_the_larger_ones_before_a_step(installed: Path, tmp_path: Path) -> None:
    """TPOT grows with the batch (``Aiconfigurator.monotone``): once batch 32 measured TPOT past the SLA (23.9 ms
    against 20), 128 and 256 would too, and the grid never runs them (on the old code: two more measured steps
    past the SLA)."""
    run_test(tmp_path, "sla_grid", SLA_GRID)
    rows = trajectory(tmp_path / "results")
    assert [(json.loads(r["action"])["agg.batch_size"], r["status"]) for r in rows] == [
        (1, "ok"), (8, "ok"), (32, "constraint"),
    ]  # fmt: skip


def test_the_worker_says_what_does_not_fit_only_within_a_run(installed: Path) -> None:
    """``oom`` asks the worker a run holds open; with none (a Slurm run) it says nothing and the trial fails with
    the model's reason, as before."""
    tp1 = {"model_name": "meta-llama/Meta-Llama-3.1-70B", "system": "h100_sxm", "isl": 4000, "osl": 500,
           "agg": {"batch_size": 8, "tp": 1}}  # fmt: skip
    tp4 = {**tp1, "agg": {"batch_size": 8, "tp": 4}}
    workload = Aiconfigurator()
    assert workload.constraint(tp1) is None
    own = worker.start(installed)  # the session's worker may have been stopped by another module's (xdist)
    try:
        with worker.listening(worker.name(installed)):
            reason = workload.constraint(tp1)
            assert reason is not None and reason.startswith(OOM_REASON)
            assert workload.constraint(tp4) is None
            assert workload.constraint(tp1) == reason  # remembered: no second ask
    finally:
        if own is not None:
            worker.stop(own)
    assert workload.constraint(tp1) is None


BOTH_MODES = """
name = "both"
test_template_name = "Aiconfigurator"
agent = "grid_search"
agent_metrics = ["tokens_per_s_per_gpu", "total_gpus"]
[cmd_args]
model_name = "meta-llama/Meta-Llama-3.1-70B"
system = "h200_sxm"
isl = 4000
osl = 500
budget = 28.0
mode = ["agg", "disagg"]
  [cmd_args.gpu_price]
  h200_sxm = 3.5
  [cmd_args.agg]
  tp = [4, 8]
  batch_size = 8
  [cmd_args.disagg]
  p_tp = 1
  p_bs = 1
  p_workers = [1, 2]
  d_tp = [2, 4]
  d_bs = 64
  d_workers = 1
"""


def test_agg_and_disagg_in_one_run_each_configuration_once_best_names_its_mode(installed: Path, tmp_path: Path) -> None:
    """The grid walks the 2 agg and 4 disagg configurations once each (not the 2 x 2 x 4 product of every knob),
    each trial runs its mode's table alone on the 8 GPUs the budget buys, and best.toml is the winner's mode."""
    output = run_test(tmp_path, "both", BOTH_MODES)
    rows = trajectory(tmp_path / "results")
    actions = [json.loads(r["action"]) for r in rows]
    assert [r["status"] for r in rows] == ["ok"] * 6
    assert [a["mode"] for a in actions] == ["agg"] * 2 + ["disagg"] * 4
    assert all((a["disagg.p_workers"], a["disagg.d_tp"]) == (1, 2) for a in actions[:2])  # not agg's: first values
    assert all(a["agg.tp"] == 4 for a in actions[2:])
    run_dir = next((tmp_path / "results").glob("*/t/0"))
    for row, action in zip(rows, actions, strict=True):
        report = json.loads((run_dir / row["step"] / "report.json").read_text())
        assert report["request"]["mode"] == action["mode"]
        assert json.loads(row["observation"])[1] == 8  # total_gpus: what 28 buys at 3.5
    best = (run_dir / "best.toml").read_text()
    won = max(zip(rows, actions, strict=True), key=lambda ra: float(ra[0]["reward"]))[1]["mode"]
    lost = "agg" if won == "disagg" else "disagg"
    assert f'mode = "{won}"' in best and f"[cmd_args.{won}]" in best and f"[cmd_args.{lost}]" not in best
    shown = next(line for line in output.splitlines() if line.startswith("Best of t:"))  # the terminal's best
    assert f'"mode": "{won}"' in shown and f'"{won}.' in shown and f'"{lost}.' not in shown


def test_an_moe_worker_whose_experts_miss_its_gpus_is_refused_before_a_step(installed: Path) -> None:
    """moe_tp = moe_ep = 1 at tp 2: a dense model runs it (CloudAI's files write it), an MoE model does not; the
    worker's answer tells them apart, so the MoE one is no step and the dense one runs."""
    moe = {"model_name": "Qwen/Qwen3-30B-A3B", "system": "h200_sxm", "isl": 4000, "osl": 500,
           "agg": {"batch_size": 8, "tp": 2, "moe_tp": 1, "moe_ep": 1}}  # fmt: skip
    dense = {**moe, "model_name": "meta-llama/Meta-Llama-3.1-8B"}
    workload = Aiconfigurator()
    own = worker.start(installed)
    try:
        with worker.listening(worker.name(installed)):
            reason = workload.constraint(moe)
            assert reason is not None and reason.startswith("Parallelism width mismatch: tp_size(2)")
            assert workload.constraint(dense) is None
            assert workload.constraint({**moe, "agg": {**moe["agg"], "moe_ep": 2}}) is None
    finally:
        if own is not None:
            worker.stop(own)


COMPOSED = """
name = "composed"
test_template_name = "Aiconfigurator"
agent = "optuna"
agent_steps = 30
agent_metrics = ["tokens_per_s_per_gpu"]
agent_reward_function = "identity"
agent_constraints = { ttft_ms = "<= 500", tpot_ms = "<= 15" }
agent_config = { seed = 7 }
[cmd_args]
model_name = "meta-llama/Meta-Llama-3.1-8B"
system = "h200_sxm"
backend = "trtllm"
isl = 1024
osl = 256
total_gpus = 8
[cmd_args.disagg]
p_tp = [1, 2, 4, 8]
p_bs = [1, 2, 4, 8]
p_workers = [1, 2, 3, 4, 5, 6, 7, 8]
d_tp = [1, 2, 4, 8]
d_bs = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512]
d_workers = [1, 2, 3, 4, 5, 6, 7, 8]
"""


def test_disagg_pairs_composed_from_measured_sides_score_as_the_model_says_and_are_measured(
    installed: Path, tmp_path: Path
) -> None:
    """``Aiconfigurator.proposals`` ranks pairs of measured sides by aiconfigurator's own rate matching: on every
    measured step that formula gives the package's tokens/s/GPU, and the search measured pairs it composed (a
    point no earlier step had, made of two earlier steps' sides)."""
    from cloudai.workloads.aiconfigurator.compose import DECODE_RATE, PREFILL_RATE, compose

    run_test(tmp_path, "composed", COMPOSED)
    steps = []
    for row in trajectory(tmp_path / "results"):
        if row["status"] in ("ok", "constraint"):
            (job_dir,) = (tmp_path / "results").glob(f"*/*/0/{row['step']}")
            metrics = json.loads((job_dir / "metrics.json").read_text())
            steps.append(({"total_gpus": 8, **json.loads(row["action"])}, metrics, float(row["reward"])))
    for values, m, _ in steps:
        x, y = values["disagg.p_workers"], values["disagg.d_workers"]
        seq_s = (8 // m["gpus_per_replica"]) * min(0.9 * m[PREFILL_RATE] * x, 0.92 * m[DECODE_RATE] * y)
        assert seq_s * 256 / 8 == pytest.approx(m["tokens_per_s_per_gpu"], rel=1e-4)  # rates: 3 decimals

    def meets(metric: str, value: float) -> bool:
        return value <= {"ttft_ms": 500, "tpot_ms": 15}.get(metric, float("inf"))

    choices = {"disagg.p_workers": list(range(1, 9)), "disagg.d_workers": list(range(1, 9))}
    points = [point for point, _, _ in steps]
    composed = [i for i, point in enumerate(points)
                if point in compose(steps[:i], meets, choices) and point not in points[:i]]  # fmt: skip
    assert composed, "no measured step was a pair composed from earlier steps' sides"
    assert compose(steps, meets, choices)[0] in points  # the best pair of what it measured: measured
