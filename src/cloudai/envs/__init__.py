"""What the search steps: ``BaseGym`` (the contract), the offline ``CloudAIGymEnv`` (one job per step) and the
live ``LiveGymEnv`` (one step of a ``GymServer``, from ``gymserver``), with what they share: knob checks, env_params
sampling, reward functions, pruning, the trial and its outcome, a resume's reading back.

May import ``jobs``, ``gymserver``, ``systems``/``workloads`` (interfaces only), ``trajectory``, ``config`` and
the leaves. Never ``agents`` (they call us), ``plan``, ``run``.
"""
