"""Which ``GymServer`` a live-RL test talks to (``create_gym_server``), and the load-time check of its args.

``create_gym_server(cmd_args)`` builds one from a test's ``cmd_args``: ``env_url`` gives a
``RemoteGymServer`` (OpenEnv wire protocol), ``env_lease_url`` a ``LeasedGymServer`` (a sandbox leased from a
control plane, then driven as ``env_url`` would be), otherwise ``env_class`` names a class by dotted
path. A class gets as constructor kwargs the scalar ``cmd_args`` whose names its signature
takes (all of them when it takes ``**kwargs``), then ``cmd_args.env_kwargs`` on top (an explicit
kwarg the constructor does not take is an error). Lists and ranges in ``cmd_args`` are never
constructor kwargs: they declare or narrow knobs. ``validate_live_rl_args`` checks the same at load
time without constructing. The protocol itself: ``cloudai.gymserver.protocol``.
"""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cloudai.errors import ConfigError, Problem, did_you_mean
from cloudai.gymserver.leased import LEASE_ARGS, lease_problems
from cloudai.gymserver.protocol import GymServer
from cloudai.space import is_range
from cloudai.systems.hidden_env import hide_env_var

if TYPE_CHECKING:
    from cloudai.gymserver.lease import LeaseClient
    from cloudai.gymserver.remote import RemoteGymServer

# cmd_args keys that configure the connection/factory, never knobs or constructor kwargs.
RESERVED_ARGS = frozenset(
    {
        "live_rl_mode",
        "env_class",
        "env_url",
        "env_transport",
        "env_token_var",
        "env_timeout_s",
        "env_health_timeout_s",
        "env_kwargs",
        *LEASE_ARGS,
    }
)
RESERVED_TABLES = ("env_kwargs.", "env_lease_options.")  # flattened cmd_args: their keys are never knobs


def is_reserved(name: str) -> bool:
    """Whether a (flattened) cmd_args key configures the connection rather than being a knob."""
    return name in RESERVED_ARGS or name.startswith(RESERVED_TABLES)


REQUIRED_METHODS = ("action_space", "observation_space", "reset", "step")
EXAMPLE_CLASS = "cloudai.gym.examples.ServingSim"
TRANSPORTS = ("ws", "http")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_ENV_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # fullmatch: `$` alone accepts a trailing newline


def create_gym_server(
    cmd_args: Mapping[str, Any],
    *,
    metrics: Sequence[str] | None = None,
    prefix: str = "cmd_args",
    record_dir: Path | None = None,
    lease_client: LeaseClient | None = None,
) -> GymServer:
    """The server a live-RL test's ``cmd_args`` describe. Bad config: ``ConfigError`` naming the field.

    ``metrics`` (the test's ``agent_metrics``) orders a remote server's observation; an
    in-process class decides its own. ``prefix`` is the TOML path of ``cmd_args`` for messages.
    ``record_dir``: where a leased sandbox is recorded while held (``<dir>/leases/``; None: nowhere);
    ``lease_client``: one ``LeaseClient`` several environments share (``leased.lease_client``); None: its own.
    """
    problems = _check_target(cmd_args, prefix, None)
    if problems:
        raise ConfigError(problems=problems)
    if cmd_args.get("env_url"):
        return _remote(cmd_args, metrics, str(cmd_args["env_url"]))
    if cmd_args.get("env_lease_url"):
        from cloudai.gymserver.leased import create_leased

        return create_leased(cmd_args, lambda url: _remote(cmd_args, metrics, url), record_dir, lease_client)
    cls = _import_class(str(cmd_args["env_class"]), f"{prefix}.env_class")
    kwargs = constructor_kwargs(cls, cmd_args, prefix)
    value = cmd_args["env_class"]
    try:
        server = cls(**kwargs)
    except Exception as exc:
        raise ConfigError(
            f"constructing {value} raised {type(exc).__name__}: {exc}",
            field=f"{prefix}.env_class",
            hint=f"check the constructor arguments given ({', '.join(sorted(kwargs)) or 'none'})",
        ) from exc
    if not isinstance(server, GymServer):
        raise ConfigError(
            f"{value} instances lack {', '.join(_missing_methods(server))}",
            field=f"{prefix}.env_class",
            hint=f"implement the GymServer protocol: {', '.join(REQUIRED_METHODS)}",
        )
    return server


def validate_live_rl_args(cmd_args: Mapping[str, Any], file: object, *, prefix: str = "cmd_args") -> list[Problem]:
    """Every problem ``create_gym_server`` would raise that is knowable without constructing or connecting."""
    problems = _check_target(cmd_args, prefix, file)
    if problems or cmd_args.get("env_url") or cmd_args.get("env_lease_url"):
        return problems
    try:
        cls = _import_class(str(cmd_args["env_class"]), f"{prefix}.env_class")
        constructor_kwargs(cls, cmd_args, prefix)
    except ConfigError as exc:
        return exc.with_file(file).problems if file is not None else exc.problems
    return []


def constructor_kwargs(cls: type, cmd_args: Mapping[str, Any], prefix: str = "cmd_args") -> dict[str, Any]:
    """Scalar cmd_args the constructor names (every scalar one when it takes ``**kwargs``, as CloudAI's factory
    passes them), then ``env_kwargs`` on top (unknown explicit ones: error). Lists and ranges are knobs, and
    cloudai's own fields (``env_class``, ``live_rl_mode``...) are never passed."""
    params = inspect.signature(cls).parameters
    named = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    open_ended = any(p.kind == p.VAR_KEYWORD for p in params.values())
    kwargs = {
        name: value
        for name, value in cmd_args.items()
        if (name in named or open_ended)
        and not is_reserved(name)
        and not isinstance(value, list)
        and not is_range(value)
    }
    explicit = _env_kwargs(cmd_args, prefix)
    unknown = [name for name in explicit if name not in named and not open_ended]
    if unknown:
        raise ConfigError(
            problems=[
                Problem(
                    None,
                    f"{prefix}.env_kwargs.{name}",
                    f"{cmd_args.get('env_class')} takes no argument '{name}'",
                    did_you_mean(name, named),
                )
                for name in unknown
            ]
        )
    return {**kwargs, **explicit}


def _env_kwargs(cmd_args: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """``env_kwargs`` as a table, or as dotted ``env_kwargs.<name>`` keys (flattened cmd_args)."""
    table = cmd_args.get("env_kwargs", {})
    if not isinstance(table, Mapping):
        raise ConfigError(
            f"env_kwargs must be a table, not {type(table).__name__}",
            field=f"{prefix}.env_kwargs",
            hint="write [cmd_args.env_kwargs] with one name = value per constructor argument",
        )
    dotted = {k.removeprefix("env_kwargs."): v for k, v in cmd_args.items() if k.startswith("env_kwargs.")}
    return {**dict(table), **dotted}


def _check_target(cmd_args: Mapping[str, Any], prefix: str, file: object) -> list[Problem]:
    """Exactly one of env_class/env_url/env_lease_url, each well formed; the connection options well typed."""
    where = None if file is None else str(file)
    env_class, env_url = cmd_args.get("env_class"), cmd_args.get("env_url")
    given = [name for name in ("env_class", "env_url", "env_lease_url") if cmd_args.get(name)]
    if len(given) > 1:
        return [
            Problem(
                where,
                f"{prefix}.{given[-1]}",
                f"give {' or '.join(given)}, not both",
                "env_class runs the environment in this process; env_url connects to a running server; "
                "env_lease_url leases one from a control plane",
            )
        ]
    if not given:
        return [
            Problem(
                where,
                f"{prefix}.env_class",
                "a live-RL test needs env_class or env_url (or env_lease_url)",
                f'e.g. env_class = "{EXAMPLE_CLASS}" or env_url = "http://127.0.0.1:8000"',
            )
        ]
    if given == ["env_lease_url"]:
        return lease_problems(cmd_args, prefix, where) + _connection_problems(cmd_args, prefix, where)
    problems: list[Problem] = []
    if env_url and (not isinstance(env_url, str) or not re.match(r"^(https?|wss?)://[^/\s]+", env_url)):
        problems.append(
            Problem(
                where,
                f"{prefix}.env_url",
                f"{env_url!r} is not an http(s):// or ws(s):// URL",
                'e.g. env_url = "http://127.0.0.1:8000"',
            )
        )
    if env_class and (not isinstance(env_class, str) or not _DOTTED.fullmatch(env_class)):
        problems.append(
            Problem(
                where,
                f"{prefix}.env_class",
                f"{env_class!r} is not a dotted path to a class",
                f'give module and class, e.g. env_class = "{EXAMPLE_CLASS}"',
            )
        )
    return problems + _connection_problems(cmd_args, prefix, where)


def _connection_problems(cmd_args: Mapping[str, Any], prefix: str, where: str | None) -> list[Problem]:
    """The OpenEnv client's options: token variable, transport, timeouts."""
    problems: list[Problem] = []
    token_var = cmd_args.get("env_token_var", "CLOUDAI_GYM_TOKEN")
    if not isinstance(token_var, str) or not _ENV_VAR.fullmatch(token_var):
        problems.append(
            Problem(
                where,
                f"{prefix}.env_token_var",
                f"{token_var!r} is not an environment variable name",
                'e.g. env_token_var = "CLOUDAI_GYM_TOKEN"',
            )
        )
    transport = cmd_args.get("env_transport", "ws")
    if transport not in TRANSPORTS:
        problems.append(
            Problem(
                where,
                f"{prefix}.env_transport",
                f"{transport!r} is not a transport ({' or '.join(TRANSPORTS)})",
                '"ws" (the default) runs the episode in one WebSocket session; "http" only for a server whose '
                "POST /reset and /step keep state (e.g. `cloudai serve`), not a stock OpenEnv server",
            )
        )
    for name in ("env_timeout_s", "env_health_timeout_s"):
        value = cmd_args.get(name, 1.0)
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            problems.append(Problem(where, f"{prefix}.{name}", f"{value!r} is not a positive number of seconds"))
    return problems


def declared_units(cmd_args: Mapping[str, Any]) -> dict[str, str]:
    """The units a live environment declares for its metrics: ``units = {"p99_latency_ms": "ms"}`` on an
    ``env_class`` (as a workload declares them); {} for a remote server (the OpenEnv protocol carries none) or a
    class that declares none. Reports label metrics with them and say which have none."""
    value = cmd_args.get("env_class")
    if not isinstance(value, str) or not _DOTTED.fullmatch(value):
        return {}
    try:
        units = getattr(_import_class(value, "env_class"), "units", None)
    except ConfigError:
        return {}
    if not isinstance(units, Mapping):
        return {}
    return {str(k): str(v) for k, v in units.items() if isinstance(v, str) and v}


def _import_class(value: str, field: str) -> type:
    module_name, _, class_name = value.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module_name == exc.name or module_name.startswith(f"{exc.name}.")):
            raise ConfigError(
                f"no module '{module_name}' (from {value})",
                field=field,
                hint="check the spelling, and that the package is installed in this environment",
            ) from None
        raise ConfigError(
            f"importing '{module_name}' (from {value}) failed: {exc}",
            field=field,
            hint=f"install the missing package '{exc.name}'",
        ) from exc
    except Exception as exc:
        raise ConfigError(
            f"importing '{module_name}' (from {value}) raised {type(exc).__name__}: {exc}",
            field=field,
            hint="fix the module so it imports cleanly",
        ) from exc
    cls = getattr(module, class_name, None)
    if cls is None:
        classes = [n for n, v in vars(module).items() if inspect.isclass(v) and not n.startswith("_")]
        raise ConfigError(
            f"module '{module_name}' has no class '{class_name}' (from {value})",
            field=field,
            hint=did_you_mean(class_name, classes),
        )
    if not inspect.isclass(cls):
        raise ConfigError(
            f"{value} is a {type(cls).__name__}, not a class", field=field, hint="name a class implementing GymServer"
        )
    missing = _missing_methods(cls)
    if missing:
        raise ConfigError(
            f"{value} does not implement GymServer: no {', '.join(missing)}",
            field=field,
            hint=f"a GymServer has {', '.join(REQUIRED_METHODS)} (see cloudai.gymserver.protocol)",
        )
    reset = inspect.signature(getattr(cls, "reset")).parameters  # noqa: B009 (checked above)
    if "options" not in reset and not any(p.kind == p.VAR_KEYWORD for p in reset.values()):
        raise ConfigError(
            f"{value}.reset takes no 'options'",
            field=field,
            hint="define reset(self, seed=None, options=None): options carries the episode's env_params",
        )
    return cls


def _missing_methods(obj: object) -> list[str]:
    return [name for name in REQUIRED_METHODS if not callable(getattr(obj, name, None))]


def _remote(cmd_args: Mapping[str, Any], metrics: Sequence[str] | None, url: str) -> RemoteGymServer:
    from cloudai.gymserver.remote import RemoteGymServer

    fields = {k: v for k, v in cmd_args.items() if not is_reserved(k)}
    hide_env_var(str(cmd_args.get("env_token_var", "CLOUDAI_GYM_TOKEN")))  # jobs never inherit the token
    return RemoteGymServer(
        url,
        transport=str(cmd_args.get("env_transport", "ws")),
        token_var=str(cmd_args.get("env_token_var", "CLOUDAI_GYM_TOKEN")),
        timeout_s=float(cmd_args.get("env_timeout_s", 30.0)),
        health_timeout_s=float(cmd_args.get("env_health_timeout_s", 60.0)),
        action_fields=fields,
        metrics=list(metrics) if metrics is not None else None,
    )
