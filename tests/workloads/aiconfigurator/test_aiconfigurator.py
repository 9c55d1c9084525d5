"""The Aiconfigurator workload without its environment: CloudAI's files load, args become the package's request,
failures and rewards read right, and a run before ``cloudai install`` is a clear exit 2 (nothing written).

The tests that run the real package are in ``test_aiconfigurator_env.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import ValidationError
from tests.conftest import REPO

from cloudai.cli import cli
from cloudai.config.test import load_test
from cloudai.envs.rewards import REWARDS, reward_of
from cloudai.errors import WorkloadError
from cloudai.installables import MARKER
from cloudai.space import flatten, parse_space
from cloudai.workloads.aiconfigurator import Aiconfigurator, AiconfiguratorArgs, worker
from cloudai.workloads.aiconfigurator.args import request
from cloudai.workloads.aiconfigurator.catalog import CATALOG_FILE, ENV, problem
from cloudai.workloads.validity import ValidPoints

HERE = Path(__file__).resolve().parent
CONF = HERE / "cloudai_conf"
DATA = HERE.parent / "data" / "aiconfigurator"
AGG = {"model_name": "LLAMA3.1_70B", "system": "h200_sxm", "isl": 4000, "osl": 500, "agg": {"batch_size": 8, "tp": 4}}
CATALOG = {
    "aiconfigurator": "0.12.0",
    "databases": {"h100_sxm": {"trtllm": ["1.3.0rc20"]}, "h200_sxm": {"trtllm": ["1.3.0rc20", "1.3.0rc23"]}},
    "defaults": {"h100_sxm": {"trtllm": "1.3.0rc20"}, "h200_sxm": {"trtllm": "1.3.0rc20"}},
    "models": ["meta-llama/Meta-Llama-3.1-70B", "meta-llama/Meta-Llama-3.1-8B"],
    "quant_modes": {"gemm_quant_mode": ["bfloat16", "fp8", "fp8_block"], "kvcache_quant_mode": ["bfloat16", "fp8"]},
}


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_cloudais_files_verify_unchanged() -> None:
    code, output = invoke("verify-configs", "--tests-dir", CONF / "test", CONF / "test", CONF / "test_scenario")
    assert code == 0, output
    assert "4 file(s) checked, 0 problem(s)" in output
    assert "note: Aiconfigurator: what the installed tool ships (e.g. models, versions) is checked by" in output


def test_cloudais_dse_file_becomes_the_packages_request() -> None:
    cmd_args: dict[str, Any] = load_test(CONF / "test" / "dse_aiconfigurator_disagg.toml").cmd_args
    point = {k: v[0] if isinstance(v, list) else v for k, v in cmd_args["disagg"].items()}
    got = request(AiconfiguratorArgs.model_validate({**cmd_args, "disagg": point}))
    assert got["model_path"] == "meta-llama/Meta-Llama-3.1-70B"  # CloudAI's legacy LLAMA3.1_70B
    assert (got["mode"], got["backend_name"], got["backend_version"]) == ("disagg", "trtllm", None)
    assert (got["gemm_quant_mode"], got["kvcache_quant_mode"], got["comm_quant_mode"]) == ("fp8_block", "fp8", "half")
    assert (got["prefill_num_workers"], got["decode_batch_size"], got["decode_tp_size"]) == (1, 8, 1)


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"disagg": {"p_bs": 1, "p_workers": 1, "d_bs": 8, "d_workers": 1}}, "exactly one of"),
        ({"agg": None}, "exactly one of"),
        ({"agg": {"batch_size": 8, "tp": 0}}, "greater than or equal to 1"),
    ],
)
def test_bad_args_are_refused(change: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says):
        AiconfiguratorArgs.model_validate({**AGG, **change})


def test_a_correction_scale_is_named_not_supported() -> None:
    disagg = {"p_bs": 1, "p_workers": 1, "d_bs": 8, "d_workers": 1, "prefill_correction_scale": 1.2}
    args = {k: v for k, v in AGG.items() if k != "agg"} | {"disagg": disagg}
    with pytest.raises(ValidationError, match="not supported by cloudai"):
        AiconfiguratorArgs.model_validate(args)


def test_the_models_own_reason_fails_an_infeasible_trial() -> None:
    reason = Aiconfigurator().failure_reason(DATA / "oom")
    assert reason is not None and reason.startswith("OOM: the model 'meta-llama/Meta-Llama-3.1-70B' does not fit")
    with pytest.raises(WorkloadError, match=r"no metrics\.json"):
        Aiconfigurator().read_metrics(DATA / "oom")
    with pytest.raises(WorkloadError):
        Aiconfigurator().read_metrics(DATA / "truncated")


def test_metrics_carry_cloudais_names_and_default() -> None:
    metrics = Aiconfigurator().read_metrics(DATA / "agg")
    assert metrics["default"] == metrics["tokens_per_s_per_gpu"] == pytest.approx(118.649, abs=1e-3)
    assert (metrics["ttft_ms"], metrics["tpot_ms"], metrics["total_gpus"]) == pytest.approx((584.784, 15.355, 4), 1e-4)
    assert Aiconfigurator().default_means(AGG) == "tokens_per_s_per_gpu"


def test_a_moe_width_other_than_the_attention_width_is_a_constraint() -> None:
    """aiconfigurator refuses moe_tp * moe_ep != tp * dp ("Parallelism width mismatch"): never a step. 1 x 1 is
    CloudAI's way of writing a dense model's worker, whatever its tp."""
    workload = Aiconfigurator()
    agg = {"batch_size": 8, "tp": 4, "dp": 1}
    assert workload.constraint({**AGG, "agg": {**agg, "moe_tp": 2, "moe_ep": 2}}) is None
    assert workload.constraint({**AGG, "agg": {**agg, "moe_tp": 1, "moe_ep": 1}}) is None
    assert workload.constraint({**AGG, "agg": {**agg, "moe_tp": 1, "moe_ep": 2}}) == (
        "moe_tp x moe_ep = 2 is not tp x dp = 4 (aiconfigurator's rule: the experts span the attention's GPUs)"
    )
    disagg = {"p_bs": 1, "p_workers": 1, "p_tp": 2, "p_moe_tp": 2, "p_moe_ep": 1, "d_bs": 8, "d_workers": 1,
              "d_tp": 4, "d_moe_ep": 2, "d_moe_tp": 1}  # fmt: skip
    assert workload.constraint({**{k: v for k, v in AGG.items() if k != "agg"}, "disagg": disagg}) == (
        "d_moe_tp x d_moe_ep = 2 is not d_tp x d_dp = 4 (aiconfigurator's rule: the experts span the attention's GPUs)"
    )


def test_once_the_model_refused_a_width_mismatch_one_by_one_is_refused_for_that_model() -> None:
    """moe_tp = moe_ep = 1 is a dense model's worker at any tp; once the model refused it as a width mismatch (an
    MoE model), the rule refuses it for that model wherever tp x dp > 1, vectorised and point by point alike,
    without asking the model again; another model keeps the dense reading, and the run's end forgets it."""
    cmd_args = {**{k: v for k, v in AGG.items() if k != "agg"},
                "agg": {"batch_size": [8, 16], "tp": [1, 2, 4], "moe_tp": [1, 2, 4], "moe_ep": [1, 2]}}  # fmt: skip
    space = parse_space(flatten(cmd_args))
    before = ValidPoints(space, Aiconfigurator(), None).mask(0, space.grid_size)
    points = [space.grid_point(i) for i in range(space.grid_size)]
    one_by_one = [p["agg.moe_tp"] == p["agg.moe_ep"] == 1 and p["agg.tp"] > 1 for p in points]
    assert all(before[one_by_one])
    with worker.listening(b"\0cloudai-test-no-worker"):
        worker.remember_moe("Some/other-model")
        assert (ValidPoints(space, Aiconfigurator(), None).mask(0, space.grid_size) == before).all()
        worker.remember_moe(AGG["model_name"])
        rule = ValidPoints(space, Aiconfigurator(), None)
        after = rule.mask(0, space.grid_size)
        assert after.tolist() == [ok and not d for ok, d in zip(before, one_by_one, strict=True)]
        assert [rule.violation(p) is None for p in points] == after.tolist()
    assert worker.moe_models() == set()


def test_a_larger_batch_of_a_configuration_out_of_memory_is_refused_by_the_mask() -> None:
    """What the run's worker said does not fit rules out, vectorised, the same configuration with no smaller
    batches (whatever its worker counts): memory grows with the batch. Other configurations stay to be asked,
    and the run's end forgets it."""
    cmd_args = {**{k: v for k, v in AGG.items() if k != "agg"}, "total_gpus": 8,
                "disagg": {"p_tp": [1, 2], "p_bs": [1, 2], "p_workers": [1, 2], "d_tp": [1, 2], "d_bs": [8, 16, 32],
                           "d_workers": [1, 2]}}  # fmt: skip
    space = parse_space(flatten(cmd_args))
    before = ValidPoints(space, Aiconfigurator(), None).mask(0, space.grid_size)
    oom = flatten({**cmd_args, "disagg": {**cmd_args["disagg"], "p_tp": 1, "p_bs": 2, "p_workers": 1, "d_tp": 1,
                                          "d_bs": 16, "d_workers": 2}})  # fmt: skip
    with worker.listening(b"\0cloudai-test-no-worker"):
        worker.remember_oom(oom)
        after = ValidPoints(space, Aiconfigurator(), None).mask(0, space.grid_size)
    points = [space.grid_point(i) for i in range(space.grid_size)]
    dominated = [p["disagg.p_tp"] == p["disagg.d_tp"] == 1 and p["disagg.p_bs"] >= 2 and p["disagg.d_bs"] >= 16
                 for p in points]  # fmt: skip
    assert any(dominated) and not any(after[dominated])
    assert after.tolist() == [ok and not d for ok, d in zip(before, dominated, strict=True)]
    assert worker.out_of_memory() == [] and (ValidPoints(space, Aiconfigurator(), None).mask(0, space.grid_size)
                                             == before).all()  # fmt: skip


def test_a_latency_past_the_sla_rules_out_larger_batches_of_its_side() -> None:
    """A disagg point whose TTFT broke the SLA rules out, vectorised and point by point alike, every point with the
    same prefill worker and no smaller ``p_bs``, whatever its decode side and worker counts (TTFT is the prefill
    worker's and grows with its batch); a TPOT bound the same on the decode side; the rest stays."""
    cmd_args = {**{k: v for k, v in AGG.items() if k != "agg"}, "total_gpus": 8,
                "disagg": {"p_tp": [1, 2], "p_bs": [1, 2, 4], "p_workers": [1, 2], "d_tp": [1, 2], "d_bs": [8, 16],
                           "d_workers": [1, 2]}}  # fmt: skip
    space = parse_space(flatten(cmd_args))
    rule = ValidPoints(space, Aiconfigurator(), None)
    before = rule.mask(0, space.grid_size)
    broke = rule.point_values({"disagg.p_tp": 1, "disagg.p_bs": 2, "disagg.p_workers": 1, "disagg.d_tp": 1,
                               "disagg.d_bs": 16, "disagg.d_workers": 2})  # fmt: skip
    how = Aiconfigurator().monotone("ttft_ms", broke)
    assert how is not None and Aiconfigurator().monotone("tokens_per_s_per_gpu", broke) is None
    rule.bound(broke, how, "ttft_ms past the SLA")
    points = [space.grid_point(i) for i in range(space.grid_size)]
    past = [p["disagg.p_tp"] == 1 and p["disagg.p_bs"] >= 2 for p in points]
    after = rule.mask(0, space.grid_size)
    assert after.tolist() == [ok and not d for ok, d in zip(before, past, strict=True)]
    assert [rule.violation(p) == "ttft_ms past the SLA" for p in points] == [ok and d for ok, d in
                                                                            zip(before, past, strict=True)]  # fmt: skip
    tpot = Aiconfigurator().monotone("tpot_ms", broke)
    assert tpot is not None and tpot.grows == {"disagg.d_bs"} and "disagg.p_bs" in tpot.free
    agg = Aiconfigurator().monotone("tpot_ms", flatten(AGG))
    assert agg is not None and agg.grows == {"agg.batch_size"} and not agg.free


def test_total_gpus_is_a_constraint() -> None:
    workload = Aiconfigurator()
    assert workload.constraint({**AGG, "total_gpus": 8}) is None
    assert workload.constraint({**AGG, "agg": {"batch_size": 8, "tp": 4, "pp": 4}, "total_gpus": 8}) == (
        "uses 16 GPUs, more than total_gpus = 8"
    )


@pytest.mark.parametrize(
    "cmd_args",
    [
        {**AGG, "total_gpus": 8, "agg": {"batch_size": 8, "tp": [1, 2, 4, 8], "pp": [1, 2, 4], "dp": [1, 2]}},
        {**{k: v for k, v in AGG.items() if k != "agg"}, "total_gpus": 12,
         "disagg": {"p_tp": [1, 2, 4], "p_bs": 1, "p_workers": [1, 2, 3], "d_tp": [1, 4, 8], "d_bs": [8, 64],
                    "d_workers": [1, 2]}},
        {**AGG, "total_gpus": 8, "agg": {"batch_size": 8, "tp": [1, 2, 4], "dp": [1, 2, 4], "moe_tp": [1, 2, 4],
                                         "moe_ep": [1, 2, 8]}},
        {**{k: v for k, v in AGG.items() if k != "agg"}, "total_gpus": 8,
         "disagg": {"p_tp": [1, 2], "p_dp": [1, 2], "p_moe_tp": [1, 2], "p_moe_ep": [1, 4], "p_bs": 1, "p_workers": 1,
                    "d_tp": [1, 4], "d_moe_tp": 1, "d_moe_ep": [1, 2, 4], "d_bs": 8, "d_workers": [1, 2]}},
    ],
)  # fmt: skip
def test_the_gpu_count_rule_vectorised_is_the_scalar_one(cmd_args: dict[str, Any]) -> None:
    """Counted and walked on the mask, the valid points are those ``constraint`` lets through (no worker: the
    memory part says nothing)."""
    space = parse_space(flatten(cmd_args))
    rule = ValidPoints(space, Aiconfigurator(), None)
    assert rule.vectorised
    scalar = [rule.violation(space.grid_point(i)) is None for i in range(space.grid_size)]
    assert rule.mask(0, space.grid_size).tolist() == scalar
    assert rule.count() == sum(scalar) < space.grid_size


def test_a_worker_gone_mid_run_leaves_the_point_to_its_trial() -> None:
    """No worker on the name the run holds (it ended, it was killed): the memory rule says nothing, so the point
    is run and fails with the model's reason, as without a worker; nothing is remembered for a later ask."""
    with worker.listening(b"\0cloudai-aiconfigurator-test-nobody-listens"):
        assert Aiconfigurator().constraint({**AGG, "agg": {"batch_size": 8, "tp": 1}}) is None
        assert not worker._said  # pyright: ignore[reportPrivateUsage]


def test_ai_dynamo_log_scale_is_cloudais() -> None:
    reward = REWARDS.get("ai_dynamo_log_scale")
    ttft, tpot, tps = 584.8, 15.36, 118.65
    expected = math.log(tps + 1) - 0.7 * math.log(ttft + 1) - 0.1 * math.log(tpot + 1)
    assert reward_of(reward, [ttft, tpot, tps, 65.1]) == pytest.approx(expected)
    assert reward_of(reward, [0.0, tpot, tps]) == -1e-3
    assert reward_of(reward, [ttft, tpot]) == 0.0


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"version": "1.0.0rc3"}, "version", "available: 1.3.0rc20, 1.3.0rc23 (left out: 1.3.0rc20"),
        (
            {"model_name": "LLAMA3.1_7B"},
            "model_name",
            "did you mean 'LLAMA3.1_70B'? available: LLAMA3.1_70B, LLAMA3.1_8B",
        ),
        ({"system": "h300_sxm"}, "system", "available: h100_sxm, h200_sxm"),
        ({"backend": "tgi"}, "backend", "has no database for h200_sxm; available: trtllm"),
        ({"gemm_quant_mode": "fp8_blok"}, "gemm_quant_mode", "did you mean 'fp8_block'? available: bfloat16, fp8"),
        ({"agg": {"batch_size": 8, "kvcache_quant_mode": "fp4"}}, "agg.kvcache_quant_mode", "'fp4' is not a"),
    ],
)
def test_what_the_release_does_not_ship_is_named(change: dict[str, Any], field: str, says: str) -> None:
    found = problem(AiconfiguratorArgs.model_validate({**AGG, **change}), CATALOG)
    assert found is not None and found[0] == field and says in found[1]


def test_running_before_cloudai_install_is_exit_2(tmp_path: Path) -> None:
    system = tmp_path / "system.toml"
    system.write_text(f'name = "s"\nscheduler = "standalone"\ninstall_path = "{tmp_path / "install"}"\n')
    out = tmp_path / "results"
    code, output = invoke("run", "--system-config", system, "--tests-dir", CONF / "test", "--test-scenario",
                          CONF / "test_scenario" / "dse_aiconfigurator_disagg.toml", "--output-dir", out)  # fmt: skip
    assert code == 2, output
    assert "not installed at" in output and "run `cloudai install` with the same options first" in output
    assert not out.exists()


def test_slurm_dry_run_runs_one_task_of_the_environments_python(tmp_path: Path) -> None:
    system = HERE.parent / "cloudai_conf" / "system" / "example_slurm_cluster.toml"
    out = tmp_path / "results"
    code, output = invoke("dry-run", "--system-config", system, "--tests-dir", CONF / "test", "--test-scenario",
                          CONF / "test_scenario" / "dse_aiconfigurator_disagg.toml", "--output-dir", out)  # fmt: skip
    assert code == 0, output
    scripts = sorted(out.glob("*/*/0/*/sbatch.sh"))
    assert len(scripts) == 4
    srun = next(line for line in scripts[0].read_text().splitlines() if line.startswith("srun "))
    assert "--ntasks=1 " in srun and "/aiconfigurator-0.12.0/bin/python " in srun and "runner.py trial " in srun
    assert '"model_path": "meta-llama/Meta-Llama-3.1-70B"' in srun


def test_an_unknown_model_is_the_test_files_and_names_the_closest_few(tmp_path: Path) -> None:
    """The model comes from the test file, so the test file is blamed (naming the entry that used it), and of the
    ~110 models a release ships the message names the closest few, not all of them on one line."""
    install = tmp_path / "install"
    env = ENV.path(install)
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").touch()  # the catalog below answers; nothing runs it
    (env / MARKER).write_text(json.dumps(ENV._wanted()))
    many = {**CATALOG, "models": [*CATALOG["models"], *(f"org/model-{i}" for i in range(108))]}
    (env / CATALOG_FILE).write_text(json.dumps(many))
    system = tmp_path / "system.toml"
    system.write_text(f'name = "s"\nscheduler = "standalone"\ninstall_path = "{install}"\n')
    test = tmp_path / "tests" / "agg.toml"
    test.parent.mkdir()
    test.write_text((REPO / "conf/aiconfigurator/test/aiconf_pareto_agg.toml").read_text()
                    .replace('"meta-llama/Meta-Llama-3.1-70B"', '"meta-llama/Meta-Lama-3.1-70B"'))  # fmt: skip
    scenario = tmp_path / "s.toml"
    scenario.write_text('name = "s"\n[[Tests]]\nid = "agg"\ntest_name = "aiconf_pareto_agg"\n')
    code, output = invoke("run", "--system-config", system, "--tests-dir", test.parent, "--test-scenario", scenario,
                          "--output-dir", tmp_path / "results")  # fmt: skip
    assert code == 2, output
    assert f"error: {test}: cmd_args.model_name: 'meta-llama/Meta-Lama-3.1-70B' is not a model" in output
    assert f"used by Tests[0] (id 'agg') of {scenario}" in output
    assert "did you mean 'meta-llama/Meta-Llama-3.1-70B'? closest of the 112 it ships:" in output
    assert output.count("org/model-") <= 5
