"""The records of an agent-driven run: step-aligned ``trajectory.csv`` and ``env.csv``, written and read back.

May import only the shared leaves (``errors``, ``atomicfile``, ``space``, ``recordfiles``).
"""
