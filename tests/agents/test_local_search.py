"""What the optuna agent takes from the space: ordered lists (``ordinal``) and the points next to the best one
(``local_search``); ``cloudai.agents.neighbours`` says what "next to" means."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from optuna.distributions import CategoricalDistribution, IntDistribution

from cloudai.agents.neighbours import neighbours, ordinal_values
from cloudai.agents.optuna_agent import OptunaAgent
from cloudai.envs.base import Feedback
from cloudai.space import Categorical, Range, Space

LADDER = Space(
    {},
    (
        Categorical("bs", (64, 1, 8, 2, 16, 4, 32)),  # an ordered axis, given out of order
        Categorical("tp", (1, 2, 4, 8)),
        Categorical("backend", ("trtllm", "vllm", "sglang")),
        Categorical("flag", (True, False, None)),
    ),
)


def peak(point: dict[str, Any]) -> float:
    """Best at bs 16, tp 4, sglang; one move from it is always worse."""
    bs_rank = (1, 2, 4, 8, 16, 32, 64).index(point["bs"])
    backend = {"trtllm": 0.0, "vllm": -1.0, "sglang": 0.5}[point["backend"]]
    return -abs(bs_rank - 4) - abs((1, 2, 4, 8).index(point["tp"]) - 2) + backend


def test_ordinal_values_are_sorted_distinct_numbers() -> None:
    dims = {d.name: d for d in LADDER.dims}
    assert ordinal_values(dims["bs"]) == (1, 2, 4, 8, 16, 32, 64)
    assert ordinal_values(dims["backend"]) is None
    assert ordinal_values(dims["flag"]) is None  # booleans are not a scale
    assert ordinal_values(Categorical("two", (1, 2))) is None  # nothing to order
    assert ordinal_values(Categorical("dup", (1, 2, 2))) is None
    assert ordinal_values(Range("r", 1, 8)) is None


def test_neighbours_move_one_knob_one_step() -> None:
    point = {"bs": 1, "tp": 4, "backend": "vllm", "flag": True}
    moved = neighbours(LADDER, point)
    changed = [{k: v for k, v in n.items() if point[k] != v} for n in moved]
    assert sorted(map(str, changed)) == sorted(
        map(
            str,
            [
                {"bs": 2},  # the end of the scale: one way only
                {"tp": 2},
                {"tp": 8},
                {"backend": "trtllm"},
                {"backend": "sglang"},
                {"flag": False},
                {"flag": None},
            ],
        )
    )


def test_two_knob_neighbours_move_both() -> None:
    point = {"bs": 1, "tp": 4, "backend": "vllm", "flag": True}
    pairs = neighbours(LADDER, point, knobs=2)
    assert all(sum(p[k] != point[k] for k in point) == 2 for p in pairs)
    assert len(pairs) == 1 * 2 + 1 * 2 + 1 * 2 + 2 * 2 + 2 * 2 + 2 * 2  # bs has one move, the others two each
    assert {"bs": 2, "tp": 8, "backend": "vllm", "flag": True} in pairs


def test_a_local_optimum_of_single_moves_is_left_by_two(make_gym: Any, make_agent: Any) -> None:
    """Every single move from the best is measured and worse: the local search tries two at once (a worker
    ratio: more prefill and fewer decode workers) before looking elsewhere."""
    space = Space({}, (Categorical("p", (1, 2, 3, 4)), Categorical("d", (1, 2, 3, 4))))

    values = {(2, 2): 5.0, (1, 2): 1.0, (3, 2): 2.0, (2, 1): 3.0, (2, 3): 1.0, (3, 1): 10.0}  # (2, 2): a local optimum

    def ratio(point: dict[str, Any]) -> float:
        return values.get((point["p"], point["d"]), 0.0)

    measured = [{"p": 2, "d": 2}, {"p": 1, "d": 2}, {"p": 3, "d": 2}, {"p": 2, "d": 1}, {"p": 2, "d": 3}]
    history = [Feedback(i, 1, a, ratio(a), [ratio(a)], "ok") for i, a in enumerate(measured, 1)]
    assert max(history, key=lambda f: f.reward).action == {"p": 2, "d": 2}
    env = make_gym(space, ratio, history=history)
    make_agent(OptunaAgent, env, max_steps=len(history) + 2, seed=0, n_startup_trials=0).run()
    assert env.asked[1] in neighbours(space, {"p": 2, "d": 2}, knobs=2)


def test_neighbours_of_ranges_cross_them_in_few_moves() -> None:
    space = Space({}, (Range("d_bs", 1, 256, log=True, dtype="int"), Range("n", 0, 80, dtype="int"), Range("f", 0, 1)))
    moved = neighbours(space, {"d_bs": 128, "n": 0, "f": 0.5})
    assert sorted(n["d_bs"] for n in moved if n["d_bs"] != 128) == [64, 127, 129, 256]
    assert sorted(n["n"] for n in moved if n["n"] != 0) == [1, 10]  # clipped at low: no -1, no -10
    assert sorted(n["f"] for n in moved if n["f"] != 0.5) == [0.4375, 0.5625]


def test_numeric_lists_are_asked_as_ordered_indices(make_gym: Any, make_agent: Any) -> None:
    env = make_gym(LADDER, peak)
    agent = make_agent(OptunaAgent, env, max_steps=12, seed=0, ordinal=True)
    assert agent.distributions["bs (index)"] == IntDistribution(0, 6)  # named so on the dashboard
    assert agent.distributions["tp (index)"] == IntDistribution(0, 3)
    assert isinstance(agent.distributions["backend"], CategoricalDistribution)
    agent.run()
    assert {p["bs"] for p in env.asked} <= {1, 2, 4, 8, 16, 32, 64}
    by_step = {t.user_attrs["step"]: t.params["bs (index)"] for t in agent.study.trials}
    assert all((1, 2, 4, 8, 16, 32, 64)[by_step[i + 1]] == p["bs"] for i, p in enumerate(env.asked))
    plain = make_agent(OptunaAgent, make_gym(LADDER, peak), max_steps=1, seed=0)  # the default: TPE sees labels
    assert isinstance(plain.distributions["bs"], CategoricalDistribution)


def test_every_other_trial_after_startup_is_next_to_the_best_so_far(make_gym: Any, make_agent: Any) -> None:
    env = make_gym(LADDER, peak)
    agent = make_agent(OptunaAgent, env, max_steps=30, seed=3, n_startup_trials=6, local_search=0.5)
    agent.run()
    local = 0
    for i, point in enumerate(env.asked):
        if i < 6 or (i - 6) % 2 == 0:  # asks 7, 9, 11... (1-based) are TPE's own
            continue
        best = max(env.asked[:i], key=peak)
        if point in neighbours(LADDER, best):
            assert point not in env.asked[:i]  # local search proposes only untried points
            local += 1
        else:  # every neighbour was tried: TPE asks alone
            assert all(n in env.asked[:i] for n in neighbours(LADDER, best))
    assert local >= 8
    assert max(map(peak, env.asked)) == 0.5  # the peak: hill-climbing reached it


def test_with_local_search_off_tpe_asks_alone(make_gym: Any, make_agent: Any) -> None:
    agent = make_agent(OptunaAgent, make_gym(LADDER, peak), max_steps=14, seed=3, n_startup_trials=6, local_search=0)
    agent.run()
    assert all("fixed_params" not in t.system_attrs for t in agent.study.trials)  # none enqueued
    on = make_agent(OptunaAgent, make_gym(LADDER, peak), max_steps=14, seed=3, n_startup_trials=6)
    on.run()
    assert sum("fixed_params" in t.system_attrs for t in on.study.trials) >= 3


def test_resumed_values_of_an_ordered_list_become_their_index(make_gym: Any, make_agent: Any) -> None:
    history = [Feedback(1, 1, {"bs": 16, "tp": 4, "backend": "sglang", "flag": None}, 0.5, [0.5], "ok")]
    env = make_gym(LADDER, peak, history=history)
    agent = make_agent(OptunaAgent, env, max_steps=3, seed=0, n_startup_trials=0, ordinal=True)
    agent.run()
    first = agent.study.trials[0]
    assert first.params["bs (index)"] == 4 and first.params["tp (index)"] == 2
    assert env.asked[1] in neighbours(LADDER, history[0].action)  # the recorded best is the local search's start


def test_a_resumed_step_outside_the_edited_space_is_never_a_starting_point(make_gym: Any, make_agent: Any) -> None:
    """The TOML's list lost 128 since the recorded run: that step is no point of this space, so it has no
    neighbours; local search starts from the best point that is one."""
    foreign = Feedback(1, 1, {"bs": 128, "tp": 4, "backend": "sglang", "flag": None}, 99.0, [99.0], "ok")
    known = Feedback(2, 1, {"bs": 16, "tp": 2, "backend": "sglang", "flag": None}, -0.5, [-0.5], "ok")
    env = make_gym(LADDER, peak, history=[foreign, known])
    make_agent(OptunaAgent, env, max_steps=4, seed=0, n_startup_trials=0).run()
    assert env.asked[1] in neighbours(LADDER, known.action)


def test_a_point_tpe_proposes_again_and_again_is_replaced_by_an_untried_one(make_gym: Any, make_agent: Any) -> None:
    """TPE circling an optimum keeps proposing what it measured; after ``FRESH_AFTER`` cache hits in a row such
    an ask becomes an untried point, so the run measures the whole 64-point grid instead of ending on
    ``REPEATS_IN_A_ROW`` repeats."""
    space = Space({}, tuple(Categorical(k, (1, 2, 3, 4)) for k in "abc"))

    def score(point: dict[str, Any]) -> float:
        return -sum((point[k] - 3) ** 2 for k in "abc")

    class Caching(make_gym):  # an offline env: a point measured before is answered from its cache
        def step_wait(self, timeout: float | None = None) -> list[Feedback]:
            done = super().step_wait(timeout)
            seen = [f.action for f in self.feedback[: len(self.feedback) - len(done)]]
            out = []
            for f in done:
                out.append(replace(f, status="cached") if f.action in seen else f)
                seen.append(f.action)
            return out

    env = Caching(space, score)
    make_agent(OptunaAgent, env, max_steps=64, seed=0, local_search=0).run()
    assert len({tuple(p.values()) for p in env.asked}) == 64
