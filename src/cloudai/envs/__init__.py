"""The environments agents step: ``BaseGym`` (the contract), the offline ``CloudAIGymEnv`` (one job per
step) and the live ``LiveGymEnv`` (one step of a ``GymServer``), with what they share: knob checks,
env_params sampling, reward functions, and finding the ``GymServer`` a live test names.

May import ``jobs``, ``remote``, ``gymserver``, ``systems``/``workloads`` (interfaces only),
``trajectory``, ``config`` and the leaves. Never ``agents`` (they call us), ``plan``, ``run``.
"""
