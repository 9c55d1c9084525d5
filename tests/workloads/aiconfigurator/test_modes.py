"""Agg and disagg in one search (``mode = ["agg", "disagg"]``, ``Space.when``) and a question at a fixed cost
(``budget`` + ``gpu_price``), without the aiconfigurator environment: what loads, what a trial sees, how the grid
counts, what the optuna agent asks. The real runs are in ``test_aiconfigurator_env.py``."""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from pydantic import ValidationError
from tests.agents.conftest import FunctionGym, build_agent
from tests.conftest import REPO

from cloudai.agents.neighbours import neighbours
from cloudai.agents.optuna_agent import OptunaAgent
from cloudai.cli import cli
from cloudai.envs.base import Feedback
from cloudai.space import first_value, flatten, parse_space, split_knobs
from cloudai.workloads.aiconfigurator import Aiconfigurator, AiconfiguratorArgs
from cloudai.workloads.aiconfigurator.args import request
from cloudai.workloads.validity import ValidPoints

CONF = REPO / "conf" / "aiconfigurator"
TOP = {"model_name": "meta-llama/Meta-Llama-3.1-70B", "system": "h200_sxm", "isl": 4000, "osl": 500}
AGG = {"tp": [1, 2, 4, 8], "batch_size": [8, 64], "ctx_tokens": [2048, 4096]}
DISAGG = {"p_tp": [1, 2], "p_bs": 1, "p_workers": [1, 2, 4], "d_tp": [2, 4, 8], "d_bs": [16, 128], "d_workers": [1, 2]}
BOTH = {**TOP, "total_gpus": 8, "mode": ["agg", "disagg"], "agg": AGG, "disagg": DISAGG}
BRANCHES = Aiconfigurator.branches


def space_of(cmd_args: dict[str, Any]):
    return parse_space(flatten(cmd_args), branches=BRANCHES)


def points(space: Any) -> list[dict[str, Any]]:
    return [space.grid_point(i) for i in range(space.grid_size)]


def invoke(*args: str | Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_the_shipped_examples_verify() -> None:
    code, output = invoke("verify-configs", "--tests-dir", CONF / "test", CONF / "test", CONF / "test_scenario")
    assert code == 0, output


def test_a_trial_sees_its_modes_table_alone_and_the_other_does_not_split_it() -> None:
    space = space_of(BOTH)
    assert space.when["agg.tp"] == ("mode", "agg") and space.when["disagg.d_bs"] == ("mode", "disagg")
    point = {d.name: d.grid_values[-1] for d in space.dims} | {"mode": "agg"}
    args, _, _ = split_knobs(space.full(point))
    assert "disagg" not in args and args["agg"] == {"tp": 8, "batch_size": 64, "ctx_tokens": 4096}
    assert request(AiconfiguratorArgs.model_validate(args))["mode"] == "agg"
    canonical = space.canonical(point)
    assert canonical == {**point, **{n: first_value(space.dim(n)) for n in space.names if n.startswith("disagg.")}}
    other = {**point, "disagg.d_tp": 2, "disagg.p_workers": 4}  # differs only where agg does not look
    assert space.canonical(other) == canonical and not space.is_canonical(other) and space.is_canonical(canonical)
    assert space.active(canonical) == {k: v for k, v in point.items() if not k.startswith("disagg.")}


def test_the_grid_counts_each_configuration_once() -> None:
    """Valid points are canonical points within total_gpus: agg's 4 x 2 x 2 plus disagg's (p_tp x p_workers x d_tp
    x d_bs x d_workers within 8 GPUs), not the 2 x 16 x 72 product, and the mask walks exactly those."""
    space = space_of(BOTH)
    rule = ValidPoints(space, Aiconfigurator(), None)
    disagg = sum(
        pt * pw + dt * dw <= 8
        for pt in (1, 2) for pw in (1, 2, 4) for dt in (2, 4, 8) for _ in (16, 128) for dw in (1, 2)
    )  # fmt: skip
    assert rule.count() == 16 + disagg == 46
    scalar = [space.is_canonical(p) and rule.violation(p) is None for p in points(space)]
    assert rule.mask(0, space.grid_size).tolist() == scalar


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"mode": ["agg", "disaggregated"]}, "cmd_args.mode", 'is not one of "agg", "disagg"'),
        ({"mode": ["agg", "disagg"], "disagg": None}, "cmd_args", "mode = 'disagg' needs a [cmd_args.disagg] table"),
        ({"mode": None}, "cmd_args", "or both with mode"),
    ],
)
def test_a_bad_mode_is_exit_2_naming_file_field_and_value(
    tmp_path: Path, change: dict[str, Any], field: str, says: str
) -> None:
    cmd_args = {k: v for k, v in {**BOTH, **change}.items() if v is not None}
    (tmp_path / "t.toml").write_text(_test_toml(cmd_args))
    (tmp_path / "s.toml").write_text('name = "s"\n[[Tests]]\nid = "t"\ntest_name = "t"\n')
    code, output = invoke("verify-configs", "--tests-dir", tmp_path, tmp_path / "t.toml", tmp_path / "s.toml")
    assert code == 2, output
    assert f"{tmp_path / 't.toml'}: {field}: " in output and says in output


def test_a_budget_buys_each_systems_gpus() -> None:
    prices = {"h100_sxm": 2.5, "h200_sxm": 3.5, "b200_sxm": 5.5}
    base = {**TOP, "budget": 28.0, "gpu_price": prices, "agg": {"batch_size": 8, "tp": 8}}
    got = {s: AiconfiguratorArgs.model_validate({**base, "system": s}).total_gpus for s in prices}
    assert got == {"h100_sxm": 11, "h200_sxm": 8, "b200_sxm": 5}
    assert Aiconfigurator().constraint({**base, "system": "b200_sxm"}) == (
        "uses 8 GPUs, more than total_gpus = 5 (what budget 28 buys of b200_sxm)"
    )
    assert Aiconfigurator().derived({**base, "system": "h100_sxm"}) == {"total_gpus": 11}
    for bad, says in [({"gpu_price": {"h100_sxm": 2.5}}, "budget needs gpu_price for system 'h200_sxm'"),
                      ({"total_gpus": 8}, "give total_gpus or budget"), ({"budget": 1.0}, "buys no h200_sxm GPU"),
                      ({"gpu_price": {**prices, "h200_sxm": -1.0}}, "positive number")]:  # fmt: skip
        with pytest.raises(ValidationError, match=says.replace("(", r"\(")):
            AiconfiguratorArgs.model_validate({**base, **bad})


def test_the_budget_rule_vectorised_is_the_scalar_one() -> None:
    prices = {"h100_sxm": 2.5, "h200_sxm": 3.5, "b200_sxm": 5.5}
    cmd_args = {**TOP, "system": list(prices), "budget": 28.0, "mode": ["agg", "disagg"], "gpu_price": prices,
                "agg": AGG, "disagg": DISAGG}  # fmt: skip
    space = space_of(cmd_args)
    rule = ValidPoints(space, Aiconfigurator(), None)
    assert rule.vectorised
    scalar = [space.is_canonical(p) and rule.violation(p) is None for p in points(space)]
    assert rule.mask(0, space.grid_size).tolist() == scalar
    assert rule.count() == sum(scalar) < space.grid_size


def test_moe_parallelism_keeps_aiconfigurators_sweep_rule() -> None:
    """moe_tp x moe_ep = tp x dp, trtllm's attention DP at tp 1, vllm's MoE TP or EP: refused before a step, the
    same point by point as over the grid; CloudAI's dense moe_tp = moe_ep = 1 stays valid."""
    moe = {**TOP, "model_name": "Qwen/Qwen3-30B-A3B", "backend": "trtllm"}
    assert Aiconfigurator().constraint({**moe, "agg": {"batch_size": 8, "tp": 4, "moe_tp": 1, "moe_ep": 1}}) is None
    assert Aiconfigurator().constraint({**moe, "agg": {"batch_size": 8, "tp": 4, "moe_tp": 2, "moe_ep": 4}}) == (
        "moe_tp x moe_ep = 8 is not tp x dp = 4 (aiconfigurator's rule: the experts span the attention's GPUs)"
    )
    assert Aiconfigurator().constraint({**moe, "agg": {"batch_size": 8, "tp": 2, "dp": 2, "moe_ep": 4, "moe_tp": 1}})
    vllm = {**moe, "backend": "vllm", "mode": "disagg"}
    disagg = {"p_bs": 1, "p_workers": 1, "d_bs": 8, "d_workers": 1, "d_tp": 4, "d_moe_tp": 2, "d_moe_ep": 2}
    assert "vllm runs MoE TP or MoE EP" in str(Aiconfigurator().constraint({**vllm, "disagg": disagg}))
    agg = {"batch_size": 8, "tp": [1, 2, 4], "dp": [1, 2], "moe_tp": [1, 2], "moe_ep": [1, 2, 4]}
    disagg = {"p_bs": 1, "p_workers": 1, "p_tp": [1, 2], "p_moe_ep": [1, 2], "p_moe_tp": 1,
              "d_bs": 8, "d_workers": 1, "d_tp": [2, 4], "d_moe_tp": [1, 2], "d_moe_ep": [1, 2, 4]}  # fmt: skip
    cmd_args = {**moe, "backend": ["trtllm", "vllm", "sglang"], "total_gpus": 8, "mode": ["agg", "disagg"],
                "agg": agg, "disagg": disagg}  # fmt: skip
    space = space_of(cmd_args)
    rule = ValidPoints(space, Aiconfigurator(), None)
    scalar = [space.is_canonical(p) and rule.violation(p) is None for p in points(space)]
    assert rule.mask(0, space.grid_size).tolist() == scalar
    assert rule.count() == sum(scalar) < sum(space.is_canonical(p) for p in points(space))


def test_optuna_asks_a_branchs_knobs_only_on_it_and_both_branches_alike() -> None:
    """Each asked action is canonical (the knobs of the mode not chosen at their first value), the two modes are
    asked in turn, and the best, which only disagg has, is found; local search's neighbours are canonical and move
    only what applies."""
    space = space_of({**TOP, "mode": ["agg", "disagg"], "agg": AGG, "disagg": DISAGG})

    def value(p: dict[str, Any]) -> float:
        if p["mode"] == "agg":
            return p["agg.tp"] / 8
        return 1 + p["disagg.d_bs"] / 128 + p["disagg.p_workers"] / 4

    env = FunctionGym(space, value)
    agent = build_agent(OptunaAgent, env, 60, seed=3)
    agent.run()
    assert all(space.is_canonical(a) for a in env.asked)
    modes = [a["mode"] for a in env.asked]
    assert abs(modes.count("agg") - modes.count("disagg")) <= 1
    assert agent.best is not None and agent.best.reward == 3.0
    best = agent.best.action
    moved = neighbours(space, best)
    assert moved and all(space.is_canonical(n) for n in moved)
    assert not any(n[k] != best[k] for n in moved for k in space.names if k.startswith("agg."))
    assert math.isfinite(agent.best.reward)


def test_a_resumed_branched_run_tells_optuna_each_step_with_its_branchs_knobs() -> None:
    """Recorded steps (canonical actions, as trajectory.csv holds them) become study trials with the chosen
    mode's params only; none is dropped as "not of this space"."""
    space = space_of({**TOP, "mode": ["agg", "disagg"], "agg": AGG, "disagg": DISAGG})
    first = FunctionGym(space, lambda p: 1.0 if p["mode"] == "agg" else 2.0)
    build_agent(OptunaAgent, first, 6, seed=1).run()
    history = [Feedback(i, 1, a, 1.0, [1.0], "ok") for i, a in enumerate(first.asked, 1)]
    resumed = build_agent(OptunaAgent, FunctionGym(space, lambda p: 1.0, history=history), 6, seed=1)
    assert isinstance(resumed, OptunaAgent)
    resumed.run()
    told = resumed.study.trials[: len(history)]
    assert [t.params.get("mode") for t in told] == [a["mode"] for a in first.asked]
    for trial in told:
        assert {n.split(".")[0] for n in trial.params if "." in n} == {trial.params["mode"]}


def _test_toml(cmd_args: dict[str, Any]) -> str:
    lines = ['name = "t"', 'test_template_name = "Aiconfigurator"', 'agent = "optuna"', "agent_steps = 5",
             "[cmd_args]"]  # fmt: skip
    tables = {k: v for k, v in cmd_args.items() if isinstance(v, dict)}
    lines += [f"{k} = {_toml(v)}" for k, v in cmd_args.items() if k not in tables]
    for name, table in tables.items():
        lines += [f"[cmd_args.{name}]", *(f"{k} = {_toml(v)}" for k, v in table.items())]
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else str(value)


def test_tpes_candidates_for_one_branch_are_judged_as_that_branchs_points() -> None:
    """With branches TPE samples each branch's knobs as a group of their own (``group=True``): a group's
    candidates are judged as points of their branch (its selector set, the other branch's knobs at their first
    values), so a disagg draw past 8 GPUs is never asked (``aiconf_moe``: 729 refused draws in 200 steps, 34 now)."""
    from cloudai.agents.optuna_draws import validity
    from cloudai.agents.optuna_params import distribution

    space = space_of(BOTH)
    rule = ValidPoints(space, Aiconfigurator(), None)

    class Env:
        def valid_points(self) -> ValidPoints:
            return rule

    valid = validity(Env(), space, {d.name: distribution(d, False, False) for d in space.dims}, lambda n: n)  # type: ignore[arg-type]
    assert valid is not None
    names = [d.name for d in space.dims if d.name.startswith("disagg.")]
    combos = list(itertools.product(*(range(len(space.dim(n).choices)) for n in names)))
    candidates = {n: np.asarray([c[i] for c in combos], dtype=float) for i, n in enumerate(names)}
    mask = valid(candidates)
    agg = {n: first_value(space.dim(n)) for n in space.names if n.startswith("agg.")}
    points = [{"mode": "disagg", **agg, **{n: space.dim(n).choices[c[i]] for i, n in enumerate(names)}} for c in combos]
    expected = [rule.violation(p) is None for p in points]
    assert mask is not None and mask.tolist() == expected and 0 < sum(expected) < len(expected)
