"""The valid part of a space (``cloudai.workloads.validity``) and the agents that walk or sample it, in process."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from tests.contracts.test_workload_contract import WorkloadContract
from tests.dse.training_rule import GPUS_PER_NODE, ModelEnv, ToyTraining

from cloudai.agents.bandit import BanditAgent, BanditConfig
from cloudai.agents.base import AgentConfig
from cloudai.agents.grid_search import GridSearchAgent
from cloudai.agents.optuna_agent import OptunaAgent
from cloudai.agents.optuna_config import OptunaConfig
from cloudai.agents.random_search import RandomSearchAgent
from cloudai.space import Space, parse_space
from cloudai.workloads import validity
from cloudai.workloads.base import Workload
from cloudai.workloads.validity import ValidPoints

KNOBS = {"cmd": "x", "tp": [1, 2, 4, 8], "pp": [1, 2, 3, 4], "cp": [1, 2], "vp": [1, 2], "mbs": [1, 2],
         "gbs": [32, 48, 64], "num_nodes": 2}  # fmt: skip


class _ScalarOnly(ToyTraining):
    """The same rule without its vectorised form: ValidPoints asks the scalar one per point."""

    constraint_mask = Workload.constraint_mask


def _space(**changes: Any) -> Space:
    return parse_space({**KNOBS, **changes})


def _scalar_mask(space: Space) -> np.ndarray:
    rule = ToyTraining()
    from cloudai.workloads.base import constraint_of

    points = (space.full(space.grid_point(i)) for i in range(space.grid_size))
    return np.fromiter((constraint_of(rule, p, GPUS_PER_NODE) is None for p in points), bool)


@pytest.mark.parametrize("changes", [{}, {"num_nodes": [1, 2, 4]}, {"num_layers": [24, 32], "cp": 2}])
def test_vectorised_and_scalar_forms_agree(changes: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    space = _space(**changes)
    expected = _scalar_mask(space)
    fast, slow = ValidPoints(space, ToyTraining(), GPUS_PER_NODE), ValidPoints(space, _ScalarOnly(), GPUS_PER_NODE)
    assert fast.vectorised and not slow.vectorised
    assert (fast.mask(0, space.grid_size) == expected).all() and (slow.mask(0, space.grid_size) == expected).all()
    assert 0 < fast.count() == slow.count() == expected.sum() < space.grid_size
    monkeypatch.setattr(validity, "BLOCK", 7)  # the broadcast count split into many blocks: the same answer
    assert ValidPoints(space, ToyTraining(), GPUS_PER_NODE).count() == expected.sum()
    assert fast.first(5) == list(np.flatnonzero(expected)[:5])


def test_a_million_points_are_counted_by_blocks_and_by_chunks_alike() -> None:
    space = _space(tp=list(range(1, 11)), pp=list(range(1, 11)), cp=list(range(1, 11)), vp=list(range(1, 11)),
                   mbs=list(range(1, 11)), gbs=[16 * i for i in range(1, 11)])  # fmt: skip
    rule = ValidPoints(space, ToyTraining(), GPUS_PER_NODE)
    assert space.grid_size == 10**6
    walked = sum(int(rule.mask(s, s + validity.CHUNK).sum()) for s in range(0, space.grid_size, validity.CHUNK))
    assert rule.count() == walked > 0
    picks = np.random.default_rng(0).integers(0, space.grid_size, 300)  # the scalar rule on a sample
    assert all(rule.is_valid(int(i)) == (rule.violation(space.grid_point(int(i))) is None) for i in picks)


def test_without_a_rule_every_point_is_valid_and_nothing_is_evaluated() -> None:
    from cloudai.workloads.bash_cmd import BashCmd

    rule = ValidPoints(_space(), BashCmd(), None)
    assert not rule.has_rule and rule.count() == _space().grid_size and rule.summary() == "384 points"


def test_a_scalar_rule_on_a_big_grid_is_not_counted() -> None:
    space = _space(gbs=list(range(16, 16 * 100, 16)), vp=[1, 2, 3, 4])
    assert space.grid_size > validity.SCALAR_LIMIT
    rule = ValidPoints(space, _ScalarOnly(), GPUS_PER_NODE)
    assert rule.count() is None and rule.summary().endswith("points (validity checked per step)")


def test_grid_search_asks_valid_points_only_and_counts_them_as_steps() -> None:
    env = ModelEnv(_space(), num_nodes=2)
    valid = env.rule.count()
    assert valid is not None
    agent = GridSearchAgent(env, AgentConfig(), max_steps=valid + 5)
    assert agent.run() == valid
    assert [status for _, _, status in env.rows] == ["ok"] * valid
    assert [env.space.grid_index(a) for _, a, _ in env.rows] == env.rule.first(valid)
    assert agent.stop_reason == f"the grid has 384 points, {valid} valid, all tried (fewer than agent_steps)"


def test_random_search_without_replacement_walks_valid_points_only() -> None:
    env = ModelEnv(_space(), num_nodes=2)
    agent = RandomSearchAgent(env, AgentConfig(seed=3), max_steps=10_000)
    agent.run()
    indices = [env.space.grid_index(a) for _, a, _ in env.rows]
    assert sorted(indices) == env.rule.first(10_000) and {s for _, _, s in env.rows} == {"ok"}
    assert agent.stop_reason is not None and "valid" in agent.stop_reason


def test_random_search_redraws_a_range_point_the_rule_refuses() -> None:
    env = ModelEnv(_space(gbs={"low": 32, "high": 64, "dtype": "int"}), num_nodes=2)
    agent = RandomSearchAgent(env, AgentConfig(seed=1), max_steps=20)
    assert agent.run() == 20
    statuses = Counter(s for _, _, s in env.rows)
    assert statuses["ok"] == 20 and statuses["infeasible"] > 0 and set(statuses) == {"ok", "infeasible"}
    refused = [str(sorted(a.items())) for _, a, s in env.rows if s == "infeasible"]
    assert len(refused) == len(set(refused))  # recorded once per point
    assert all(env.rule.violation(a) is None for _, a, s in env.rows if s == "ok")


def test_optuna_never_submits_an_invalid_point_and_learns_from_each_refusal() -> None:
    env = ModelEnv(_space(), num_nodes=2)
    agent = OptunaAgent(env, OptunaConfig(seed=0), max_steps=15)
    assert agent.run() == 15
    submitted = [a for _, a, s in env.rows if s != "infeasible"]
    assert len([s for _, _, s in env.rows if s == "ok"]) == 15
    assert all(env.rule.violation(a) is None for a in submitted)
    trials = agent.study.get_trials(deepcopy=False)
    refused = [t for t in trials if t.user_attrs.get("status") == "infeasible"]
    assert refused and all(t.user_attrs["reason"] for t in refused)  # told with the broken rule
    assert len(trials) == len(refused) + len(submitted)  # every ask told: a refusal is one trial, not a step
    assert len({str(sorted(a.items())) for _, a, s in env.rows if s == "infeasible"}) == sum(
        s == "infeasible" for _, _, s in env.rows
    )


@pytest.mark.parametrize("changes", [{}, {"tp": {"low": 1, "high": 8, "dtype": "int"},
                                          "mbs": {"low": 1, "high": 8, "dtype": "int"}}])  # fmt: skip
def test_tpe_proposes_only_valid_points_after_its_random_startup(changes: dict[str, Any]) -> None:
    """TPE's candidates are judged by the vectorised rule (``optuna_valid``): once it models the space, no draw is
    refused, so no ask/tell round trip is spent on one; its random startup trials still may be. Integer ranges too
    (tp 3, 5, 6, 7 and mbs 3, 5, 6, 7 break the rule here): their candidates are values, not grid positions."""
    env = ModelEnv(_space(**changes), num_nodes=2)
    agent = OptunaAgent(env, OptunaConfig(seed=0), max_steps=40)
    assert agent.run() == 40
    trials = agent.study.get_trials(deepcopy=False)
    refused = [t.number for t in trials if t.user_attrs.get("status") == "infeasible"]
    assert refused and max(refused) < agent.config.n_startup_trials  # type: ignore[attr-defined]


def test_candidates_are_judged_by_position_as_the_grid_is() -> None:
    space = _space()
    rule = ValidPoints(space, ToyTraining(), GPUS_PER_NODE)
    index = np.arange(space.grid_size)
    positions, stride = {}, 1
    for dim in reversed(space.dims):
        positions[dim.name] = (index // stride) % len(dim.choices)  # type: ignore[attr-defined]
        stride *= len(dim.choices)  # type: ignore[attr-defined]
    shuffled = np.random.default_rng(0).permutation(space.grid_size)
    got = rule.mask_at({name: at[shuffled] for name, at in positions.items()})
    assert got is not None and (got == rule.mask(0, space.grid_size)[shuffled]).all()
    assert ValidPoints(space, _ScalarOnly(), GPUS_PER_NODE).mask_at(positions) is None  # no vectorised rule


def test_a_rule_blind_agent_pays_a_step_per_invalid_point() -> None:
    env = ModelEnv(_space(), num_nodes=2, aware=False)
    agent = GridSearchAgent(env, AgentConfig(), max_steps=30)
    assert agent.run() == 30
    assert Counter(s for _, _, s in env.rows)["constraint"] > 0  # what the benchmark compares against


def test_the_bandit_never_pulls_an_arm_the_rule_refuses() -> None:
    env = ModelEnv(_space(tp=[1, 2], pp=[1, 3], cp=1, vp=1, mbs=1, gbs=64), num_nodes=2)
    agent = BanditAgent(env, BanditConfig(seed=0), max_steps=8)
    assert agent.run() == 2  # each valid arm measured once; pulling it again is a cache hit
    pulled = {str(a) for _, a, s in env.rows if s in ("ok", "cached")}
    assert pulled == {str({"tp": 1, "pp": 1}), str({"tp": 2, "pp": 1})}  # pp = 3 divides no 16 GPUs
    assert Counter(s for _, _, s in env.rows)["infeasible"] == 2


def test_optuna_is_handed_a_valid_point_when_its_proposals_keep_failing() -> None:
    from cloudai.agents.optuna_agent import HELP_AFTER

    env = ModelEnv(_space(tp=[1, 3, 5, 6, 7, 8], pp=[1, 3, 5, 7], cp=[1, 3], vp=[1, 3, 5], mbs=[1, 3, 5, 7],
                          gbs=[8, 24]), num_nodes=2)  # fmt: skip
    assert env.rule.count() == 3  # of 1152 points: a sliver the sampler would need hundreds of asks to hit
    agent = OptunaAgent(env, OptunaConfig(seed=0), max_steps=3)
    assert agent.run() == 3
    assert len({str(a) for _, a, s in env.rows if s == "ok"}) == 3
    assert len(agent.study.get_trials(deepcopy=False)) <= 3 * (HELP_AFTER + 1) + 20  # (cached repeats ask again)


class TestToyTrainingContract(WorkloadContract):
    """The workload contract, its vectorised-rule check included, on the test-local training workload."""

    @pytest.fixture
    def workload(self) -> Workload:
        return ToyTraining()

    @pytest.fixture
    def sample_args(self) -> dict[str, Any]:
        return {"cmd": "true", "tp": 2, "pp": 2, "cp": 1, "vp": 2, "mbs": 1, "gbs": 64}

    @pytest.fixture
    def sample_output(self) -> dict[str, str]:
        return {}
