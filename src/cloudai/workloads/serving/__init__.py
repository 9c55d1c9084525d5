"""LLM serving benchmarks as CloudAI runs them: shared by ``vllm`` and ``sglang`` (and open to Dynamo, Triton).

* ``args``: CloudAI's ``LLMServingCmdArgs`` (model, port, health checks, ``prefill``/``decode`` role tables
  whose keys are serve flags) and ``roles``: which server runs on which nodes and GPUs, on which port.
* ``workload``: ``ServingWorkload``, the job as steps (servers in the background, health waits, router,
  benchmark client, semantic evaluation); a subclass gives the tool's commands.
* ``results``: the serving-benchmark result (the client's JSON or its printed block) as metrics.
"""
