"""The OpenEnv client: ``RemoteGymServer`` steps a running OpenEnv-compatible server as a ``GymServer``.

``wire`` speaks the protocol (HTTP + WebSocket frames, retries, timeouts, auth), ``schema`` maps the
server's JSON Schemas to knobs and observations, ``client`` puts them together.

May import ``gymserver`` and the shared leaves. Never an env, an agent or the server side (``serve``).
"""
