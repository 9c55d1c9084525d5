"""``grid_search``: every point of the grid, once, in the space's fixed mixed-radix order.

The grid is never materialised: the agent keeps one index and asks ``Space.grid_point(i)``,
so a 10^9-point grid costs O(1) memory. ``agent_steps`` caps the sweep (the run loop stops
asking); ``select_action`` returns None once the grid is exhausted. A range joins the grid
only with ``grid_points`` (otherwise construction raises ``ConfigError``).

Resume: steps replayed through ``update_policy`` before the first ask mark their grid
points as done; the sweep then walks the grid from the start and skips them, so gaps left
by parallel trials that never finished are filled and no completed point is asked again.
Warm-start trials (earlier runs) are ignored: a sweep measures every point in this run.

The workload's rule (``env.valid_points()``): points that break it are skipped before they are asked, so they
take no step and ``agent_steps`` counts valid trials only (the rule is evaluated a chunk of grid indices at a
time, vectorised when the workload allows it: ``cloudai.workloads.validity``).
"""

from __future__ import annotations

from typing import Any

from cloudai.agents.base import AgentConfig, BaseAgent
from cloudai.envs.base import BaseGym, Feedback, Observation


class GridSearchAgent(BaseAgent):
    name = "grid_search"
    samples_env_params = False  # a sweep compares points; a randomized env would make that meaningless
    asks_depend_on_feedback = False

    def __init__(self, env: BaseGym, config: AgentConfig, max_steps: int) -> None:
        super().__init__(env, config, max_steps)
        self.space = env.define_action_space()
        self.size = self.space.grid_size  # raises ConfigError for a range without grid_points
        self._next = 0
        self._done: set[int] = set()  # grid indices recorded before this process (resume)
        self.rule = env.valid_points()

    def select_action(self, observation: Observation) -> tuple[int, dict[str, Any]] | None:
        while True:
            while self._next in self._done:
                self._done.discard(self._next)  # passed: never needed again
                self._next += 1
            valid = self._next if self.rule is None or self._next >= self.size else self.rule.next_valid(self._next)
            if valid == self._next:
                break
            self._next = self.size if valid is None else valid
        if self._next >= self.size:
            points = f"{self.size} point(s)" if self.rule is None else self.rule.summary()
            self.stop_reason = f"the grid has {points}, all tried (fewer than agent_steps)"
            return None
        point = self.space.grid_point(self._next)
        self._next += 1
        return self.env.next_step, point

    def update_policy(self, feedback: Feedback) -> None:
        if feedback.info.get("warm_start"):
            return  # a sweep learns nothing: an earlier run's point is measured again in this one
        try:
            index = self.space.grid_index(feedback.action)
        except (KeyError, ValueError):
            return  # not a point of this grid (e.g. the space changed since the recorded run)
        if index >= self._next:
            self._done.add(index)
