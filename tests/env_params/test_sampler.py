"""``EnvParamSampler``: deterministic per (seed, name, step), and drawing from the declared distribution."""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cloudai.config.scenario import load_scenario
from cloudai.config.test import EnvParamSpec, load_tests
from cloudai.envs.env_params import EnvParamSampler, env_seed
from cloudai.gymserver.spaces import ObsLeafDescriptor
from cloudai.space import Categorical, Range, Space

SPACE = Space(
    {"message_size": 1024},
    (
        Categorical("algo", ("ring", "tree")),
        Categorical("background_load", (0.0, 0.2, 0.5)),
        Range("jitter", 0.0, 0.3),
        Range("latency_us", 1.0, 1000.0, log=True),
        Range("noise", 0.0, 10.0),
        Range("streams", 1.0, 8.0, dtype="int"),
    ),
)
SPECS = {
    "background_load": EnvParamSpec(weights=[0.5, 0.3, 0.2]),
    "jitter": EnvParamSpec(),
    "latency_us": EnvParamSpec(distribution="loguniform"),
    "noise": EnvParamSpec(distribution="normal", mean=2.0, std=3.0),
    "streams": EnvParamSpec(),
}
N = 4000
CHI2_999 = {2: 13.82, 7: 24.32}  # chi-square critical values at p = 0.001, by degrees of freedom
KS_999 = 1.95  # Kolmogorov-Smirnov: D * sqrt(n) above this has p < 0.001


def chi2_ok(observed: list[int], weights: list[float]) -> bool:
    """Seeded draws, so the outcome is fixed; the threshold says the fixed outcome is a plausible one."""
    total, wsum = sum(observed), sum(weights)
    expected = [w / wsum * total for w in weights]
    statistic = sum((o - e) ** 2 / e for o, e in zip(observed, expected, strict=True))
    return statistic < CHI2_999[len(observed) - 1]


def uniform_ok(values: list[float], low: float, high: float) -> bool:
    ordered = sorted((v - low) / (high - low) for v in values)
    n = len(ordered)
    d = max(max((i + 1) / n - u, u - i / n) for i, u in enumerate(ordered))
    return d * math.sqrt(n) < KS_999


def sampler(seed: int = 7, specs: dict[str, EnvParamSpec] | None = None) -> EnvParamSampler:
    return EnvParamSampler(specs or SPECS, SPACE, seed)


def column(name: str, seed: int = 7) -> list[Any]:
    s = sampler(seed)
    return [s.sample(step)[name] for step in range(1, N + 1)]


def test_names_keep_declaration_order() -> None:
    specs = {"streams": EnvParamSpec(), "background_load": EnvParamSpec()}
    assert sampler(specs=specs).names == ["streams", "background_load"]
    assert list(sampler(specs=specs).sample(1)) == ["streams", "background_load"]


def test_same_seed_same_draws_in_any_call_order() -> None:
    forward = [sampler(3).sample(step) for step in range(1, 201)]
    s = sampler(3)
    backward = {step: s.sample(step) for step in reversed(range(1, 201))}
    s.sample(10_000)  # peeking ahead changes nothing
    assert forward == [backward[step] for step in range(1, 201)] == [s.sample(step) for step in range(1, 201)]


def test_a_param_draw_does_not_depend_on_the_other_params() -> None:
    alone = EnvParamSampler({"jitter": EnvParamSpec()}, SPACE, 3)
    assert [alone.sample(step)["jitter"] for step in range(1, 50)] == [
        sampler(3).sample(s)["jitter"] for s in range(1, 50)
    ]


def test_different_seeds_differ() -> None:
    a, b = sampler(1), sampler(2)
    assert [a.sample(s) for s in range(1, 50)] != [b.sample(s) for s in range(1, 50)]
    assert len({a.sample(s)["jitter"] for s in range(1, 50)} & {b.sample(s)["jitter"] for s in range(1, 50)}) == 0


def test_draws_do_not_depend_on_the_process_hash_seed() -> None:
    """Python salts ``hash()`` per process; a resumed run in a new process must draw the same values."""
    code = (
        "from cloudai.config.test import EnvParamSpec; from cloudai.envs.env_params import EnvParamSampler;"
        "from cloudai.space import Categorical, Space;"
        "s = EnvParamSampler({'x': EnvParamSpec()}, Space({}, (Categorical('x', tuple(range(1000))),)), 0);"
        "print([s.sample(i)['x'] for i in range(1, 20)])"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": str(h)},
        ).stdout.strip()
        for h in (1, 2)
    }  # fmt: skip
    here = EnvParamSampler({"x": EnvParamSpec()}, Space({}, (Categorical("x", tuple(range(1000))),)), 0)
    assert runs == {str([here.sample(i)["x"] for i in range(1, 20)])}


def test_weighted_frequencies_match_the_weights() -> None:
    values = column("background_load")
    observed = [values.count(v) for v in (0.0, 0.2, 0.5)]
    assert chi2_ok(observed, [0.5, 0.3, 0.2])
    assert not chi2_ok(observed, [1 / 3, 1 / 3, 1 / 3])  # the test has the power to tell


def test_no_weights_is_uniform() -> None:
    s = EnvParamSampler({"background_load": EnvParamSpec()}, SPACE, 11)
    values = [s.sample(step)["background_load"] for step in range(1, N + 1)]
    assert chi2_ok([values.count(v) for v in (0.0, 0.2, 0.5)], [1, 1, 1])


def test_zero_weight_candidate_is_never_drawn() -> None:
    s = EnvParamSampler({"background_load": EnvParamSpec(weights=[1, 0, 1])}, SPACE, 5)
    assert {s.sample(step)["background_load"] for step in range(1, 2000)} == {0.0, 0.5}


def test_uniform_range_fills_the_range() -> None:
    values = column("jitter")
    assert all(0.0 <= v <= 0.3 and isinstance(v, float) for v in values)
    assert uniform_ok(values, 0.0, 0.3) and not uniform_ok([v**2 / 0.3 for v in values], 0.0, 0.3)


def test_loguniform_is_uniform_in_log() -> None:
    logs = [math.log(v) for v in column("latency_us")]
    assert uniform_ok(logs, 0.0, math.log(1000.0))


def test_a_log_range_defaults_to_loguniform() -> None:
    default = EnvParamSampler({"latency_us": EnvParamSpec()}, SPACE, 7)
    explicit = EnvParamSampler({"latency_us": EnvParamSpec(distribution="loguniform")}, SPACE, 7)
    assert [default.sample(s) for s in range(1, 50)] == [explicit.sample(s) for s in range(1, 50)]


def test_normal_is_clipped_to_the_range() -> None:
    values = column("noise")
    assert min(values) == 0.0 and max(values) <= 10.0
    assert abs(statistics.median(values) - 2.0) < 0.15  # clipping keeps the median (the mean) in place
    assert abs(values.count(0.0) / N - statistics.NormalDist(2.0, 3.0).cdf(0.0)) < 0.02  # the tail piles up at low


def test_int_range_draws_every_integer_uniformly() -> None:
    values = column("streams")
    assert all(type(v) is int for v in values) and set(values) == set(range(1, 9))
    assert chi2_ok([values.count(v) for v in range(1, 9)], [1] * 8)


def test_descriptors_and_encoding() -> None:
    s = sampler()
    assert s.descriptors()["background_load"] == ObsLeafDescriptor("categorical", n=3)
    assert s.descriptors()["jitter"] == ObsLeafDescriptor("box", low=0.0, high=0.3)
    encoded = s.encode({"background_load": 0.5, "jitter": 0.1, "latency_us": 3.0, "noise": 1.0, "streams": 2})
    assert encoded["background_load"] == 2 and encoded["jitter"] == 0.1 and encoded["streams"] == 2.0


def test_regimes_bin_ranges() -> None:
    s = sampler()
    values = {"background_load": 0.2, "jitter": 0.3, "latency_us": 20.0, "noise": 0.0, "streams": 4}
    assert s.regime(values, 3) == ("0.2", "[0.2, 0.3]", "[10, 100)", "[0, 3.333)", "[3.333, 5.667)")
    assert s.regime(values, 1) == ("0.2", "[0, 0.3]", "[1, 1000]", "[0, 10]", "[1, 8]")


def test_unknown_names_are_refused() -> None:
    with pytest.raises(Exception, match="message_size"):
        EnvParamSampler({"message_size": EnvParamSpec()}, SPACE, 0)


@pytest.mark.parametrize(
    ("test_fields", "entry_fields", "seed"),
    [
        ("", "", 0),
        ("seed = 4", "", 4),
        ("agent_config = { seed = 9 }\nseed = 4", "", 9),
        ("seed = 4", "agent_config = { seed = 12 }", 12),
    ],
)
def test_env_seed(tmp_path: Path, test_fields: str, entry_fields: str, seed: int) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "x.toml").write_text(
        f'name = "x"\ntest_template_name = "Synthetic"\nagent = "optuna"\n{test_fields}\n'
        "[cmd_args]\nalgo = ['ring', 'tree']\n"
    )
    (tmp_path / "s.toml").write_text(f'name = "s"\n[[Tests]]\nid = "t"\ntest_name = "x"\n{entry_fields}\n')
    scenario = load_scenario(tmp_path / "s.toml", load_tests(tmp_path / "tests"))
    assert env_seed(scenario.entries[0]) == seed
