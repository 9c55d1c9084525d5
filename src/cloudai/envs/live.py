"""``LiveGymEnv``: one live-RL (test, iteration) as a ``BaseGym``; a step is one step of a ``GymServer``.

The sibling of ``CloudAIGymEnv``, built by ``cloudai.run.dse.build_env`` from the same ``TrialSetup``
(``workload`` is None: there is no job). What differs from offline DSE:

* Spaces come from the server. Its ``action_space()`` is the offer; the test's ``cmd_args``
  narrow a knob (a list or a ``{low, high}`` range inside the offer) or fix it (a scalar, sent
  with every step). A list/range in ``cmd_args`` that is neither a server knob nor an env_param
  is a ``ConfigError``. The observation is the server's, in ``agent_metrics`` order (not set:
  the server's ``observation_space()`` order).
* The reward is the server's (``agent_reward_function`` is not applied). A non-finite reward
  (a remote ``null``) is recorded as ``failed`` with the penalty reward; a step whose
  ``info["status"]`` the server set to ``failed``, ``constraint`` or ``timeout`` (``cloudai
  serve`` does, over the wire) is recorded with that status, its ``info["reason"]`` and the
  penalty reward (the reason made printable and cut: ``cloudai.untrusted``); every other step is ``ok``.
  Nothing is cached: a live environment moves on between two equal actions.
* Episodes honour ``done``. ``reset()`` starts an episode (the first one, after ``done``, and
  after ``--resume``, whose server state is gone): the ``episode`` column increments, step
  numbers do not restart. A ``step`` after ``done`` without a ``reset`` resets first.
* env_params: the sampler's draw for an episode's first step is passed to the server at the
  episode start, ``reset(seed, options={"env_params": ...})``, and stays in force until the
  next reset; each step's ``info["env_params"]`` and env.csv row record what was in force.
  ``env_param_sampler()`` answers peeks (the contextual ``bandit``) with those same values.
* Any failure of the server (its own ``GymServerError``, or anything an in-process class
  raises) is a ``GymServerError`` naming the server and the call; ``cloudai.run.dse`` then writes
  ``dse_failure.txt``. Every step finished before it is already in trajectory.csv: rows are
  flushed as they are written (a killed process loses none) and fsync'ed every ``SYNC_S``.
* Several environments at once (``agent_config.max_parallel = N``, ``setup.max_in_flight``): the env holds N
  *lanes*, each its own server instance (N in-process objects, N WebSocket sessions, N leases) with its own
  episode. ``step_async`` starts a step on a free lane in a worker thread; a lane whose episode ended resets
  itself before its next step. Steps are numbered at ask time and written in step order (a step that finished
  early waits in memory). Episode numbers are global (each lane's reset takes the next one), so an episode id
  in trajectory.csv never names two episodes; ``episodes.jsonl`` also says which environment (``env_id``) and
  which of its episodes each step belongs to. ``step``/``reset`` (the Gymnasium adapter's and ``cloudai
  serve``'s calls) drive lane 0.
* ``episodes.jsonl`` (``cloudai.trajectory.episodes``): one JSON object per step for trainers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from cloudai.envs.base import BaseGym, Feedback, Observation
from cloudai.envs.env_params import EnvParamSampler
from cloudai.envs.knobs import check_action, observation_leaves
from cloudai.envs.lanes import Lane, Lanes
from cloudai.envs.outcome import as_float, step_status
from cloudai.envs.resume import replayed
from cloudai.envs.trial import TrialSetup
from cloudai.errors import ConfigError, GymServerError, Problem, did_you_mean
from cloudai.gymserver.factory import create_gym_server, is_reserved
from cloudai.gymserver.layout import ObservationLayout
from cloudai.gymserver.spaces import narrow_space, to_dimension
from cloudai.space import Space, flatten, is_range
from cloudai.trajectory.episodes import EpisodeLog
from cloudai.trajectory.records import TrajectoryWriter

DEFAULT_METRICS = ("default",)
SYNC_S = 0.2  # rows are flushed each step, fsync'ed at most this often: a step takes microseconds
T = TypeVar("T")


@dataclass
class _Done:
    """A finished step, before it is written (steps are written in step order)."""

    lane: Lane
    step: int
    episode: int
    episode_in_env: int
    in_episode: int
    action: dict[str, Any]
    observation: Observation
    reward: float
    done: bool
    status: str
    reason: str
    elapsed_s: float
    env: dict[str, Any]
    info: dict[str, Any]


class LiveGymEnv(BaseGym):
    live = True

    def __init__(self, setup: TrialSetup) -> None:
        """Construct (or connect to) the server and read its spaces, then open the records.

        Bad config is a ``ConfigError``; nothing is written before the server answered.
        """
        super().__init__()
        entry = setup.entry
        self.setup = setup
        self.record_dir = setup.out_dir
        self.objectives = entry.agent.objectives
        self.env_names = tuple(setup.sampler.names) if setup.sampler else ()
        prefix = f"{entry.field_prefix}.cmd_args"
        cmd_args = {k: v for k, v in entry.cmd_args.items() if k not in self.env_names}
        declared = flatten(cmd_args)
        wanted = None if tuple(entry.agent.metrics) == DEFAULT_METRICS else list(entry.agent.metrics)
        self._held_lanes = Lanes(  # leased ones requested at once (envs.lanes)
            lambda: create_gym_server(cmd_args, metrics=wanted, prefix=prefix, record_dir=setup.out_dir),
            max(1, setup.max_in_flight),
            at_once=bool(cmd_args.get("env_lease_url")),
        )
        self._lanes = self._held_lanes.all
        self.server = self._lanes[0].wait_ready()
        kind = type(self.server)
        self._where = getattr(self.server, "url", None) or f"{kind.__module__}.{kind.__qualname__}"
        try:
            self.action_space, self._fixed = self._spaces(declared, prefix)
            names = self._call("observation_space", self.server.observation_space)
            self.layout = ObservationLayout(names)  # one column per value, a box leaf of width n its n columns
            self.metrics = tuple(self.layout.select(wanted, f"{entry.field_prefix}.agent_metrics"))
            self._slots = [self.layout.columns.index(m) for m in self.metrics]
        except BaseException:
            self._held_lanes.close()
            raise
        self.max_in_flight = len(self._lanes)
        encode = getattr(self.server, "encode_observation", None)
        if callable(encode):  # CloudAI's hook (PR #934): the adapter asks the env for it
            self.encode_observation = encode
        self.writer = TrajectoryWriter(setup.out_dir, self.env_names, resume=setup.resume, sync_interval_s=SYNC_S)
        self.episodes = EpisodeLog(setup.out_dir, self.writer.last_step, resume=setup.resume)
        self._history = [replayed(row, setup.space, self.metrics) for row in self.writer.rows]
        self._next = self.writer.last_step + 1
        self._episode = max((f.episode for f in self._history), default=0)  # the last episode number taken
        self._stepping = False  # inside the server's step call (a failure there is step next_step's)
        self._failed_step = 0  # a step that failed in a worker thread (what a failure report names)
        self._pool: ThreadPoolExecutor | None = None  # worker threads, made at the first step_async
        self._running: dict[Future[_Done], int] = {}  # step_async's steps in flight, by step
        self._unwritten: dict[int, _Done | None] = {}  # asked steps not yet written (None: still running)

    # -- BaseGym -----------------------------------------------------------------------------

    def define_action_space(self) -> Space:
        return self.action_space

    def define_observation_space(self) -> list[str]:
        return list(self.metrics)

    def observation_descriptors(self) -> dict[str, Any] | None:
        """The recorded leaves, by dotted path, in ``agent_metrics`` order (for the Gymnasium adapter and ``serve``);
        None when the observation is flat, or when ``agent_metrics`` takes part of a leaf only. A server with
        CloudAI's hook pair (``structured_observation_descriptors`` + ``encode_observation``) describes the
        encoded observation: its descriptors are passed on whole, and ``encode_observation`` with them."""
        own = observation_leaves(self.server)
        if own is not None and callable(getattr(self.server, "encode_observation", None)):
            return dict(own)
        if self.layout.structured:
            return self.layout.leaves_for(self.metrics)
        return own if own is not None and ObservationLayout(own).columns == list(self.metrics) else None

    @property
    def next_step(self) -> int:
        return self._next

    @property
    def last_started(self) -> int:
        """``next_step`` is taken only once the server answered: a step that failed inside it is ``next_step``."""
        if self._failed_step:
            return self._failed_step
        return self._next if self._stepping else self._next - 1

    def history(self) -> list[Feedback]:
        return list(self._history)

    def env_param_sampler(self) -> EnvParamSampler | None:
        """The env_params sampler, answering for the running episode with the values in force."""
        base = self.setup.sampler
        return None if base is None else _EpisodeSampler(base, self._held)

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict]:
        """Start an episode on lane 0 (the other lanes start theirs at their first step); its first step will be
        ``next_step``."""
        return self._reset(self._lanes[0], self._next, seed, options)

    def step(self, action: dict[str, Any]) -> tuple[Observation, float, bool, dict]:
        done = self._step_one(action)
        return done.observation, done.reward, done.done, done.info

    def _step_one(self, action: dict[str, Any]) -> _Done:
        """One step of lane 0 in this thread, written before it returns."""
        check_action(self.action_space, action)
        lane = self._lanes[0]
        if lane.busy:
            raise RuntimeError("step() while step_async() steps are in flight on lane 0: wait for them first")
        step = self._next
        self._stepping = True
        done = self._run(lane, step, action)
        self._stepping = False
        self._next += 1
        self._unwritten[step] = done
        self._write_ready()
        return done

    def step_async(self, action: dict[str, Any], env_params: Mapping[str, Any] | None = None) -> int:
        """Start a step on a free environment in a worker thread; ``step_wait`` hands it out. ``env_params``:
        refused (a live episode's are drawn at its start)."""
        if env_params is not None:
            raise ConfigError("a live env draws env_params per episode; it cannot measure under given ones")
        if len(self._lanes) == 1:  # one environment: step it here (no thread hop on live RL's hot path)
            done = self._step_one(action)
            self._ready.append(_feedback(done))
            return done.step
        check_action(self.action_space, action)
        lane = next((lane for lane in self._lanes if not lane.busy), None)
        if lane is None:
            raise RuntimeError(f"step_async with all {len(self._lanes)} environments busy: call step_wait first")
        if self._pool is None:
            self._pool = ThreadPoolExecutor(len(self._lanes), thread_name_prefix="cloudai-live")
        step = self._next
        self._next += 1
        lane.busy = True
        self._unwritten[step] = None
        self._running[self._pool.submit(self._run, lane, step, dict(action))] = step
        return step

    def step_wait(self, timeout: float | None = None) -> list[Feedback]:
        """Every step finished so far (at least one when any is in flight, unless ``timeout`` passes first)."""
        if not self._running:
            return super().step_wait(timeout)
        finished, _ = wait(list(self._running), timeout=timeout, return_when=FIRST_COMPLETED)
        out: list[Feedback] = []
        for future in finished:
            step = self._running.pop(future)
            try:
                done = future.result()
            except BaseException:
                self._failed_step = step
                self._unwritten.pop(step, None)
                raise
            done.lane.busy = False
            self._unwritten[step] = done
            out.append(_feedback(done))
        self._write_ready()
        return out

    def close(self) -> None:
        """Stop the worker threads, write what finished, close every server (remote sessions, leases) and the
        records. Safe to call twice."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            for future, step in list(self._running.items()):
                if future.done() and future.exception() is None:
                    self._unwritten[step] = future.result()
            self._running.clear()
        try:
            for step in sorted(s for s, d in self._unwritten.items() if d is not None):  # gaps allowed
                self._write(self._unwritten.pop(step))  # type: ignore[arg-type]
        finally:
            try:
                self._held_lanes.close()
            finally:
                self.writer.close()
                self.episodes.close()

    # -- one lane ----------------------------------------------------------------------------

    def _reset(
        self, lane: Lane, step: int, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict]:
        if not lane.fresh:
            self._episode += 1
            lane.episode = self._episode
            lane.episodes += 1
        sampler = self.setup.sampler
        lane.env = sampler.sample(step) if sampler else {}
        lane.env_from = step
        if sampler:
            options = {**(options or {}), "env_params": dict(lane.env)}
        server = lane.wait_ready()
        raw, info = self._call("reset", lambda: server.reset(seed=seed, options=options))
        lane.fresh = lane.open = True
        lane.in_episode = 0
        return self._observe(self.layout.flat(raw)[0]), {**info, "episode": lane.episode, "env_params": dict(lane.env)}

    def _run(self, lane: Lane, step: int, action: dict[str, Any]) -> _Done:
        """One step of ``lane`` (in the caller's or a worker thread; on a lane still starting, once it is ready);
        nothing written."""
        if not lane.open:
            self._reset(lane, step)
        started = time.monotonic()
        server = lane.wait_ready()
        raw, reward, ended, server_info = self._call("step", lambda: server.step({**self._fixed, **action}))
        done = bool(ended)
        lane.fresh, lane.open = False, not done
        lane.in_episode += 1
        values, problem = self.layout.flat(raw, self.metrics)
        observation = self._observe(values)
        status, reason = step_status(reward, server_info)
        if status == "ok" and problem:  # never a silent null, NaN, truncation or shifted value
            status, reason = "failed", problem
        reward = as_float(reward) if status == "ok" else self.setup.penalty_reward
        metrics = dict(zip(self.metrics, observation, strict=True))
        info = {**server_info, "status": status, "reason": reason, "step": step, "episode": lane.episode,
                "env_params": dict(lane.env), "metrics": metrics, "done": done, "env_id": lane.env_id}  # fmt: skip
        elapsed = time.monotonic() - started
        return _Done(lane, step, lane.episode, lane.episodes, lane.in_episode, dict(action), observation, reward, done,
                     status, reason, elapsed, dict(lane.env), info)  # fmt: skip

    def _write_ready(self) -> None:
        """Write the finished steps that no earlier step still waits for, in step order."""
        while self._unwritten:
            first = min(self._unwritten)
            done = self._unwritten[first]
            if done is None:
                return
            del self._unwritten[first]
            self._write(done)

    def _write(self, done: _Done) -> None:
        self.writer.append(step=done.step, episode=done.episode, action=done.action, reward=done.reward,
                           observation=done.observation, status=done.status, elapsed_s=done.elapsed_s, env=done.env,
                           reason=done.reason)  # fmt: skip
        self.episodes.append(
            step=done.step, episode=done.episode, env_id=done.lane.env_id, episode_in_env=done.episode_in_env,
            step_in_episode=done.in_episode, observation=self._shaped(done.observation), action=done.action,
            reward=done.reward,
            terminated=done.done, truncated=bool(done.info.get("truncated", False)), status=done.status,
            reason=done.reason, env_params=done.env,
        )  # fmt: skip
        if self.setup.on_step is not None:
            self.setup.on_step(_feedback(done))

    # -- helpers -----------------------------------------------------------------------------

    def _spaces(self, declared: Mapping[str, Any], prefix: str) -> tuple[Space, dict[str, Any]]:
        """The server's offer narrowed by ``cmd_args``; a declared list/range the server lacks is an error."""
        offered = self._call("action_space", self.server.action_space)
        knobs = {k: v for k, v in declared.items() if not is_reserved(k)}
        strays = [name for name, v in knobs.items() if name not in offered and (isinstance(v, list) or is_range(v))]
        if strays:
            raise ConfigError(problems=[
                Problem(None, f"{prefix}.{name}", f"{self._where} has no knob '{name}' (and it is no env_param)",
                        did_you_mean(name, offered))
                for name in strays
            ])  # fmt: skip
        dims, fixed = narrow_space(dict(offered), knobs, prefix=prefix)
        space = self.setup.space  # a declared dimension keeps its TOML details (grid_points, log)
        chosen = tuple(space.dim(n) if n in space.names else to_dimension(n, spec) for n, spec in dims.items())
        return Space(fixed, chosen), fixed

    def _held(self, step: int) -> dict[str, Any] | None:
        lane = self._lanes[0]
        return dict(lane.env) if lane.open and step >= lane.env_from else None

    def _observe(self, values: list[Any]) -> Observation:
        """The ``agent_metrics`` of an observation's columns (``ObservationLayout.flat``), NaN where one is missing."""
        return [as_float(values[i]) if i < len(values) else math.nan for i in self._slots]

    def _shaped(self, observation: Observation) -> Observation | dict[str, Any]:
        """A step's observation as ``episodes.jsonl`` holds it: the declared leaves when structured, else the list."""
        return self.layout.nested(self.metrics, observation) if self.layout.structured else observation

    def _call(self, call: str, fn: Callable[[], T]) -> T:
        """``fn()``, with anything but our own errors turned into a ``GymServerError`` naming the server."""
        try:
            return fn()
        except (GymServerError, ConfigError):
            raise
        except Exception as exc:
            raise GymServerError(f"{type(exc).__name__}: {exc}", where=self._where, call=call) from exc


class _EpisodeSampler(EnvParamSampler):
    """The env's sampler, answering for the running episode with the values in force (see the module docstring)."""

    def __init__(self, base: EnvParamSampler, held: Callable[[int], dict[str, Any] | None]) -> None:
        vars(self).update(vars(base))  # the same seed, names and params; only ``sample`` differs
        self._draw, self._held = base.sample, held

    def sample(self, step: int) -> dict[str, Any]:
        held = self._held(step)
        return held if held is not None else self._draw(step)


def _feedback(done: _Done) -> Feedback:
    return Feedback(done.step, done.episode, done.action, done.reward, done.observation, done.status, done.done,
                    done.info)  # fmt: skip
