#!/usr/bin/env python3
"""Compares two `pipec run --metrics` files step by step (the GPU run against the CPU run of the same spec,
seed and data): every step's loss within REL relative (plus 1e-7), the same number of steps.

  python3 tests/gpu/compare_losses.py GPU.jsonl CPU.jsonl REL

Prints one line: steps, the largest relative difference and at which step, the last losses; exit 0 when
within the bound, 1 when not, 2 when a file is missing or empty.
"""
import json
import sys


def losses(path):
    try:
        with open(path) as f:
            return [json.loads(line)["loss"] for line in f if line.strip()]
    except (OSError, ValueError, KeyError):
        return []


def main():
    gpu, cpu, rel = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
    if not gpu or not cpu:
        print(f"no steps to compare (gpu {len(gpu)}, cpu {len(cpu)})")
        return 2
    worst, at = 0.0, 0
    for i, (g, c) in enumerate(zip(gpu, cpu)):
        d = abs(g - c) / (abs(c) + 1e-7)
        if d > worst or d != d:
            worst, at = d, i + 1
    same_length = len(gpu) == len(cpu)
    ok = same_length and worst <= rel
    print(f"{len(gpu)} steps{'' if same_length else f' (cpu {len(cpu)})'}, max rel diff {worst:.2e} at step {at} "
          f"(bound {rel:g}), last loss gpu {gpu[-1]:.6g} cpu {cpu[-1]:.6g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
