"""The environments a live run steps (its lanes): made in order, or leased all at once, and closed together.

A leased sandbox takes a while to start (a Slurm job: its queue wait and a server's start), so N leases taken one
after another cost N start-ups before the first step. ``Lanes`` requests them together: lane 0 is the first one
ready (the run reads the spaces from it), the others stay ``starting`` and a step given to one runs as soon as its
sandbox is ready (``Lane.wait_ready``). An in-process env is made here, in order: its constructor need not be
thread-safe. Closing closes every lane at once (a Slurm sandbox's release waits until its job left the queue) and
waits for the ones still starting, so a lease granted late is released too.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any

from cloudai.gymserver.protocol import GymServer, close_server


@dataclass(eq=False)
class Lane:
    """One environment instance and its episode: what a live step runs on."""

    env_id: int
    server: GymServer | None  # None while ``starting``
    episode: int = 0  # the global episode number of its current (or last) episode
    episodes: int = 0  # how many episodes it started (its own count: ``episode_in_env``)
    in_episode: int = 0  # steps taken in the current episode
    fresh: bool = False  # reset() ran and no step since: a second reset keeps the episode number
    open: bool = False  # an episode is running (reset ran, no done since)
    env: dict[str, Any] = field(default_factory=dict)  # env_params in force this episode
    env_from: int = 0  # the step the held env_params apply from
    busy: bool = False
    starting: Future[GymServer] | None = None  # a lease still being granted

    def wait_ready(self) -> GymServer:
        """Its server, once made (a lease still being granted is waited for; its failure is raised here)."""
        if self.starting is not None:
            self.server, self.starting = self.starting.result(), None
        assert self.server is not None
        return self.server


class Lanes:
    """``count`` environments made by ``make`` (module docstring); ``all`` in env_id order."""

    def __init__(self, make: Callable[[], GymServer], count: int, *, at_once: bool) -> None:
        self._leasing: ThreadPoolExecutor | None = None
        if not at_once or count == 1:
            servers: list[GymServer] = []
            try:
                for _ in range(count):
                    servers.append(make())
            except BaseException:
                for server in servers:
                    close_server(server)
                raise
            self.all = [Lane(env_id, server) for env_id, server in enumerate(servers)]
            return
        self._leasing = ThreadPoolExecutor(count, thread_name_prefix="cloudai-lease")
        futures = [self._leasing.submit(make) for _ in range(count)]
        try:
            first = next(as_completed(futures))
            first.result()  # a lease that failed fails the run here, before anything is written
        except BaseException:
            _close_started(futures)
            self._leasing.shutdown(wait=True)
            raise
        rest = [f for f in futures if f is not first]
        self.all = [Lane(0, first.result()), *(Lane(k, None, starting=f) for k, f in enumerate(rest, 1))]

    def close(self) -> None:
        """Close every environment at once, then the ones still starting; the first error once all are closed."""
        servers = [lane.server for lane in self.all if lane.server is not None]
        try:
            if servers:
                with ThreadPoolExecutor(len(servers), thread_name_prefix="cloudai-close") as pool:
                    closing = [pool.submit(close_server, server) for server in servers]
                for future in closing:
                    future.result()
        finally:
            _close_started([lane.starting for lane in self.all if lane.starting is not None])
            if self._leasing is not None:
                self._leasing.shutdown(wait=True)


def _close_started(futures: list[Future[GymServer]]) -> None:
    """Close the servers of ``futures`` once each is made (one that failed to start has nothing to close)."""
    for future in futures:
        if future.cancel():
            continue
        try:
            server = future.result()
        except BaseException:  # its error was the lease's, reported where it was waited for
            continue
        close_server(server)
