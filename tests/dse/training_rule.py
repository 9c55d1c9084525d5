"""A test-local training workload with CloudAI's NeMoRun validity rule, and an in-process env over it.

``ToyTraining`` (a ``BashCmd``: its trials run the tests' stand-in model) declares the rule both ways, scalar
(``constraint``) and vectorised (``constraint_mask``), and derives dp: tp*pp*cp must divide the GPUs,
dp = GPUs / (tp*pp*cp), gbs divisible by mbs*dp, (num_layers / pp) divisible by vp. Without a system's
``gpus_per_node`` (standalone) a node has ``GPUS_PER_NODE``.

``ModelEnv`` is a ``BaseGym`` whose step is an analytic throughput model of those knobs (no job), for agent
tests and ``benchmarks/bench_constraints.py``. ``aware=False`` hides the rule from the agent, as CloudAI does:
an invalid point then costs a step (status ``constraint``).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.space import Space
from cloudai.workloads.base import ONE_NODE, ResourceColumns, Resources
from cloudai.workloads.bash_cmd import BashCmd
from cloudai.workloads.validity import ValidPoints

GPUS_PER_NODE = 8
NUM_LAYERS = 32


def _gpus(resources: Resources | ResourceColumns) -> Any:
    return resources.num_nodes * (resources.gpus_per_node or GPUS_PER_NODE)


class ToyTraining(BashCmd):
    name = "ToyTraining"

    def constraint(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> str | None:
        tp, pp, cp, vp, mbs, gbs = (int(args[k]) for k in ("tp", "pp", "cp", "vp", "mbs", "gbs"))
        layers, gpus = int(args.get("num_layers", NUM_LAYERS)), _gpus(resources)
        if gpus % (tp * pp * cp):
            return f"tp*pp*cp = {tp * pp * cp} does not divide the {gpus} GPUs"
        dp = gpus // (tp * pp * cp)
        if gbs % (mbs * dp):
            return f"gbs = {gbs} is not a multiple of mbs*dp = {mbs * dp}"
        if layers % pp or (layers // pp) % vp:
            return f"num_layers/pp = {layers / pp:g} is not a multiple of vp = {vp}"
        return None

    def constraint_mask(self, columns: Mapping[str, np.ndarray], resources: ResourceColumns) -> np.ndarray:
        c = columns
        layers, gpus = c.get("num_layers", np.asarray(NUM_LAYERS)), _gpus(resources)
        model = c["tp"] * c["pp"] * c["cp"]
        dp = np.maximum(gpus // model, 1)
        return (
            (gpus % model == 0)
            & (c["gbs"] % (c["mbs"] * dp) == 0)
            & (layers % c["pp"] == 0)
            & ((layers // c["pp"]) % c["vp"] == 0)
        )

    def derived(self, args: Mapping[str, Any], resources: Resources = ONE_NODE) -> dict[str, Any]:
        return {"dp": _gpus(resources) // (int(args["tp"]) * int(args["pp"]) * int(args["cp"]))}


def throughput(point: Mapping[str, Any], gpus: int) -> float:
    """Tokens/s (arbitrary units) of a valid point: micro-batch efficiency, tensor/context-parallel communication,
    the pipeline bubble (shrunk by virtual stages) and the data-parallel all-reduce."""
    tp, pp, cp, vp, mbs, gbs = (int(point[k]) for k in ("tp", "pp", "cp", "vp", "mbs", "gbs"))
    dp = gpus // (tp * pp * cp)
    micro = gbs // (mbs * dp)
    bubble = (pp - 1) / (vp * micro + pp - 1)
    memory = 1.0 if mbs * 6 / (tp * cp) + 40 / (tp * pp) <= 60 else 0.35  # too big: recomputation
    efficiency = mbs / (mbs + 0.6) / (1 + 0.09 * (tp - 1)) / (1 + 0.06 * (cp - 1)) / (1 + 0.02 * vp * (pp > 1))
    return 1000.0 * gpus * efficiency * (1 - bubble) * memory / (1 + 0.03 * math.log2(dp) + 0.2 / math.sqrt(gbs))


class ModelEnv(BaseGym):
    """Steps are ``throughput`` (no job); ``rows`` holds every recorded step as ``(step, action, status)``, ``times``
    when each was recorded (``time.perf_counter``) and ``rewards`` its reward."""

    def __init__(self, space: Space, num_nodes: int = 1, aware: bool = True) -> None:
        super().__init__()
        self.space, self.aware, self.num_nodes = space, aware, num_nodes
        self.rule = ValidPoints(space, ToyTraining(), GPUS_PER_NODE)
        self.rows: list[tuple[int, dict[str, Any], str]] = []
        self.times: list[float] = []
        self.rewards: list[float] = []
        self._refused: set[str] = set()
        self._seen: dict[str, float] = {}
        self._next = 1

    def define_action_space(self) -> Space:
        return self.space

    def define_observation_space(self) -> list[str]:
        return ["throughput"]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        return [math.nan], {}

    @property
    def next_step(self) -> int:
        return self._next

    def valid_points(self) -> ValidPoints | None:
        return self.rule if self.aware else None

    def reject(self, action: dict[str, Any], reason: str) -> Feedback:
        key = json.dumps(action, sort_keys=True, default=str)
        if key not in self._refused:
            self._refused.add(key)
            self._record(self._next, action, "infeasible", -1.0)
            self._next += 1
            return Feedback(self._next - 1, 1, dict(action), -1.0, [math.nan], "infeasible", info={"reason": reason})
        return super().reject(action, reason)

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        step, key = self._next, json.dumps(action, sort_keys=True, default=str)
        self._next += 1
        why = self.rule.violation(action)
        if key in self._seen:
            status, reward = "cached", self._seen[key]
        elif why is not None:  # a rule-blind agent's point: it costs a step, as a CloudAI constraint step does
            status, reward = "constraint", -1.0
        else:
            status, reward = "ok", throughput(self.space.full(action), self.num_nodes * GPUS_PER_NODE)
            self._seen[key] = reward
        self._record(step, action, status, reward)
        return [reward if status != "constraint" else math.nan], reward, False, {"status": status, "reason": why or ""}

    def _record(self, step: int, action: dict[str, Any], status: str, reward: float) -> None:
        self.rows.append((step, dict(action), status))
        self.times.append(time.perf_counter())
        self.rewards.append(reward)
