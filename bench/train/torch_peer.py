#!/usr/bin/env python3
"""PyTorch's CPU step on the chess net's layers, the peer of train_chess_step: the same shapes (batch 512,
[8, 8, 24] boards, 10 flags), the same threads, forward + backward of the layers alone (a loss gradient
fed to backward, no optimizer), preloaded tensors. Eager mode, in NCHW (PyTorch's default) or
channels_last. `--device cuda` times the same step on a GPU (synchronized after each step; `--bf16` runs it
under autocast to bf16), the reference a GPU training back end will be held to.

  python bench/train/torch_peer.py --threads 1 [--channels-last] [--steps 20] [--warmup 3] [--device cuda [--bf16]]

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
    p.add_argument("--device", default="cpu")
    p.add_argument("--bf16", action="store_true")
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
    dev = torch.device(a.device)
    net, board, flags, dy = net.to(dev), board.to(dev), flags.to(dev), dy.to(dev)

    def step():
        for prm in net.parameters():
            prm.grad = None
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=a.bf16):
            y = net(board, flags)
        y.float().backward(dy)
        if dev.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(a.warmup):
        step()
    wall, cpu = [], []
    for _ in range(a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        step()
        cpu.append((time.process_time() - c0) * 1e3)
        wall.append((time.perf_counter() - t0) * 1e3)
    med = statistics.median(wall)
    where = f"{torch.cuda.get_device_name(dev)}{' bf16 autocast' if a.bf16 else ''}" if dev.type == "cuda" else f"{a.threads} thread(s)"
    print(f"PyTorch {torch.__version__} eager{' channels_last' if a.channels_last else ''}, {where}: "
          f"{med:.1f} ms per step (median of {a.steps}, fastest {min(wall):.1f}, CPU {statistics.median(cpu):.1f} ms)")
    print(f"RESULT {med:.3f} {min(wall):.3f} {statistics.median(cpu):.3f}")


if __name__ == "__main__":
    main()
