"""``cloudai serve``: one cloudai test exposed as an OpenEnv-compatible server for outside trainers.

``app`` is the ASGI app, built from ``hub`` (the env, its call queue, the sessions), ``http_routes`` and
``sessions`` (the WebSocket sessions); ``wire`` the message shapes and schemas, ``calls`` runs env calls one
at a time, ``run`` the process (threads, signals, shutdown).
``cloudai serve --lease``: ``control`` (the lease control plane's routes and process) over ``sandboxes``
(the leases it holds, each sandbox a child process).

May import ``envs`` (the env it serves) and the shared leaves. Never ``run``, ``plan`` or ``cli``:
the caller builds the env and hands it over.
"""
