"""Searches replayed on an exhaustively evaluated Aiconfigurator grid (``aiconfigurator_grid.py``'s CSV).

Each trial is a table lookup, so the comparison is of the samplers alone: % of the exhaustive optimum of
tokens/s/GPU after 50 and 200 trials, without and with the SLA (TTFT <= 1000 ms, TPOT <= 30 ms).
"""

from __future__ import annotations

import csv
import random
import statistics
from collections.abc import Callable
from pathlib import Path

import optuna

KNOBS = ("p_tp", "p_bs", "p_workers", "d_tp", "d_bs", "d_workers")
Point = tuple[int, ...]
Table = dict[Point, tuple[float, float, float] | None]  # point -> (ttft, tpot, tokens/s/gpu), None: refused (OOM)


def load(path: Path) -> tuple[Table, dict[str, list[int]]]:
    table: Table = {}
    with path.open() as f:
        for row in csv.DictReader(f):
            point = tuple(int(row[k]) for k in KNOBS)
            ok = row["ok"] == "1"
            table[point] = (
                (float(row["ttft_ms"]), float(row["tpot_ms"]), float(row["tokens_per_s_per_gpu"])) if ok else None
            )
    values = {k: sorted({p[i] for p in table}) for i, k in enumerate(KNOBS)}
    return table, values


def score(table: Table, point: Point, sla: bool) -> float | None:
    """tokens/s/GPU, or None when the point is infeasible (refused, or outside the SLA)."""
    found = table.get(point)
    if found is None or (sla and (found[0] > 1000 or found[1] > 30)):
        return None
    return found[2]


def best_after(scores: list[float | None], n: int) -> float:
    return max((s for s in scores[:n] if s is not None), default=0.0)


def random_search(table: Table, values: dict[str, list[int]], sla: bool, seed: int, n: int) -> list[float | None]:
    points = random.Random(seed).sample(sorted(table), n)
    return [score(table, p, sla) for p in points]


def plain_tpe(table: Table, values: dict[str, list[int]], sla: bool, seed: int, n: int) -> list[float | None]:
    """Optuna's TPE out of the box: categorical knobs (as a CloudAI list), an infeasible point scores 0."""
    scores: list[float | None] = []

    def objective(trial: optuna.Trial) -> float:
        point = tuple(int(trial.suggest_categorical(k, values[k])) for k in KNOBS)
        scores.append(score(table, point, sla))
        return scores[-1] or 0.0

    optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed)).optimize(objective, n)
    return scores


def ordinal_tpe(table: Table, values: dict[str, list[int]], sla: bool, seed: int, n: int) -> list[float | None]:
    """TPE told what the space knows: each knob an ordinal integer (the index into its sorted values: batch sizes
    are powers of two, so their index is their log), knobs modelled jointly (multivariate), and an infeasible
    point (out of memory, outside the SLA) told as a violated constraint rather than as a score."""
    scores: list[float | None] = []

    def objective(trial: optuna.Trial) -> float:
        point = tuple(values[k][trial.suggest_int(k, 0, len(values[k]) - 1)] for k in KNOBS)
        scores.append(score(table, point, sla))
        trial.set_user_attr("violation", 0.0 if scores[-1] is not None else 1.0)
        return scores[-1] or 0.0

    sampler = optuna.samplers.TPESampler(
        seed=seed, multivariate=True, constraints_func=lambda t: [t.user_attrs["violation"]], n_startup_trials=10
    )
    optuna.create_study(direction="maximize", sampler=sampler).optimize(objective, n)
    return scores


Strategy = Callable[[Table, dict[str, list[int]], bool, int, int], list[float | None]]
STRATEGIES: dict[str, Strategy] = {"random": random_search, "plain TPE": plain_tpe, "ordinal TPE": ordinal_tpe}


def report(path: Path, seeds: int) -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    table, values = load(path)
    valid = sum(v is not None for v in table.values())
    print(f"landscape: {len(table)} points, {valid} valid (the rest out of memory or refused)")
    for sla in (False, True):
        feasible = [s for p in table if (s := score(table, p, sla)) is not None]
        optimum = max(feasible)
        label = "with SLA (TTFT <= 1000 ms, TPOT <= 30 ms)" if sla else "without SLA"
        print(f"{label}: {len(feasible)} feasible ({100 * len(feasible) / len(table):.0f} %), optimum {optimum:.1f}")
        for name, strategy in STRATEGIES.items():
            runs = [strategy(table, values, sla, seed, 200) for seed in range(seeds)]
            at = {n: statistics.median(100 * best_after(r, n) / optimum for r in runs) for n in (50, 200)}
            print(f"  {name:>12}: median % of optimum after 50: {at[50]:.1f}, after 200: {at[200]:.1f} ({seeds} seeds)")
