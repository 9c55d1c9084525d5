"""An analytic model of an all-reduce benchmark (like nccl-tests), run as the ``Synthetic`` workload.

Stdlib only and fast to start: ``python -m cloudai.workloads.synthetic_model --algo ring ...``
writes ``metrics.json`` (``bus_bw`` GB/s, ``alg_bw`` GB/s, ``latency_us``, ``default`` = bus_bw).

Model, for ``S`` = message_size bytes, ``C`` = num_channels, ``N`` = num_nodes, ``L`` = background_load,
``J`` = jitter and per-algorithm constants in ``ALGOS`` (peaks, load sensitivity, overheads):

    bytes moved   A = 2 (p-1)/p S  (p = 8 N ranks);  per channel a = A / C;  chunk bytes c = chunk_kb * 1024
    bandwidth     B = peak(N) (1 - exp(-C/sat)) / (1 + contention C) (1 - load_sens L)    [GB/s, all channels]
    pipeline      k = max(1, a / c) chunks per channel through d(algo, N) stages (ring N+2, tree 2 log2 N + 2)
    time          T = setup + 0.15 C + g (d hop + k overhead (1 + 2L) + (k + d - 1) (a / k) C / B)   [us]
    straggler     g = 1 + 0.12 J log2(1 + C)
    metrics       bus_bw = A / T, alg_bw = S / T, latency_us = T; noise multiplies both bandwidths by
                  1 + 0.1 J z (z ~ N(0, 1) clipped to +-3), drawn from a stable hash of every knob and N.

The best chunk is about sqrt(a overhead (1 + 2L) B / C / (d - 1)): it grows with the message and
the load, shrinks with more channels and a deeper pipeline. Ring has the highest network peak but
is the most load-sensitive, collnet (in-switch reduction) the least, tree sits between; nvls wins on
1-2 nodes, tree on small messages over many nodes. On the recommended grid (``recommended_space``:
4 nodes, 256 MiB) the optimum is ring, chunk_kb 616, 19 channels (56.0 GB/s) at L = 0 and collnet,
chunk_kb 4290, 5 channels (40.7 GB/s) at L = 0.5. ``infeasible`` documents the infeasible region.
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import random
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

BUFFER_BUDGET_KB = 65536  # chunk_kb * num_channels must fit one 64 MiB staging buffer per GPU
NVLS_MAX_NODES = 8  # an NVLink-SHARP domain spans at most 8 nodes
NVLS_MAX_CHANNELS = 16
GPUS_PER_NODE = 8

DEFAULTS: dict[str, Any] = {
    "algo": "ring",
    "message_size": 1 << 26,
    "chunk_kb": 512,
    "num_channels": 8,
    "background_load": 0.0,
    "jitter": 0.0,
    "seed": 0,
}
RUN_ONLY = ("duration_s", "fail_rate", "progress_chunks")  # how the CLI behaves, not what it measures
BOUNDS: dict[str, tuple[float, float]] = {
    "message_size": (1, 1 << 36),
    "chunk_kb": (64, 8192),
    "num_channels": (1, 32),
    "background_load": (0.0, 1.0),
    "jitter": (0.0, 1.0),
}


class Algo(NamedTuple):
    peak_local: float  # GB/s on one node (NVLink)
    peak_net: float  # GB/s across nodes (network-bound)
    load_sens: float  # fraction of bandwidth lost at background_load = 1
    overhead_us: float  # per chunk per pipeline stage
    hop_us: float  # per pipeline stage
    setup_us: float
    sat: float  # channels to saturate the links
    contention: float  # per-channel slowdown


ALGOS: dict[str, Algo] = {
    "ring": Algo(240.0, 96.0, 0.9, 16.0, 3.0, 6.0, 8.0, 0.015),
    "tree": Algo(200.0, 80.0, 0.6, 12.0, 4.0, 5.0, 5.0, 0.03),
    "nvls": Algo(360.0, 360.0, 0.7, 8.0, 2.0, 8.0, 3.0, 0.05),
    "collnet": Algo(0.0, 84.0, 0.25, 30.0, 5.0, 40.0, 2.0, 0.06),
}


def infeasible(params: Mapping[str, Any], num_nodes: int | None = 1) -> str | None:
    """Why the point cannot run, or None. The infeasible region:

    * ``chunk_kb * num_channels > 65536`` (the staging buffer budget, KiB per GPU);
    * ``nvls`` with more than 16 channels, or on more than 8 nodes;
    * ``collnet`` on one node (it reduces in the network switch).

    ``num_nodes=None`` (unknown) checks only what does not depend on the node count.
    """
    p = _knobs(params)
    algo, channels, buffer = p["algo"], int(p["num_channels"]), int(p["chunk_kb"]) * int(p["num_channels"])
    if buffer > BUFFER_BUDGET_KB:
        return f"chunk_kb * num_channels = {buffer} KiB exceeds the {BUFFER_BUDGET_KB} KiB buffer"
    if algo == "nvls" and channels > NVLS_MAX_CHANNELS:
        return f"nvls supports at most {NVLS_MAX_CHANNELS} channels, not {channels}"
    if num_nodes is not None and algo == "nvls" and num_nodes > NVLS_MAX_NODES:
        return f"nvls spans at most {NVLS_MAX_NODES} nodes, not {num_nodes}"
    if num_nodes is not None and algo == "collnet" and num_nodes < 2:
        return "collnet needs at least 2 nodes"
    return None


def expected(params: Mapping[str, Any], num_nodes: int = 1) -> dict[str, float]:
    """The noise-free metrics of a feasible point (see the module docstring for the formulas)."""
    p = _knobs(params)
    spec = ALGOS[p["algo"]]
    size, chunk = float(p["message_size"]), float(p["chunk_kb"]) * 1024
    channels, load, jitter = int(p["num_channels"]), float(p["background_load"]), float(p["jitter"])
    ranks = GPUS_PER_NODE * num_nodes
    moved = 2 * (ranks - 1) / ranks * size
    bw = _bandwidth(spec, num_nodes, channels, load) * 1e3  # bytes/us, all channels
    per_channel = moved / channels
    chunks = max(1.0, per_channel / chunk)
    depth = _depth(p["algo"], num_nodes)
    pipeline = chunks * spec.overhead_us * (1 + 2 * load) + (chunks + depth - 1) * per_channel / chunks * channels / bw
    straggle = 1 + 0.12 * jitter * math.log2(1 + channels)
    latency = spec.setup_us + 0.15 * channels + straggle * (depth * spec.hop_us + pipeline)
    return {"bus_bw": moved / latency / 1e3, "alg_bw": size / latency / 1e3, "latency_us": latency}


def evaluate(params: Mapping[str, Any], num_nodes: int = 1) -> dict[str, float]:
    """Measured metrics: ``expected`` with deterministic noise scaled by ``jitter``; ``default`` = bus_bw.

    ``params["num_nodes"]``, when given, wins over ``num_nodes``. Raises ValueError for unknown
    knobs, out-of-range values and infeasible points.
    """
    params, num_nodes = _split_nodes(params, num_nodes)
    if reason := infeasible(params, num_nodes):
        raise ValueError(f"infeasible point: {reason}")
    metrics = expected(params, num_nodes)
    jitter = float(_knobs(params)["jitter"])
    if jitter > 0:
        z = max(-3.0, min(3.0, _rng(params, num_nodes, "noise").gauss(0.0, 1.0)))
        factor = 1 + 0.1 * jitter * z
        metrics = {"bus_bw": metrics["bus_bw"] * factor, "alg_bw": metrics["alg_bw"] * factor,
                   "latency_us": metrics["latency_us"] / factor}  # fmt: skip
    return {**metrics, "default": metrics["bus_bw"]}


def optimum(
    candidates: Mapping[str, Sequence[Any]], num_nodes: int = 1, fixed: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], float]:
    """The best feasible point over the candidate lists (brute force) and its noise-free bus_bw.

    Ties keep the first point in candidate order. Raises ValueError when no point is feasible.
    """
    base, num_nodes = _split_nodes(fixed or {}, num_nodes)
    names = list(candidates)
    best: tuple[dict[str, Any], float] | None = None
    for values in itertools.product(*(candidates[n] for n in names)):
        point = {**base, **dict(zip(names, values, strict=True))}
        if infeasible(point, num_nodes) is None:
            value = expected(point, num_nodes)["bus_bw"]
            if best is None or value > best[1]:
                best = (dict(zip(names, values, strict=True)), value)
    if best is None:
        raise ValueError("no feasible point among the candidates")
    return best


def recommended_space() -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """(candidates, fixed) of the 2048-point DSE grid the docs and benchmarks use (4 nodes, 64 MiB)."""
    low, high = math.log(64), math.log(8192)  # as space.py spaces {low=64, high=8192, log, int, grid_points=16}
    chunks = sorted({round(math.exp(low + (high - low) * i / 15)) for i in range(16)})
    candidates = {"algo": list(ALGOS), "chunk_kb": chunks, "num_channels": list(range(1, 33))}
    return candidates, {"message_size": 1 << 28, "num_nodes": 4}


def main(argv: Sequence[str] | None = None) -> None:
    """The CLI: sleep ``duration_s``, write ``metrics.json`` here, print a summary. Exit 3 when infeasible."""
    parser = _parser()
    ns = vars(parser.parse_args(argv))
    num_nodes, duration, fail_rate = ns.pop("num_nodes"), ns.pop("duration_s"), ns.pop("fail_rate")
    chunks = ns.pop("progress_chunks")
    try:
        _knobs(ns)
    except ValueError as exc:
        parser.error(str(exc))
    if reason := infeasible(ns, num_nodes):
        print(f"infeasible: {reason}", file=sys.stderr)
        sys.exit(3)
    if chunks > 0:
        _run_chunks(ns, num_nodes, duration, chunks)
    else:
        time.sleep(duration)
    if _rng(ns, num_nodes, "fail").random() < fail_rate:
        print(f"simulated failure (fail_rate={fail_rate})", file=sys.stderr)
        sys.exit(1)
    metrics = evaluate(ns, num_nodes)
    with open("metrics.json", "w", encoding="utf-8") as out:
        out.write(json.dumps(metrics) + "\n")
    print(
        f"{ns['algo']} size={ns['message_size']} chunk={ns['chunk_kb']}KiB channels={ns['num_channels']} "
        f"nodes={num_nodes}: bus_bw {metrics['bus_bw']:.2f} GB/s, latency {metrics['latency_us']:.1f} us"
    )


PROGRESS_FILE = "progress.txt"


def _run_chunks(params: Mapping[str, Any], num_nodes: int, duration: float, chunks: int) -> None:
    """Sleep ``duration`` in ``chunks`` parts; after each, append ``<chunk> <running mean bus_bw>`` (flushed).

    Each chunk measures bus_bw with 5 % noise (a stable hash per chunk): the running mean converges
    to the final value, as a benchmark's per-iteration rows do.
    """
    final = evaluate(params, num_nodes)["bus_bw"]
    rng = _rng(params, num_nodes, "progress")
    total = 0.0
    with open(PROGRESS_FILE, "a", encoding="utf-8") as out:
        for chunk in range(1, chunks + 1):
            time.sleep(duration / chunks)
            total += final * (1 + 0.05 * max(-3.0, min(3.0, rng.gauss(0.0, 1.0))))
            out.write(f"{chunk} {total / chunk:.6g}\n")
            out.flush()


def read_progress_lines(path: Path) -> list[tuple[int, float]]:
    """``<step> <value>`` lines; a torn or malformed line ends the list (it may still be being written)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return []
    values: list[tuple[int, float]] = []
    for line in text.split("\n")[:-1]:  # the part after the last newline is not complete yet
        try:
            step, value = line.split()
            values.append((int(step), float(value)))
        except ValueError:
            break
    return values


def _parser() -> argparse.ArgumentParser:
    description = "Evaluate the all-reduce model at one point; write metrics.json."
    parser = argparse.ArgumentParser(
        prog="synthetic_model", description=description, allow_abbrev=False, formatter_class=_Formatter
    )
    options: list[tuple[str, type, Any]] = [
        ("algo", str, DEFAULTS["algo"]), ("message_size", int, DEFAULTS["message_size"]),
        ("chunk_kb", int, DEFAULTS["chunk_kb"]), ("num_channels", int, DEFAULTS["num_channels"]),
        ("num_nodes", int, 1), ("background_load", float, 0.0), ("jitter", float, 0.0), ("seed", int, 0),
        ("duration_s", float, 0.0), ("fail_rate", float, 0.0), ("progress_chunks", int, 0),
    ]  # fmt: skip
    for name, kind, default in options:
        flags = dict.fromkeys([f"--{name.replace('_', '-')}", f"--{name}"])
        parser.add_argument(*flags, dest=name, type=kind, default=default)
    return parser


class _Formatter(argparse.HelpFormatter):
    """A fixed width: argparse's default asks the terminal, and importing ``shutil`` for that is a tenth of the
    start-up of a trial (every ``add_argument`` builds a formatter)."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=100)


def _knobs(params: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults plus ``params``; raises ValueError for an unknown knob, algo or out-of-range value."""
    unknown = set(params) - set(DEFAULTS) - set(RUN_ONLY)
    if unknown:
        raise ValueError(f"unknown knob(s) {sorted(unknown)}; known: {sorted([*DEFAULTS, *RUN_ONLY, 'num_nodes'])}")
    knobs = {**DEFAULTS, **{k: v for k, v in params.items() if k not in RUN_ONLY}}
    if knobs["algo"] not in ALGOS:
        raise ValueError(f"algo must be one of {list(ALGOS)}, not {knobs['algo']!r}")
    for name, (low, high) in BOUNDS.items():
        if not low <= float(knobs[name]) <= high:
            raise ValueError(f"{name} = {knobs[name]} is outside [{low:g}, {high:g}]")
    return knobs


def _split_nodes(params: Mapping[str, Any], num_nodes: int) -> tuple[dict[str, Any], int]:
    rest = dict(params)
    nodes = int(rest.pop("num_nodes", num_nodes))
    if nodes < 1:
        raise ValueError(f"num_nodes must be >= 1, not {nodes}")
    return rest, nodes


def _bandwidth(spec: Algo, num_nodes: int, channels: int, load: float) -> float:
    """GB/s over all channels: saturating in channels, less per-channel contention and background load."""
    if num_nodes == 1:
        peak, sensitivity = spec.peak_local, 0.1 * spec.load_sens  # load is network traffic
    else:
        peak, sensitivity = spec.peak_net, spec.load_sens
        if spec is ALGOS["nvls"]:
            peak = spec.peak_net / (1 + 1.4 * (num_nodes - 1))
    saturation = (1 - math.exp(-channels / spec.sat)) / (1 + spec.contention * channels)
    return peak * saturation * (1 - sensitivity * load)


def _depth(algo: str, num_nodes: int) -> int:
    """Pipeline stages a chunk crosses: linear in nodes for ring, logarithmic for tree."""
    if algo == "ring":
        return num_nodes + 2
    if algo == "tree":
        return 2 * math.ceil(math.log2(num_nodes)) + 2
    if algo == "nvls":
        return 2 + num_nodes
    return 4


def _rng(params: Mapping[str, Any], num_nodes: int, stream: str) -> random.Random:
    """A generator seeded by a stable hash of (stream, num_nodes, every measured knob): not ``hash()``."""
    knobs = {k: _canonical(v) for k, v in _knobs(params).items()}
    text = json.dumps([stream, num_nodes, knobs], sort_keys=True)
    return random.Random(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))


def _canonical(value: Any) -> Any:
    """Integral floats as ints, so 512 and 512.0 (TOML range vs list) draw the same noise."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


if __name__ == "__main__":
    main()
