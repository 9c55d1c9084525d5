"""Pure loading and validation of system, test and scenario TOML. No side effects.

The models every stage reads (systems, workloads and the plan alike), so it sits low: it may import only the
shared leaves (``errors``, ``space``). Checks that need a registry (workload, agent, reward names) live in
``cloudai.plan``.
"""
