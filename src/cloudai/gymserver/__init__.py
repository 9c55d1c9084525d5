"""Live environment servers, the side a live step reaches: the ``GymServer`` contract (``protocol``) and its
vocabulary (``spaces``: ranges, observation leaves, CloudAI's spellings read by ``as_leaf``), building the server a
live test names (``factory``: an in-process class from ``env_class``, ``remote`` for ``env_url``, ``leased`` for
``env_lease_url``), the OpenEnv client (``remote``, with ``wire`` for HTTP/WebSocket frames and ``schema`` for the
server's JSON Schemas) and the lease client (``lease``: sandboxes taken from a control plane, recorded while held).

The environment packages, each named for its job: ``envs`` holds what the search steps (``BaseGym``: the offline
DSE env, one job per step; the live env, one server step per step); ``gymserver`` (here) what a live env steps;
``gym`` the Gymnasium face trainers step (``GymnasiumAdapter``, ``make``); ``serve`` the other direction, a test
behind an OpenEnv server (``cloudai serve``).

May import ``systems`` (hidden env vars), ``config`` and the shared leaves; never an env, an agent or ``serve``.
"""
