"""One Aiconfigurator trial, run by the *aiconfigurator environment's* Python (never cloudai's).

This file imports only the standard library and, when it estimates, ``aiconfigurator``: cloudai runs it by path
with the interpreter ``cloudai install`` made (``<install_path>/aiconfigurator-0.12.0/bin/python runner.py ...``),
so it must not import cloudai.

Commands:

* ``trial JOB_DIR REQUEST_JSON [TOTAL_GPUS]``: one estimate; writes ``metrics.json`` and ``report.json`` into
  ``JOB_DIR`` and prints a readable summary. With ``TOTAL_GPUS``, the per-GPU figures are over all of them, as
  ``aiconfigurator cli default`` counts (``on_cluster``). Exit 0: estimated; 1: the configuration is infeasible
  (out of memory, ...): the model's own reason is printed as ``error: ...``; 2: a request the package refuses.
* ``worker``: the warm worker (below); prints ``ready`` once it listens (``running`` when one already does).
* ``catalog``: what this release ships (systems, backends, database versions, models) as JSON, for cloudai's
  load-time checks.

The warm worker. ``import aiconfigurator`` takes ~0.8 s and the first estimate of a (system, backend, version)
~2 s (it loads that database); a warm estimate with the database version pinned takes ~10 ms. So a trial first
asks a long-lived worker process and estimates itself only when there is none. The worker listens on a Linux
abstract Unix socket named from this file's content, the environment and the user (no file to clean up, no path
length limit; a changed runner or environment gets a worker of its own), answers one JSON request per
connection (an estimate request, or ``{"fits": request}``: whether it fits GPU memory, ``answer_to``), one at a
time, only to the same user (``SO_PEERCRED``), remembers its last estimates (a point's ``fits`` then its trial
cost one estimate), and exits after
``CLOUDAI_AICONFIGURATOR_IDLE_S`` seconds (default 300) without a request. It only computes: the trial process
writes the job dir's files, so the worker never writes where a request says.

Who starts it: not a trial (the system ends everything a job started when the job ends), but the run, through
``Workload.session`` (cloudai starts ``runner.py worker`` before the first trial on this machine and stops it
after the last). A trial with no worker to ask (a Slurm node, ``CLOUDAI_AICONFIGURATOR_WORKER=0``) estimates in
its own process: the same numbers, ~3 s slower.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

PACKAGE = "aiconfigurator"
SHOWN = ("ttft_ms", "tpot_ms", "tokens_per_s_per_gpu", "tokens_per_s_per_user", "request_latency_ms")
FROM_RAW = {
    "ttft_ms": "ttft",
    "tpot_ms": "tpot",
    "tokens_per_s_per_gpu": "tokens/s/gpu",
    "tokens_per_s_per_user": "tokens/s/user",
    "request_latency_ms": "request_latency",
    "tokens_per_s": "tokens/s",
    "gpus_per_replica": "num_total_gpus",
    "prefill_seq_per_s_per_worker": "(p)seq/s/worker",  # each side's rate: disagg pairs composed (``compose``)
    "decode_seq_per_s_per_worker": "(d)seq/s/worker",
}
CLUSTER = ("replicas", "gpus_per_replica", "gpus_used", "total_gpus")
OOM = "OOM:"  # how ``cli_estimate`` starts the reason of a configuration that does not fit GPU memory
WARM = "the warm worker"  # who answered, as a trial's stdout and report.json say it
MEMO = 4096  # estimates the worker remembers (a few KB each)
_answers: OrderedDict[str, dict[str, Any]] = OrderedDict()  # the worker's memo: request JSON -> answer
_versions: dict[tuple[str, str], str] = {}  # (system, backend) -> the release's default database version


def estimate(request: dict[str, Any]) -> dict[str, Any]:
    """``cli_estimate`` for one request (its keyword arguments, ``backend_version`` None: the release's default,
    resolved once and pinned). ``{"ok": True, "metrics", "versions", "raw"}`` or ``{"ok": False, "reason"}``."""
    from aiconfigurator.cli.api import cli_estimate  # pyright: ignore[reportMissingImports]

    _reuse_database_views()
    kwargs = dict(request)
    kwargs["backend_version"] = kwargs.get("backend_version") or _default_version(
        kwargs["system_name"], kwargs.get("backend_name", "trtllm")
    )
    start = time.perf_counter()
    try:
        result = cli_estimate(**kwargs)
    except (RuntimeError, ValueError, KeyError, AssertionError) as exc:  # OOM, no database, bad parallelism
        return {"ok": False, "reason": _one_line(exc), "versions": _versions_of(kwargs)}
    raw = {key: _plain(value) for key, value in result.raw.items()}
    return {
        "ok": True,
        "metrics": metrics_of(raw),
        "versions": _versions_of(kwargs, result.backend_version),
        "estimate_ms": round((time.perf_counter() - start) * 1000, 3),
        "raw": raw,
    }


def _reuse_database_views() -> None:
    """Each ``cli_estimate`` asks ``perf_database.get_database_view`` for its database (twice for disagg: the
    prefill and the decode system), and each ask re-reads the database's YAML index: ~30 ms, most of a warm
    estimate. The view is a read-only query view over a cached database, so one per arguments serves every
    request of this process: the same numbers (``benchmarks/aiconfigurator_grid.py`` checked 5 751 disagg points
    against unmemoized ones), a warm agg estimate 14 ms -> 2.3 ms (``bench_aiconfigurator.py --section cost``).
    Done once; a release without the function is left as it is."""
    from aiconfigurator.sdk import perf_database  # pyright: ignore[reportMissingImports]

    get_view = getattr(perf_database, "get_database_view", None)
    if get_view is None or getattr(get_view, "cloudai_reused", False):
        return
    views: dict[str, Any] = {}

    def reused(*args: Any, **kwargs: Any) -> Any:
        key = repr((args, sorted(kwargs.items())))
        if key not in views:
            views[key] = get_view(*args, **kwargs)
        return views[key]

    reused.cloudai_reused = True  # pyright: ignore[reportFunctionMemberAccess]
    perf_database.get_database_view = reused


def metrics_of(raw: dict[str, Any]) -> dict[str, float]:
    """CloudAI's metric names from the package's result row; ``default`` by CloudAI's rule (tokens/s/gpu, else
    tokens/s/user, else 1/tpot, else 1/ttft); ``memory_gb`` the most any one GPU holds (prefill or decode)."""
    metrics = {name: float(raw[key]) for name, key in FROM_RAW.items() if _number(raw.get(key))}
    memories = [float(raw[k]) for k in ("memory", "(p)memory", "(d)memory") if _number(raw.get(k))]
    if memories:
        metrics["memory_gb"] = max(memories)
    for name, invert in (("tokens_per_s_per_gpu", False), ("tokens_per_s_per_user", False), ("tpot_ms", True)):
        if name in metrics:
            metrics["default"] = 1.0 / max(metrics[name], 1e-9) if invert else metrics[name]
            break
    return {"default": metrics.pop("default"), **metrics} if "default" in metrics else metrics


def on_cluster(metrics: dict[str, float], total_gpus: int | None) -> dict[str, float]:
    """The estimate of one replica as ``aiconfigurator cli default`` reports it on ``total_gpus`` GPUs.

    ``cli default`` fills the GPUs with whole replicas and divides by *all* of them (``tokens/s/gpu_cluster``:
    per-replica tokens/s/gpu x ``total // gpus_per_replica`` x ``gpus_per_replica`` / ``total``, in that order,
    so the figure is bit for bit its own): GPUs a replica leaves idle count, as they do when a cluster is bought.
    ``tokens_per_s_per_gpu`` becomes that figure; the replica's own is kept as ``tokens_per_s_per_gpu_replica``,
    beside ``replicas``, ``gpus_used`` and ``total_gpus``; ``tokens_per_s`` is the replicas' sum. Without a
    ``total_gpus`` the question is one replica (``total_gpus`` = its GPUs)."""
    out = dict(metrics)
    per_replica, gpus = out.get("tokens_per_s_per_gpu"), out.get("gpus_per_replica")
    if per_replica is None or not gpus:
        return out
    total = total_gpus or int(gpus)
    replicas = total // int(gpus)
    out["tokens_per_s_per_gpu_replica"] = per_replica
    out["tokens_per_s_per_gpu"] = per_replica * replicas * gpus / total
    out |= {"replicas": float(replicas), "gpus_used": float(replicas * gpus), "total_gpus": float(total)}
    if "tokens_per_s" in out:
        out["tokens_per_s"] = out["tokens_per_s"] * replicas
    out["default"] = out["tokens_per_s_per_gpu"]  # CloudAI's rule: tokens/s/gpu when there is one
    return out


def _default_version(system: str, backend: str) -> str:
    if (system, backend) not in _versions:
        from aiconfigurator.sdk.perf_database import get_latest_database_version  # pyright: ignore[reportMissingImports]

        found = get_latest_database_version(system=system, backend=backend)
        if found is None:
            raise ValueError(f"aiconfigurator has no database for system {system!r}, backend {backend!r}")
        _versions[(system, backend)] = found
    return _versions[(system, backend)]


def _versions_of(kwargs: dict[str, Any], used: str | None = None) -> dict[str, str]:
    import importlib.metadata  # here, not at the top: ~50 ms of every trial process that only asks the worker

    return {
        "aiconfigurator": importlib.metadata.version(PACKAGE),
        "database": f"{kwargs.get('system_name')}/{kwargs.get('backend_name')}/{used or kwargs['backend_version']}",
    }


def _plain(value: Any) -> Any:
    """numpy scalars as Python numbers (JSON)."""
    return value.item() if hasattr(value, "item") else value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# --- the warm worker ---------------------------------------------------------------------------------------------


def worker_name(prefix: str = sys.prefix) -> bytes:
    """The worker's abstract socket name for the environment at ``prefix`` (its ``sys.prefix``: cloudai's side
    names the environment's directory). ``CLOUDAI_AICONFIGURATOR_WORKER_TAG`` (inherited by the worker and the
    trials) gives processes a worker of their own: one that another run, which may stop it, never shares."""
    home = os.path.realpath(prefix).encode()  # the environment, however it was reached
    tag = os.environ.get("CLOUDAI_AICONFIGURATOR_WORKER_TAG", "").encode()
    digest = hashlib.sha256(Path(__file__).read_bytes() + home + str(os.getuid()).encode() + tag)
    return b"\0cloudai-aiconfigurator-" + digest.hexdigest()[:20].encode()


def ask(request: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The answer to ``request`` and who gave it: the warm worker when one is listening, else this process."""
    if os.environ.get("CLOUDAI_AICONFIGURATOR_WORKER", "1") == "0":
        return estimate(request), "this process (CLOUDAI_AICONFIGURATOR_WORKER=0)"
    try:
        return ask_worker(worker_name(), request), WARM
    except ValueError:  # it died mid-request
        return estimate(request), "this process (the worker ended mid-request)"
    except OSError:  # no worker (a Slurm node, a run without one): estimate here
        return estimate(request), "this process (no warm worker)"


def ask_worker(name: bytes, message: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
    """The answer of the worker listening on ``name`` (``answer_to``). ``OSError``: none listens, or no answer
    within ``timeout_s``; ``ValueError``: it ended mid-request. Used by the trial process and by cloudai's own
    (``worker.oom``, ``worker.evaluation``)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(timeout_s)
        conn.connect(name)
        conn.sendall(json.dumps(message).encode())
        conn.shutdown(socket.SHUT_WR)
        return json.loads(_read_all(conn))


def worker() -> int:
    """Bind the worker's name, say ``ready`` (or ``running`` when another worker holds it), then serve."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(worker_name())
    except OSError:
        print("running", flush=True)
        return 0
    listener.listen(64)
    print("ready", flush=True)
    return serve(listener)


def serve(listener: socket.socket) -> int:
    """Answer requests on ``listener`` until idle for the idle time."""
    listener.settimeout(float(os.environ.get("CLOUDAI_AICONFIGURATOR_IDLE_S", "300")))
    import aiconfigurator.cli.api  # noqa: F401  # pyright: ignore[reportMissingImports] (the cost paid once, before the first connection is read)

    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            return 0
        with conn:
            conn.settimeout(None)
            if not _same_user(conn):
                continue
            try:
                answer = answer_to(json.loads(_read_all(conn)))
            except Exception as exc:  # a request the package chokes on: that trial's answer, not the worker's end
                answer = {"ok": False, "reason": f"{type(exc).__name__}: {_one_line(exc)}", "refused": True}
            conn.sendall(json.dumps(answer).encode())


def answer_to(message: dict[str, Any]) -> dict[str, Any]:
    """The worker's answer: ``{"fits": REQUEST}`` -> ``{"ok", "reason", "oom", "answer"}`` (``oom``: the model
    says the configuration does not fit GPU memory; ``answer``: the estimate request's own answer, which cloudai's
    in-process trial of the point then uses without asking again); anything else is an estimate request. Both
    are answered from ``_answers``, so the trial process of a point ``fits`` let through reuses its estimate.

    Why a whole estimate and not a memory-only call: aiconfigurator 0.12 computes a worker's memory inside
    ``run_static`` (``_get_memory_usage`` after the latency breakdown; ``set_memory_and_check_oom``) from a model
    ``cli_estimate`` builds after resolving quantisation, MoE and system quirks; its own sweep
    (``get_worker_candidates``) also runs ``run_static`` to learn OOM. Calling the private memory function
    with a model built here would be a second, drifting copy of that resolution: a wrong "fits" is worse than a
    few milliseconds. The estimate is not wasted: the point's trial, when it fits, is answered from the memo."""
    if "fits" in message:
        answer = _memoised(message["fits"])
        if answer.get("ok"):
            return {"ok": True, "answer": answer}
        reason = str(answer.get("reason", ""))
        return {"ok": False, "reason": reason, "oom": reason.startswith(OOM), "answer": answer}
    return _memoised(message)


def _memoised(request: dict[str, Any]) -> dict[str, Any]:
    """``estimate(request)``, remembered for the last ``MEMO`` requests (an estimate is a pure function of its
    request and the pinned database)."""
    key = json.dumps(request, sort_keys=True)
    if key in _answers:
        _answers.move_to_end(key)
        return _answers[key]
    answer = estimate(request)
    _answers[key] = answer
    if len(_answers) > MEMO:
        _answers.popitem(last=False)
    return answer


def _read_all(conn: socket.socket) -> bytes:
    chunks = []
    while chunk := conn.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _same_user(conn: socket.socket) -> bool:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1] == os.getuid()


# --- the trial --------------------------------------------------------------------------------------------------


def trial(job_dir: Path, request: dict[str, Any], total_gpus: int | None = None) -> tuple[int, str]:
    """One trial in this process: its exit code and stdout (``main`` prints it)."""
    start = time.perf_counter()
    answer, source = ask(request)
    return record(job_dir, request, total_gpus, answer, source, start)


def record(
    job_dir: Path, request: dict[str, Any], total_gpus: int | None, answer: dict[str, Any], source: str, start: float
) -> tuple[int, str]:
    """Write a trial's files from its answer (``report.json``; ``metrics.json`` when estimated) and return its exit
    code and stdout text (``start``: when the trial began, ``time.perf_counter``). The one place an answer becomes
    a trial's record: the trial process and cloudai's in-process trial (``worker.evaluation``) both call it, so a
    trial's files are the same whichever ran it."""
    versions = answer.get("versions", {})
    lines = [
        f"aiconfigurator {versions.get('aiconfigurator', '?')}, database {versions.get('database', '?')}",
        f"request: {json.dumps(request, sort_keys=True)}",
    ]
    report = {"request": request, **answer, "answered_by": source}
    (job_dir / "report.json").write_text(json.dumps(report) + "\n")  # one line: C's encoder, ~0.15 ms less a trial
    if not answer.get("ok"):
        lines.append(f"error: {answer.get('reason')}")
        return 2 if answer.get("refused") else 1, "\n".join(lines) + "\n"
    metrics = on_cluster(answer["metrics"], total_gpus)
    (job_dir / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    for name in (*SHOWN, "tokens_per_s_per_gpu_replica", "tokens_per_s", "memory_gb", *CLUSTER):
        if name in metrics:
            lines.append(f"{name:>24} {metrics[name]:12.3f}")
    elapsed = (time.perf_counter() - start) * 1000
    lines.append(f"estimated in {answer.get('estimate_ms', 0):.1f} ms by {source}; trial {elapsed:.1f} ms")
    return 0, "\n".join(lines) + "\n"


def catalog() -> dict[str, Any]:
    import importlib.metadata
    import importlib.util

    from aiconfigurator.sdk import perf_database  # pyright: ignore[reportMissingImports]

    supported = perf_database.get_supported_databases()
    spec = importlib.util.find_spec("aiconfigurator_core")
    configs = Path(spec.origin if spec and spec.origin else ".").parent / "model_configs"
    models = sorted(p.name[: -len("_config.json")].replace("--", "/", 1) for p in configs.glob("*_config.json"))
    defaults = {
        system: {backend: perf_database.get_latest_database_version(system=system, backend=backend) for backend in by}
        for system, by in supported.items()
    }
    from aiconfigurator.sdk import common  # pyright: ignore[reportMissingImports]

    enums = {"gemm_quant_mode": "GEMMQuantMode", "moe_quant_mode": "MoEQuantMode", "kvcache_quant_mode":
             "KVCacheQuantMode", "fmha_quant_mode": "FMHAQuantMode", "comm_quant_mode": "CommQuantMode"}  # fmt: skip
    return {
        "aiconfigurator": importlib.metadata.version(PACKAGE),
        "databases": {system: {b: sorted(v) for b, v in by.items()} for system, by in supported.items()},
        "defaults": defaults,
        "models": [m for m in models if not m.endswith("_hf_quant")],
        "quant_modes": {field: [m.name for m in getattr(common, enum)] for field, enum in enums.items()},
    }


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command == "trial" and len(argv) in (3, 4):
        code, text = trial(Path(argv[1]), json.loads(argv[2]), int(argv[3]) if len(argv) == 4 else None)
        print(text, end="", flush=True)
        return code
    if command == "worker":
        return worker()
    if command == "catalog":
        print(json.dumps(catalog()))
        return 0
    print("usage: runner.py trial JOB_DIR REQUEST_JSON [TOTAL_GPUS] | worker | catalog", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
