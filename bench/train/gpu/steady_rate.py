#!/usr/bin/env python3
"""The steady-state examples/s of a `pipec run --metrics` file: the examples trained between step SKIP and
the last step over the seconds between them (start-up, compilation and the first steps left out), and the
start-up: the seconds until step SKIP.

  python3 bench/train/gpu/steady_rate.py METRICS.jsonl [SKIP]

Prints `RATE <examples/s> <ms per step> <start-up s> <steps>`, or `RATE - - - 0` when too few steps.
"""
import json
import sys


def main():
    skip = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    try:
        rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
    except (OSError, ValueError):
        rows = []
    if len(rows) <= skip + 1:
        print("RATE - - - 0")
        return 1
    a, b = rows[skip], rows[-1]
    steps = b["step"] - a["step"]
    secs = b["seconds"] - a["seconds"]
    if steps <= 0 or secs <= 0:
        print("RATE - - - 0")
        return 1
    print(f"RATE {(b['examples'] - a['examples']) / secs:.1f} {1e3 * secs / steps:.4f} {a['seconds']:.2f} {steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
