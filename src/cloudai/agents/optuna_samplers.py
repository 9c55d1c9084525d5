"""``agent_config.sampler`` of the ``optuna`` agent: a name -> an Optuna sampler, built with the agent's seed.

| name | Optuna sampler | several objectives | needs |
| --- | --- | --- | --- |
| ``tpe`` (default) | ``TPESampler`` (multivariate, constant liar) | yes (MOTPE) | - |
| ``random`` | ``RandomSampler`` | yes | - |
| ``cmaes`` | ``CmaEsSampler`` (lists sampled by ``RandomSampler``) | no | ``cmaes`` (pure Python, a dependency) |
| ``nsga2`` | ``NSGAIISampler`` (``population_size``) | yes | - |
| ``qmc`` | ``QMCSampler`` (scrambled Sobol) | yes | ``scipy`` (optional, not a dependency) |
| ``gp`` | ``GPSampler`` | yes | ``scipy`` and ``torch`` (optional, not dependencies) |

``qmc`` and ``gp`` are accepted only where their packages are installed (``pip install scipy``, or
``scipy torch``): a hundred MB of wheels for one sampler each is too heavy for every install.
Every sampler is told infeasible trials through ``Trial.set_constraint`` (Optuna 5's successor of
``constraints_func``); samplers that ignore constraints (random, qmc, cmaes) still never see such
a trial as best, since its value is the penalty.
"""

from __future__ import annotations

import importlib.util
import typing
import warnings
from typing import Literal, Protocol

import optuna

from cloudai.agents.optuna_valid import Validity, ValidTPESampler

SamplerName = Literal["tpe", "random", "cmaes", "nsga2", "qmc", "gp"]
SAMPLER_NEEDS: dict[str, tuple[str, ...]] = {"cmaes": ("cmaes",), "qmc": ("scipy",), "gp": ("scipy", "torch")}
SINGLE_OBJECTIVE_ONLY = frozenset({"cmaes"})


def missing_packages(name: str) -> list[str]:
    """The packages sampler ``name`` needs that are not installed ([] when it can be built here)."""
    return [pkg for pkg in SAMPLER_NEEDS.get(name, ()) if importlib.util.find_spec(pkg) is None]


def sampler_note() -> str:
    """Which samplers this install can build (``cloudai list``)."""
    names = typing.get_args(SamplerName)
    missing = {n: missing_packages(n) for n in names}
    ready = [n for n in names if not missing[n]]
    text = f"samplers here: {', '.join(ready)}"
    absent = [f"{n} (needs {' and '.join(missing[n])})" for n in names if missing[n]]
    return text + (f"; not installed: {', '.join(absent)}" if absent else "")


def sampler_problem(name: str, objectives: int) -> str | None:
    """Why sampler ``name`` cannot run here with ``objectives`` objectives (None: it can)."""
    missing = missing_packages(name)
    if missing:
        return f"sampler '{name}' needs {' and '.join(missing)}, not installed (pip install {' '.join(missing)})"
    if name in SINGLE_OBJECTIVE_ONLY and objectives > 1:
        return f"sampler '{name}' optimizes one objective; with {objectives} objectives use 'tpe' or 'nsga2'"
    return None


class SamplerConfig(Protocol):
    """The ``agent_config`` fields a sampler is built from (``OptunaConfig``)."""

    sampler: SamplerName
    seed: int | None
    n_startup_trials: int
    multivariate: bool
    constant_liar: bool
    population_size: int


def build_sampler(
    config: SamplerConfig, valid: Validity | None = None, conditional: bool = False
) -> optuna.samplers.BaseSampler:
    """The configured sampler, seeded with ``config.seed`` (same seed, same asks). ``valid``: TPE picks among the
    candidates the workload's rule allows (``optuna_valid``). ``conditional``: the space has branches
    (``Space.when``), whose knobs a trial asks only on its branch: multivariate TPE then models each branch's knobs
    as a group (``group=True``) rather than falling back to independent sampling for them."""
    name, seed = config.sampler, config.seed
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":  # it ignores constraints (documented above): no warning per told trial
        warnings.filterwarnings("ignore", message="Constraints have been set, but CmaEsSampler", category=UserWarning)
        return optuna.samplers.CmaEsSampler(
            seed=seed,
            n_startup_trials=config.n_startup_trials,
            independent_sampler=optuna.samplers.RandomSampler(seed=seed),
            warn_independent_sampling=False,
        )
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, population_size=config.population_size)
    if name == "qmc":
        return optuna.samplers.QMCSampler(seed=seed, scramble=True)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=config.n_startup_trials)
    tpe = {"seed": seed, "n_startup_trials": config.n_startup_trials, "multivariate": config.multivariate,
           "constant_liar": config.constant_liar, "group": conditional and config.multivariate}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # ``group``: experimental in 4.x
        return optuna.samplers.TPESampler(**tpe) if valid is None else ValidTPESampler(valid, **tpe)
