"""One job from a test: the ``JobSpec`` a workload's argv becomes, and reading a finished job's metrics.

The seam between workloads and systems, shared by the plain runner and the offline env: a workload
builds argv, a system runs a ``JobSpec``, and only this package knows both.

May import ``workloads``, ``systems`` (their base interfaces), ``config`` and the leaves.
"""
