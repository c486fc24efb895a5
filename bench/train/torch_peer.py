#!/usr/bin/env python3
"""PyTorch's CPU step on the chess net's layers, the peer of train_chess_step: the same shapes (batch 512,
[8, 8, 24] boards, 10 flags), the same threads, forward + backward of the layers alone (a loss gradient
fed to backward, no optimizer), preloaded tensors. Eager mode, in NCHW (PyTorch's default) or
channels_last.

  python bench/train/torch_peer.py --threads 1 [--channels-last] [--steps 20] [--warmup 3]

Prints one line, then `RESULT <median ms> <fastest ms> <median CPU ms>` for bench/train/run.sh.
"""
import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class ChessNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(24, 64, 3, padding=1)  # `same` for a 3x3 kernel, stride 1
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1)
        self.dense1 = nn.Linear(64 * 8 * 8 + 10, 256)
        self.dense2 = nn.Linear(256, 1)

    def forward(self, board, flags):
        x = F.relu(self.conv1(board))
        x = F.relu(self.conv2(x))
        x = torch.cat([torch.flatten(x, 1), flags], dim=1)
        return torch.tanh(self.dense2(F.relu(self.dense1(x))))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = ChessNet()
    board = torch.rand(512, 24, 8, 8) * 2 - 1
    flags = torch.rand(512, 10) * 2 - 1
    dy = torch.rand(512, 1) * 2 - 1  # the loss gradient at the output
    if a.channels_last:
        net = net.to(memory_format=torch.channels_last)
        board = board.contiguous(memory_format=torch.channels_last)

    def step():
        for prm in net.parameters():
            prm.grad = None
        net(board, flags).backward(dy)

    for _ in range(a.warmup):
        step()
    wall, cpu = [], []
    for _ in range(a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(wall)
    print(f"PyTorch {torch.__version__} eager{' channels_last' if a.channels_last else ''}, {a.threads} thread(s): "
          f"{med:.1f} ms per step (median of {a.steps}, fastest {min(wall):.1f}, CPU {statistics.median(cpu):.1f} ms)")
    print(f"RESULT {med:.3f} {min(wall):.3f} {statistics.median(cpu):.3f}")


if __name__ == "__main__":
    main()
