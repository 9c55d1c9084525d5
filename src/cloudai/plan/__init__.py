"""Plan: load the TOML, check it against every registry, and route each test (plain job or agent).

``load.load_plan`` is the entry: system + tests + scenario in, a ``Plan`` out, nothing written.
``route`` decides plain vs agent-driven and runs the scenario-wide checks, ``agent_checks`` and
``env_param_checks`` the agent-specific ones, ``verify`` the ``verify-configs`` command.

May import: ``config``, ``agents``, ``envs`` (registries and argument checks), ``workloads``, ``systems``
and the shared leaves. Never ``run``, ``cli``, ``gym``, ``serve`` (they build on a plan).
"""
