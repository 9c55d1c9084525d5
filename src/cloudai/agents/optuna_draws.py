"""The optuna agent's valid points of a finite space (``optuna_agent``'s module docstring): the mask TPE's
candidates are judged by (``validity``, for ``optuna_valid``), and the valid point enqueued after ``HELP_AFTER``
refusals in a row (``valid_draw``). Plain functions of the env's rule, the space and the agent's generator."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from optuna.distributions import BaseDistribution, IntDistribution

from cloudai.agents.neighbours import ordinal_values
from cloudai.agents.optuna_valid import Validity
from cloudai.envs.base import BaseGym
from cloudai.space import Categorical, Space, first_value

_INDEX_DRAWS = 100_000  # grid indices drawn (and checked by the rule) for one valid point
_DRAW_BATCH = 4096  # ... judged at once where the rule is vectorised
_DRAW_CHECKED = 16  # of a batch's valid ones, how many get the full check (a memory estimate each)
_BRANCH_DRAWS = 2_000  # canonical points drawn for one valid point of a space with branches
_BRANCH_WALK = 1 << 16  # grid indices a space with branches walks from a refused proposal


def validity(
    env: BaseGym, space: Space, distributions: Mapping[str, BaseDistribution], param: Callable[[str], str]
) -> Validity | None:
    """The mask of TPE's candidates (``optuna_valid``): each param's internal representation (a list's index;
    with ``ordinal``, the index of its sorted values; a range's value) mapped to the knob's value, the rule's
    vectorised mask over those. None: no vectorised rule to ask. ``param``: the Optuna param of a knob
    (``OptunaAgent._param``), ``distributions`` by param."""
    rule = env.valid_points()
    if rule is None or rule.mask_values({d.name: np.asarray([first_value(d)]) for d in space.dims}) is None:
        return None
    value_of: dict[str, tuple[str, Callable[[np.ndarray], np.ndarray]]] = {}
    for d in space.dims:
        name = param(d.name)
        if isinstance(d, Categorical):
            values = ordinal_values(d) if isinstance(distributions[name], IntDistribution) else None
            at = np.asarray([d.choices.index(v) for v in values or d.choices], dtype=np.int64)
            table = rule.grid_array(d.name)[at]
            value_of[name] = (d.name, lambda c, t=table: t[c.astype(np.int64)])
        else:  # a range: TPE draws its values (an int range's as floats)
            value_of[name] = (d.name, (lambda c: np.rint(c).astype(np.int64)) if d.dtype == "int" else np.asarray)

    def valid(candidates: dict[str, np.ndarray]) -> np.ndarray | None:
        if candidates.keys() == value_of.keys():
            return rule.mask_values({name: to(candidates[p]) for p, (name, to) in value_of.items()})
        if not space.when or not candidates or not candidates.keys() <= value_of.keys():
            return None  # one param at a time (independent sampling): not a whole point to judge
        return _group_mask(rule, space, {value_of[p][0]: to(c) for p, c in candidates.items()
                                         for to in [value_of[p][1]]})  # fmt: skip

    return valid


_GROUP_FILLS = 16  # values of the other groups' knobs a group's candidates are judged with, at most


def _group_mask(rule: Any, space: Space, columns: dict[str, np.ndarray]) -> np.ndarray | None:
    """The mask of one group's candidates in a space with branches (TPE's ``group=True`` samples each branch's
    knobs apart from the others, ``OptunaAgent._ask``): the branch they belong to fixes its selector, a knob of a
    branch not chosen sits at its first value (as the env records it, ``Space.canonical``), and a point is valid
    when it is for some value of each remaining knob (the shared ones: quantisation modes), so the mask never
    refuses a point the rule allows. None: too many such values (``_GROUP_FILLS``)."""
    size = len(next(iter(columns.values())))
    chosen = {space.when[name] for name in columns if name in space.when}  # (selector, value) of the branch
    selectors = dict(chosen) if len({sel for sel, _ in chosen}) == len(chosen) else {}
    free: list[Categorical] = []
    for d in space.dims:
        if d.name in columns:
            continue
        if d.name in selectors:
            columns[d.name] = np.full(size, selectors[d.name])
        elif d.name in space.when and space.when[d.name] not in chosen and space.when[d.name][0] in selectors:
            columns[d.name] = np.full(size, first_value(d))  # another branch's knob: inactive here
        elif isinstance(d, Categorical):
            free.append(d)
        else:
            return None
    if math.prod(len(d.choices) for d in free) > _GROUP_FILLS:
        return None
    out = np.zeros(size, dtype=bool)
    for values in itertools.product(*(d.choices for d in free)):
        fill = {d.name: np.full(size, v) for d, v in zip(free, values, strict=True)}
        mask = rule.mask_values({**columns, **fill})
        if mask is None:
            return None
        out |= mask
    return out


def valid_draw(
    env: BaseGym, space: Space, rng: np.random.Generator, proposed: dict[str, Any] | None
) -> dict[str, Any] | None:
    """A valid point of a finite space: the first valid one after ``proposed`` in grid order (the last knobs
    changed, the first kept: what the sampler meant), else a uniformly drawn one; None: no rule, a range, none
    found. A space with branches draws canonical points (each knob at random, then ``Space.canonical``), not
    grid indices: its grid is the product of every branch's knobs, where canonical points are too sparse to hit
    (135 936 of 3.5 x 10^10 on ``aiconf_moe``)."""
    rule = env.valid_points()
    if rule is None or not all(isinstance(d, Categorical) for d in space.dims):
        return None
    if proposed is not None:
        start = space.grid_index(proposed)
        # near it (branches: a walk over the product grid may cross millions of repeats: one chunk)
        index = rule.next_valid(start, start + (_BRANCH_WALK if space.when else _DRAW_BATCH))
        if index is not None and env.violation(point := space.grid_point(index)) is None:
            return point
    if space.when:
        return _canonical_draw(env, space, rng, rule)
    dims = [d for d in space.dims if isinstance(d, Categorical)]
    for _ in range(_INDEX_DRAWS // _DRAW_BATCH):  # vectorised: a batch of uniform draws judged at once
        at = {d.name: rng.integers(0, len(d.choices), _DRAW_BATCH) for d in dims}
        mask = rule.mask_at(at)
        if mask is None:
            break
        for i in np.flatnonzero(mask)[:_DRAW_CHECKED]:
            point = {d.name: d.choices[int(at[d.name][i])] for d in dims}
            if env.violation(point) is None:  # env_params: the rule with this step's draw
                return point
    else:
        return None
    for index in rng.integers(0, space.grid_size, _INDEX_DRAWS):
        if rule.is_valid(int(index)):
            point = space.grid_point(int(index))
            if env.violation(point) is None:  # env_params: the rule with this step's draw
                return point
    return None


def _canonical_draw(env: BaseGym, space: Space, rng: np.random.Generator, rule: Any) -> dict[str, Any] | None:
    """A uniformly drawn valid canonical point of a branched space (``valid_draw``), or None."""
    dims = space.dims
    for _ in range(_BRANCH_DRAWS):
        drawn = {d.name: d.grid_values[int(rng.integers(len(d.grid_values)))] for d in dims}
        point = space.canonical(drawn)
        if rule.is_valid(space.grid_index(point)) and env.violation(point) is None:
            return point
    return None
