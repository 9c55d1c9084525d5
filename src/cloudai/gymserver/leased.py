"""``LeasedGymServer``: a ``GymServer`` that is a sandbox leased from a control plane (``env_lease_url``).

It takes a lease when built (``LeaseClient.acquire``: the sandbox is ready), drives the sandbox's ``url`` with the
OpenEnv client (``RemoteGymServer``) and releases the lease in ``close()``, which the live env calls on every way
out (the end, an error, Ctrl-C, SIGTERM). A sandbox that dies mid-episode (a step fails and its ``/health`` no
longer answers) ends the episode: the step comes back ``done`` with ``info["truncated"] = True``, status
``failed`` and the reason, and the dead lease is released. The next ``reset`` leases a replacement while
``env_lease_replacements`` allows (so does a ``reset`` that finds the sandbox died since); otherwise it is a
``GymServerError`` saying the sandbox died.

The test's ``cmd_args`` that configure it (checked by ``lease_problems``):
``env_lease_url`` (the control plane), ``env_lease_environment`` (which environment to start; ``cloudai serve
--lease``: a test id), ``env_lease_options`` (a table sent as the lease's ``options``), ``env_lease_timeout_s``
(how long a sandbox may take to become ready, default 120), ``env_lease_replacements`` (how many dead sandboxes a
run may replace, default 0), and the OpenEnv client's own ``env_token_var``/``env_timeout_s``/...
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.errors import GymServerError, Problem
from cloudai.gymserver.lease import Lease, LeaseClient
from cloudai.gymserver.protocol import ResetResult, StepResult
from cloudai.gymserver.spaces import ContinuousSpace

if TYPE_CHECKING:
    from cloudai.gymserver.remote import RemoteGymServer

LEASE_ARGS = frozenset(
    {"env_lease_url", "env_lease_environment", "env_lease_options", "env_lease_timeout_s", "env_lease_replacements"}
)


class LeasedGymServer:
    """A leased sandbox as a ``GymServer`` (see the module docstring). ``client`` may be shared by many."""

    def __init__(
        self,
        client: LeaseClient,
        connect: Callable[[str], RemoteGymServer],
        *,
        replacements: int = 0,
        owns_client: bool = False,
    ) -> None:
        self._client, self._connect, self._spare, self._owns = client, connect, replacements, owns_client
        self._dead = ""  # why the sandbox is gone ("" while it lives)
        self._lease = Lease("", client.control_url)  # none yet
        try:
            self._lease = client.acquire()
            self._remote = connect(self._lease.url)
        except BaseException:
            self._give_back()
            raise

    @property
    def url(self) -> str:
        return f"{self._lease.url} (sandbox {self._lease.id} of {self._client.control_url})"

    @property
    def lease(self) -> Lease:
        return self._lease

    def action_space(self) -> dict[str, list[Any] | ContinuousSpace]:
        return self._remote.action_space()

    def observation_space(self) -> list[str]:
        return self._remote.observation_space()

    def health(self) -> dict[str, Any]:
        return self._remote.health()

    def metadata(self) -> dict[str, Any]:
        return self._remote.metadata()

    def schema(self) -> dict[str, Any]:
        return self._remote.schema()

    def state(self) -> dict[str, Any]:
        """The sandbox's ``state`` (its session's episode id, step count...)."""
        return self._remote.state()

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None, *, episode_id: str | None = None
    ) -> ResetResult:
        """Start an episode; on a replacement when the sandbox died (in the last episode, or since)."""
        if self._dead:
            self._replace()
        self._client.keep_alive(self._lease)
        try:
            return self._remote.reset(seed=seed, options=options, episode_id=episode_id)
        except GymServerError as exc:
            if self._client.alive(self._lease):
                raise
            self._bury(f"sandbox {self._lease.id} died between episodes: {exc}")
        self._replace()
        return self._remote.reset(seed=seed, options=options, episode_id=episode_id)

    def step(self, action: dict[str, Any] | None = None, **knobs: Any) -> StepResult:
        if self._dead:
            raise GymServerError(f"the sandbox died: {self._dead}", where=self.url, call="step")
        self._client.keep_alive(self._lease)
        try:
            return self._remote.step(action, **knobs)
        except GymServerError as exc:
            if self._client.alive(self._lease):
                raise
            return self._died(f"sandbox {self._lease.id} died mid-episode: {exc}")

    def close(self) -> None:
        """Close the session, then release this server's lease (and, owning the client, every lease it still
        holds, then the client). A release that failed after its retries raises ``GymServerError``."""
        try:
            self._remote.close()
        finally:
            self._give_back()

    def _give_back(self) -> None:
        if self._owns:
            self._client.close()
        elif any(held.id == self._lease.id for held in self._client.held()):
            self._client.release(self._lease)

    def _died(self, reason: str) -> StepResult:
        """End the episode ``truncated``, releasing the dead lease (a failed release is in the reason)."""
        reason = self._bury(reason)
        width = len(self._remote.observation_space())
        info = {"status": "failed", "reason": reason, "truncated": True}
        return StepResult([math.nan] * width, math.nan, True, info)

    def _bury(self, reason: str) -> str:
        """Mark the sandbox dead and release its lease; the reason, with a failed release's error added."""
        self._dead = reason
        self._remote.close()
        try:
            self._client.release(self._lease)
        except GymServerError as exc:
            self._dead = reason = f"{reason}; {exc}"
        return reason

    def _replace(self) -> None:
        if self._spare <= 0:
            raise GymServerError(
                f"the sandbox died ({self._dead}); no replacement left (cmd_args.env_lease_replacements)",
                where=self.url,
                call="reset",
            )
        self._spare -= 1
        self._lease = self._client.acquire()
        self._remote = self._connect(self._lease.url)
        self._dead = ""


def create_leased(
    cmd_args: Mapping[str, Any],
    connect: Callable[[str], RemoteGymServer],
    record_dir: Path | None,
    client: LeaseClient | None = None,
) -> LeasedGymServer:
    """The ``LeasedGymServer`` a live test's (checked) ``cmd_args`` describe; leases are recorded in ``record_dir``.
    ``client``: a ``LeaseClient`` shared by several environments (its owner closes it); None: one of its own."""
    spare = int(cmd_args.get("env_lease_replacements", 0))
    if client is not None:
        return LeasedGymServer(client, connect, replacements=spare)
    return LeasedGymServer(lease_client(cmd_args, record_dir), connect, replacements=spare, owns_client=True)


def lease_client(cmd_args: Mapping[str, Any], record_dir: Path | None) -> LeaseClient:
    """The ``LeaseClient`` a live test's (checked) ``cmd_args`` describe (thread-safe: one may serve many envs)."""
    return LeaseClient(
        str(cmd_args["env_lease_url"]),
        token_var=str(cmd_args.get("env_token_var", "CLOUDAI_GYM_TOKEN")),
        environment=cmd_args.get("env_lease_environment"),
        options=lease_options(cmd_args),
        timeout_s=float(cmd_args.get("env_timeout_s", 30.0)),
        lease_timeout_s=float(cmd_args.get("env_lease_timeout_s", 120.0)),
        record_dir=record_dir,
    )


def lease_options(cmd_args: Mapping[str, Any]) -> dict[str, Any]:
    """``env_lease_options`` as a table, or as dotted ``env_lease_options.<name>`` keys (flattened cmd_args)."""
    table = cmd_args.get("env_lease_options", {})
    dotted = {k.split(".", 1)[1]: v for k, v in cmd_args.items() if k.startswith("env_lease_options.")}
    return {**(dict(table) if isinstance(table, Mapping) else {}), **dotted}


def lease_problems(cmd_args: Mapping[str, Any], prefix: str, where: str | None) -> list[Problem]:
    """What is wrong with a test's ``env_lease_*`` fields, knowable without a control plane."""
    problems = []
    url = cmd_args.get("env_lease_url")
    if not isinstance(url, str) or not re.match(r"^https?://[^/\s]+", url):
        problems.append(Problem(where, f"{prefix}.env_lease_url", f"{url!r} is not an http(s):// URL",
                                'e.g. env_lease_url = "http://127.0.0.1:8100"'))  # fmt: skip
    name = cmd_args.get("env_lease_environment")
    if name is not None and (not isinstance(name, str) or not name):
        problems.append(Problem(where, f"{prefix}.env_lease_environment", f"{name!r} is not an environment name"))
    options = cmd_args.get("env_lease_options", {})
    if not isinstance(options, Mapping):
        problems.append(Problem(where, f"{prefix}.env_lease_options", f"must be a table, not {type(options).__name__}",
                                "write [cmd_args.env_lease_options] with one name = value per option"))  # fmt: skip
    timeout = cmd_args.get("env_lease_timeout_s", 120.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        problems.append(Problem(where, f"{prefix}.env_lease_timeout_s", f"{timeout!r} is not a positive number"))
    spare = cmd_args.get("env_lease_replacements", 0)
    if isinstance(spare, bool) or not isinstance(spare, int) or spare < 0:
        problems.append(Problem(where, f"{prefix}.env_lease_replacements", f"{spare!r} is not a count (0 or more)"))
    return problems
