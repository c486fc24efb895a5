#!/usr/bin/env python3
"""PyTorch's eager CPU inference of the chess net, the peer of a model library's pipe_predict: the same
layers (bench/train/torch_peer.py's ChessNet), the same threads, torch.inference_mode(), boards and flags
already made (PyTorch is given the model's inputs; pipe_predict also unpacks them from the records).

  python bench/serve/torch_infer.py --threads 1 --batch 512 --iters 20 [--channels-last] [--precision fp32|bf16]

--precision bf16 runs the forward pass under torch.autocast("cpu", dtype=torch.bfloat16): the peer of a
library built from a `precision = mixed_bf16` spec.

Prints `RESULT <median ms> <fastest ms> <CPU ms per call>` for bench/serve/run.sh.
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))
from torch_peer import ChessNet  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batch", type=int, default=512)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = ChessNet().eval()
    board = torch.rand(a.batch, 24, 8, 8) * 2 - 1
    flags = torch.rand(a.batch, 10) * 2 - 1
    if a.channels_last:
        net = net.to(memory_format=torch.channels_last)
        board = board.contiguous(memory_format=torch.channels_last)
    times = []
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
        for _ in range(3):
            net(board, flags)
        cpu0 = time.process_time()
        for _ in range(a.iters):
            t0 = time.perf_counter()
            net(board, flags)
            times.append((time.perf_counter() - t0) * 1e3)
        cpu = (time.process_time() - cpu0) * 1e3 / a.iters
    print(f"RESULT {statistics.median(times):.4f} {min(times):.4f} {cpu:.4f}")


if __name__ == "__main__":
    main()
