"""What the report says about a trajectory: convergence, knob importance, top trials (regimes: ``regimes.py``).

Pure functions of a ``Trajectory``: no plotting, no HTML. Rewards are maximised (higher is better), and only
``ok``/``cached`` steps count as measurements of their action. Importance is Optuna's
``get_param_importances`` on an in-memory study rebuilt from the trajectory, not hand-written statistics.
"""

from __future__ import annotations

import json
import math
import warnings
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from statistics import fmean, stdev
from typing import TYPE_CHECKING, Literal, TypeGuard

from cloudai.reports import aide
from cloudai.reports.trajectory import Trajectory

if TYPE_CHECKING:
    from cloudai.reports.aide import Pending

KnobKind = Literal["categorical", "int", "float"]
Choice = bool | int | float | str | None
Spec = tuple[str, list[Choice]] | tuple[str, int, int] | tuple[str, float, float]  # see _distribution
MAX_IMPORTANCE_TRIALS = 500  # Optuna deep-copies every trial into its study: an even sample ranks as well
# A categorical knob with more distinct values than this is left out of the importance: Optuna's cost is
# trials x categories (each trial copies and compares the whole choice list), and with ~1 trial per
# value there is nothing to rank. The page says which knob was left out and why.
MAX_IMPORTANCE_CATEGORIES = 64
FEW_VALUES = 6  # at most this many distinct values: a numeric knob (or env param) is treated as categorical


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_number_type(kind: type) -> bool:
    """``is_number`` of every value of type ``kind``."""
    return issubclass(kind, int | float) and not issubclass(kind, bool)


def knob_kind(values: Sequence[object]) -> KnobKind:
    """Categorical for strings, bools, mixed or few distinct values; an int or float range otherwise."""
    present = [v for v in values if v is not None] if None in values else values  # a knob set by every step: as is
    types = set(map(type, present))  # is_number and isinstance depend on the type alone: once per type
    if not present or not all(is_number_type(t) for t in types) or len(set(present)) <= FEW_VALUES:
        return "categorical"  # numbers are hashable as they are: no ``_choice`` pass over every value
    return "int" if all(issubclass(t, int) for t in types) else "float"


def best_so_far(traj: Trajectory) -> list[float]:
    """Best scored reward up to each step, aligned with ``traj.steps`` (NaN before the first scored step)."""
    best, out = -math.inf, []
    for s in traj.steps:
        if s.scored:
            best = max(best, s.reward)
        out.append(best if best > -math.inf else math.nan)
    return out


def episode_returns(traj: Trajectory, confirming: Collection[int] = ()) -> dict[int, tuple[float, int]]:
    """Episode -> (sum of its rewards, number of steps); failed steps' rewards count, as the agent was paid them.
    ``confirming``: the confirmation re-runs' steps, left out: they replay the best candidates after the search,
    so as an "episode" they would read as the policy's last episode (a collapse, or a jump, that never happened)."""
    sums: dict[int, float] = defaultdict(float)
    sizes: dict[int, int] = defaultdict(int)
    for s in traj.steps:
        if s.step in confirming:
            continue
        sizes[s.episode] += 1
        if not math.isnan(s.reward):
            sums[s.episode] += s.reward
    return {ep: (sums[ep], sizes[ep]) for ep in sizes}


def returns_summary(returns: dict[int, tuple[float, int]]) -> str:
    """Episode returns in one line: their mean ± 95 % CI (Student's t over episodes), and the first and last
    quarter's means (is the policy improving?). Whole episodes only would be stricter; a run's last episode may be
    cut by agent_steps, which the per-episode table shows."""
    from cloudai.reports.confirm import t95

    values = [ret for ret, _ in returns.values()]
    n = len(values)
    if n == 0:
        return "no episode"
    mean = fmean(values)
    ci = f" ± {t95(n - 1) * stdev(values) / math.sqrt(n):.4g}" if n > 1 else ""
    line = f"{n} episode(s): mean return {mean:.6g}{ci} (95 % CI)"
    if n >= 8:
        quarter = n // 4
        line += f"; first {quarter}: mean {fmean(values[:quarter]):.6g}, last {quarter}: {fmean(values[-quarter:]):.6g}"
    return line


@dataclass
class Importance:
    """Knob -> importance (sums to 1), or empty with ``note`` saying why; ``note`` also carries Optuna's warnings."""

    values: dict[str, float] = field(default_factory=dict)
    note: str = ""
    trials: int = 0  # distinct ok configurations the ranking used
    of: int = 0  # distinct ok configurations there were (more than ``trials`` when sampled)


def param_importance(traj: Trajectory) -> Importance:
    """Optuna importance over distinct ``ok`` configurations; needs >= 2 of them and a knob that varies."""
    return importance_later(traj).result()


def importance_later(traj: Trajectory) -> Pending[Importance]:
    """``param_importance(traj)``, its Optuna part (the import and the ranking, ~0.1 s) done by a big report's aide
    when one runs (``reports.aide``): the trials to rank are chosen here, a few hundred at most."""
    ok = [s for s in traj.by_status().get("ok", []) if s.scored]
    # each configuration's earliest step, in order of its latest: one dict built in C (10^5 keys: ~2x a dictcomp)
    ok = list(dict(zip(map(attrgetter("key"), reversed(ok)), reversed(ok), strict=True)).values())
    if len(ok) < 2:
        return aide.done(Importance(note=f"needs at least 2 distinct ok trials, found {len(ok)}"))
    total = len(ok)
    ok = ok[:: math.ceil(total / MAX_IMPORTANCE_TRIALS)]  # every k-th: spread evenly over the search
    specs = {k: d for k in traj.knobs if (d := _distribution([s.action.get(k) for s in ok])) is not None}
    wide = {k: len(d[1]) for k, d in specs.items() if isinstance(d[1], list)}  # categorical: its choices
    wide = {k: n for k, n in wide.items() if n > MAX_IMPORTANCE_CATEGORIES}
    specs = {k: d for k, d in specs.items() if k not in wide}
    left_out = "; ".join(
        f"{k} left out: {n} distinct values (more than {MAX_IMPORTANCE_CATEGORIES}), too few trials per value to rank"
        for k, n in wide.items()
    )
    if not specs:
        return aide.done(Importance(note=left_out or "no knob took more than one value in the ok trials"))
    knobs = list(specs)
    rows = [({k: _choice(s.action[k]) for k in knobs}, s.reward) for s in ok if None not in map(s.action.get, knobs)]
    if len(rows) < 2:
        return aide.done(Importance(note="fewer than 2 ok trials set every varying knob"))
    return aide.later(rank_knobs, specs, rows, total, left_out)


def rank_knobs(
    specs: dict[str, Spec], rows: list[tuple[dict[str, Choice], float]], total: int, left_out: str
) -> Importance:
    """Optuna's ``get_param_importances`` of ``rows`` (each trial's params and reward) over the knobs of ``specs``
    (``_distribution``); ``total``: the distinct ok configurations sampled from; ``left_out``: why knobs are not."""
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    kinds = {"categorical": CategoricalDistribution, "int": IntDistribution, "float": FloatDistribution}
    dists = {k: kinds[kind](*bounds) for k, (kind, *bounds) in specs.items()}
    trials = [optuna.trial.create_trial(params=params, distributions=dists, value=value) for params, value in rows]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(direction="maximize")
    study.add_trials(trials)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            values = optuna.importance.get_param_importances(study)
        except (ValueError, RuntimeError, ZeroDivisionError) as exc:
            return Importance(note=f"optuna could not rank the knobs: {exc}")
    note = " ".join(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, UserWarning)))
    values = {k: float(v) for k, v in values.items()}
    notes = [n for n in (left_out, f"Optuna warned: {note}" if note else "") if n]
    return Importance(values, ". ".join(notes), len(trials), total)


def _distribution(values: list[object]) -> Spec | None:
    """A knob's Optuna distribution over its sampled values as plain data (it may go to the aide):
    ``("categorical", choices)``, ``("int", low, high)`` or ``("float", low, high)``; None under 2 values."""
    present = [_choice(v) for v in values if v is not None]
    distinct = list(dict.fromkeys(present))
    if len(distinct) < 2:
        return None
    kind = knob_kind(present)
    if kind == "categorical":
        return ("categorical", sorted(distinct, key=lambda v: (type(v).__name__, str(v))))
    numbers = [float(v) for v in present if is_number(v)]
    lo, hi = min(numbers), max(numbers)
    return ("int", int(lo), int(hi)) if kind == "int" else ("float", lo, hi)


def _choice(value: object) -> Choice:
    """A value Optuna accepts as a parameter: scalars as they are, anything else as its JSON text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return json.dumps(value, sort_keys=True)
