"""Stand-in for a Megatron-LM pretraining script (this machine has no GPU): takes Megatron's flags and prints
Megatron's log format (the arguments dump, one ``iteration N/ M`` line per step, the memory report, the closing
line) with step times from a simple model of the knobs; a micro-batch too big for a GPU's share of the model ends
in PyTorch's CUDA out-of-memory error and exit code 1, as the real script does."""

from __future__ import annotations

import argparse
import sys

GPU_MIB = 81559  # an 80 GB GPU, as torch reports it


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag, default in (("tensor-model-parallel-size", 1), ("pipeline-model-parallel-size", 1),
                          ("micro-batch-size", 1), ("global-batch-size", 16), ("seq-length", 4096),
                          ("train-iters", 12), ("num-layers", 32)):  # fmt: skip
        parser.add_argument(f"--{flag}", type=int, default=default)
    args, _ = parser.parse_known_args()
    tp, pp, mbs = args.tensor_model_parallel_size, args.pipeline_model_parallel_size, args.micro_batch_size
    print("------------------------ arguments ------------------------")
    for name in ("global_batch_size", "micro_batch_size", "seq_length", "tensor_model_parallel_size", "train_iters"):
        print(f"  {name} {'.' * (48 - len(name))} {getattr(args, name)}")
    print("-------------------- end of arguments ---------------------")
    peak_mib = 52000 / (tp * pp) + 9000 * mbs * args.seq_length / 4096 / tp
    step_ms = 1500.0 * (1 + 0.15 * (tp - 1)) * (1 + 0.3 / mbs) * (1 + 0.1 * (pp - 1))
    for it in range(1, args.train_iters + 1):
        if peak_mib > GPU_MIB and it == 2:
            print("[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                  "capacity of 79.11 GiB of which 1.23 GiB is free.", file=sys.stderr)  # fmt: skip
            return 1
        ms = step_ms * (2.5 if it == 1 else 1.0)
        print(f" [2026-01-16 07:32:{it:02d}] iteration {it:8d}/{args.train_iters:8d} | consumed samples: "
              f"{it * args.global_batch_size:12d} | elapsed time per iteration (ms): {ms:.1f} | throughput per GPU "
              f"(TFLOP/s/GPU): {740000 / ms:.1f} | learning rate: 1.000000E-04 | global batch size: "
              f"{args.global_batch_size:5d} | lm loss: {10.9 - 0.1 * it:E} | loss scale: 1.0 | grad norm: 2.500 |"
              " number of skipped iterations:   0 | number of nan iterations:   0 |")  # fmt: skip
        if it == 1:
            print(f"[Rank 0] (after 1 iterations) memory (MB) | allocated: {peak_mib / 3:.1f} | max allocated: "
                  f"{peak_mib * 0.95:.1f} | reserved: {peak_mib:.1f} | max reserved: {peak_mib:.1f}")  # fmt: skip
    print("[after training is done] datetime: 2026-01-16 07:33:00")
    return 0


if __name__ == "__main__":
    sys.exit(main())
