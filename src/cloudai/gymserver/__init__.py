"""The ``GymServer`` protocol a live environment speaks, and its space descriptors.

Shared by both sides of a live trial: the envs that step a server (``envs``), the OpenEnv client
(``remote``) and in-process servers such as ``cloudai.gym.examples.ServingSim``.

May import only the shared leaves (``errors``, ``space``).
"""
