#!/usr/bin/env python3
"""PyTorch's whole training step on the CPU, the peer of `pipec run SPEC --steps N`: the same model, loss,
optimizer (Adam, lr 1e-3, Keras' eps 1e-7) and threads, eager mode, batches of 512, fp32 or bf16 autocast.

  python bench/train/torch_train.py MODEL --feed preloaded|dataloader --threads 2 [--steps 30] [--warmup 3]
                                    [--precision fp32|bf16]

MODEL:
  chess  seed 002's net (conv 64x3 twice, dense 256, dense 1, tanh; mse): batch 512 of [8, 8, 24] boards
         and 10 flags.
--feed:
  preloaded   a few batches made up front (random values of the right shapes), cycled: the step alone.
  dataloader  torch DataLoader over the chess TFRecords with the seed's unpacking in Python
              (bench/python/chess_peers.py, or the folder CHESS_PEERS_DIR names: a 10,000-record shuffle buffer, numpy unpacking per record,
              default collate), --workers worker processes (default 1: the machine has 2 cores and
              --threads of them train).
--precision:
  fp32   (default) everything in f32.
  bf16   the forward pass and the loss under `torch.autocast("cpu", dtype=torch.bfloat16)`, PyTorch's CPU
         mixed precision (convolutions and matmuls on bf16 kernels, f32 weights and optimizer): the peer of
         `precision = mixed_bf16`.
Prints one line, then `RESULT <median ms/step> <fastest ms> <CPU ms/step> <examples/s> <input wait %>` for
bench/train/run.sh. CPU time counts this process and the DataLoader's workers. The Keras layouts are kept
(NHWC data permuted to NCHW on the fly, as a PyTorch user holding channels-last data would).
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BATCH = 512


class ChessNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(24, 64, 3, padding=1)
        self.conv2 = nn.Conv2d(64, 64, 3, padding=1)
        self.dense1 = nn.Linear(64 * 8 * 8 + 10, 256)
        self.dense2 = nn.Linear(256, 1)

    def forward(self, board, flags):
        x = F.relu(self.conv1(board.permute(0, 3, 1, 2)))
        x = F.relu(self.conv2(x))
        x = torch.cat([torch.flatten(x, 1), flags], dim=1)
        return torch.tanh(self.dense2(F.relu(self.dense1(x))))


def worker_cpu_seconds(pids):
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime
        except OSError:
            pass
    return total


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model", choices=["chess"])
    p.add_argument("--feed", choices=["preloaded", "dataloader"], default="preloaded")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = ChessNet()
    opt = torch.optim.Adam(net.parameters(), lr=1e-3, eps=1e-7)

    if a.feed == "preloaded":
        batches = [(torch.rand(BATCH, 8, 8, 24) * 2 - 1, torch.rand(BATCH, 10), torch.rand(BATCH) - 0.5) for _ in range(4)]

        def feed():
            while True:
                yield from batches
        source, pids = feed(), []
    else:
        sys.path.insert(0, os.environ.get("CHESS_PEERS_DIR", os.path.join(REPO, "bench", "python")))
        import glob
        import chess_peers
        files = sorted(glob.glob(os.path.join(REPO, "examples", "chess", "data", "chess-*.tfrecord")))
        loader = torch.utils.data.DataLoader(chess_peers.make_dataset(files, vectorized=False), batch_size=BATCH,
                                             num_workers=a.workers, persistent_workers=a.workers > 0,
                                             prefetch_factor=4 if a.workers else None)

        def feed():
            for b in loader:
                yield b["board"], b["flags"], b["score"]
        source = feed()
        pids = []

    def step(waited):
        t0 = time.perf_counter()
        board, flags, score = next(source)
        waited.append(time.perf_counter() - t0)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            loss = F.mse_loss(net(board, flags).squeeze(1).float(), score)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step([])
    if a.feed == "dataloader" and a.workers > 0:
        it = getattr(loader, "_iterator", None)
        pids = [w.pid for w in getattr(it, "_workers", [])]
    wall, waits = [], []
    c0, w0, start = time.process_time(), worker_cpu_seconds(pids), time.perf_counter()
    for _ in range(a.steps):
        t0 = time.perf_counter()
        step(waits)
        wall.append((time.perf_counter() - t0) * 1e3)
    elapsed = time.perf_counter() - start
    cpu = (time.process_time() - c0 + worker_cpu_seconds(pids) - w0) * 1e3 / a.steps
    med = statistics.median(wall)
    rate = BATCH * a.steps / elapsed
    wait_pct = 100 * sum(waits) / elapsed
    print(f"PyTorch {torch.__version__} eager {a.precision}, {a.feed}, {a.threads} thread(s): {med:.1f} ms per step (median of {a.steps}, "
          f"fastest {min(wall):.1f}), CPU {cpu:.1f} ms/step, {rate:.0f} examples/s, input wait {wait_pct:.1f}%")
    print(f"RESULT {med:.3f} {min(wall):.3f} {cpu:.3f} {rate:.1f} {wait_pct:.2f}")


if __name__ == "__main__":
    main()
